// A batch's answers in request order, and its one commit: the way every
// server of aup keeps answers in order (stdin, the owner serving sockets,
// the owner behind I/O threads; runtime/server.h).
//
//   take(to, request)  runs it now, on the live state: an event is applied
//                      (its answer waits for the batch's fate), a query
//                      reads every request taken before it
//   add(to)            an answer made elsewhere (a framer's refusal), in
//                      its place
//   commit(deliver)    makes the batch's events durable (one log entry, one
//                      fdatasync: Durability), settles each applied event's
//                      answer by the batch's fate, then gives every answer
//                      to deliver(to, answer) in request order
//
// A query reads the live state, so it sees every request taken before it
// (its own connection's events among them), and its answer is held with
// the batch's and leaves only after the events it may have read are
// durable. Should the commit fail, those events are undone, and every
// query that may have read them runs again on the state they left before
// any answer leaves: no answer ever shows a change that did not become
// durable.
//
// With replicas to wait for (Durability::acked_save, --sync-replicas), a
// durable batch's answers wait, with every later batch's behind them, until
// the replicas have its save too, or its wait runs out (release): then its
// events are answered `unavailable`, perhaps written. A query with `after`
// (docs/protocol.md, "Saves") that the state does not reach yet is parked
// with everything its destination sends after it, and taken into a later
// batch when the state reaches it (unpark), or answered `unavailable` when
// its wait runs out. `to` must name the same destination (a connection)
// from batch to batch.
#pragma once

#include <cassert>
#include <chrono>
#include <deque>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/answer.h"
#include "runtime/durability.h"
#include "runtime/request.h"
#include "runtime/service.h"
#include "storage/latency.h"

namespace aup::runtime {

class Committer {
 public:
  // `service` and `durability` must outlive the Committer. max_events: a
  // batch is full at that many applied events (0: never). The service's
  // Metrics, if any, get the store's and state's figures now, and after
  // each batch with events.
  Committer(Service& service, Durability& durability, uint32_t max_events);
  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;

  // Runs request `r` for destination `to` (a connection's number). `text`
  // is what `r` was prepared from: a query that read events of this batch
  // keeps it, to run again should the commit fail. Returns the bytes its
  // answer holds so far (an event's: its result), so a transport can
  // bound what one connection's answers hold.
  size_t take(uint64_t to, const Request& r, const RequestText& text, double now);
  // A place in the batch for an answer made elsewhere, for the caller to
  // fill (it is delivered as it is).
  Answer& add(uint64_t to);

  // The answer of the request taken last, if it ran (null when it was
  // parked): whether it failed is known at once, an event's fate only at
  // commit(). Valid until the next take() or add().
  const Answer* last_answer() const { return last_; }

  uint32_t events() const { return events_; }
  bool full() const { return max_events_ != 0 && events_ >= max_events_; }
  bool empty() const { return used_ == 0; }
  // Batches committed with at least one event, and how long each commit
  // took (for --stats; whoever reads them may empty the histogram).
  uint64_t commits() const { return commits_; }
  storage::LatencyHistogram& commit_latency() { return commit_latency_; }

  // Makes the batch's events durable (when it has any), settles their
  // answers, and gives every answer of the batch to deliver(to, answer) in
  // request order, now or (waiting for replicas) from a later release().
  // Then the Durability's between-batches work runs. True when the state
  // changed: the batch had events and they are durable.
  template <class Deliver>
  bool commit(Deliver&& deliver) {
    uint32_t events = events_;
    bool changed = settle();
    // Changed means every event of the batch is durable: none is refused.
    assert(!changed || events > 0);
    if (changed) note_saves();
    if (waiting_.empty() && !(changed && durability_.awaits_acks())) {
      bool leading = !changed || durability_.may_answer();
      for (size_t i = 0; i < used_; ++i) {
        if (!leading && entries_[i].applied) no_longer_leading(entries_[i].answer);
        deliver(entries_[i].to, entries_[i].answer);
      }
    } else {
      if (used_ > 0) hold(changed);
      release(deliver);
    }
    used_ = 0;
    events_ = 0;
    settled_ = false;
    durability_.between_batches();
    if (events > 0) publish(events, changed);
    return changed;
  }
  // Answers of held batches whose replicas have confirmed them (or whose
  // wait ran out), to deliver(to, answer), in order.
  template <class Deliver>
  void release(Deliver&& deliver) {
    uint64_t acked = durability_.acked_save();
    auto now = std::chrono::steady_clock::now();
    while (!waiting_.empty()) {
      Held& h = waiting_.front();
      bool confirmed = !h.awaits || h.save <= acked;
      if (!confirmed && now < h.deadline) break;
      if (!confirmed) unconfirmed(h);
      bool leading = durability_.may_answer();
      for (auto& [to, a] : h.answers) {
        if (!leading && a.ok() && a.save) no_longer_leading(a);
        deliver(to, a);
      }
      waiting_.pop_front();
    }
  }
  // Parked requests whose save the state now holds (or whose wait ran
  // out) join the batch; call before commit(). Whether any did.
  bool unpark(double now);
  // Answers held for replicas, or requests parked: the caller comes back
  // within kWaitCheckMs to release() and unpark().
  bool waiting() const { return !waiting_.empty() || !parked_.empty(); }
  static constexpr int kWaitCheckMs = 20;

 private:
  struct Entry {
    uint64_t to = 0;
    Answer answer;
    bool applied = false;  // an applied event: its answer is settled by the batch's fate
    bool rerun = false;    // a query that read events of this batch: run again if the commit fails
    std::unique_ptr<HeldRequest> held;  // such a query, kept (made the first time, then reused)
    double now = 0;                     // and its `now`
  };
  // A durable batch's answers, held for its replicas' confirmation.
  struct Held {
    uint64_t save = 0;
    bool awaits = false;  // it wrote an entry the replicas must confirm
    std::chrono::steady_clock::time_point deadline;
    std::vector<std::pair<uint64_t, Answer>> answers;
  };
  // A request waiting for its destination's parked query before it (or
  // an answer made for it elsewhere: `made`, when `request` is null).
  struct Parked {
    std::unique_ptr<HeldRequest> request;
    Answer made;
    double now = 0;
    uint64_t after = 0;
    std::chrono::steady_clock::time_point deadline;
  };
  Entry& next_entry(uint64_t to);
  size_t run(Entry& e, const Request& r, const RequestText& text, double now);
  void park(uint64_t to, const Request& r, const RequestText& text, double now);
  void note_saves();
  void hold(bool changed);
  void unconfirmed(Held& h);
  static void no_longer_leading(Answer& a);
  bool settle();
  void rerun_queries();
  // After a batch with events: its commit and the figures of the store
  // and the state, for the stats request (one lock; nothing per event).
  void publish(uint32_t events, bool committed);

  Service& service_;
  Durability& durability_;
  uint32_t max_events_;
  // The batch is the first used_ entries; the others keep their strings'
  // capacity, so a batch allocates nothing for its answers once one as
  // large has passed.
  std::vector<Entry> entries_;
  size_t used_ = 0;
  uint32_t events_ = 0;
  // From settle() until commit() has delivered every answer: the batch's
  // fate is known, and it takes nothing more (a request taken then would
  // be answered with this batch's fate, or lost when used_ is reset).
  bool settled_ = false;
  const Answer* last_ = nullptr;  // last_answer()
  std::string why_;  // a failed commit's reason
  uint64_t commits_ = 0;
  uint64_t last_commit_ns_ = 0;  // the last settle()'s commit
  storage::LatencyHistogram commit_latency_;
  std::deque<Held> waiting_;
  std::unordered_map<uint64_t, std::deque<Parked>> parked_;  // by destination
};

}  // namespace aup::runtime

// The request pipeline every transport uses (stdin, the sockets of
// `--listen`, with or without I/O threads): four pieces, one way each.
//
//   bytes ──► LineFramer ──► Service::prepare/finish ──► Committer ──► Outbox ──► bytes
//            (lines, the     (decode the line once,     (one batch:   (answers of one
//             line limit)     apply or answer)           one commit,  connection, one
//                                                        its fate)    write a turn)
//
// Over HTTP (runtime/http.h) an HttpFramer stands where the LineFramer
// does: it makes each HTTP request the request line it stands for, and
// frames each answer as the response to it (runtime/framer.h picks one per
// connection); the rest is the same.
//
// A transport reads into a connection's LineFramer, hands each line to the
// Service (the request's JSON is parsed exactly once, on the thread that
// applies it), lets the Committer collect the answers of a batch in request
// order, commits the batch (Durability: one log entry, one fdatasync), and
// only then forms the answers of its applied events, knowing their fate: ok,
// or `unavailable` with the reason that says whether the entry was written.
// An answer is formed once and never rewritten. The transport then appends
// each answer to its connection's Outbox and writes what waits with one
// system call.
//
// A query is taken in its place like any other request: it reads the live
// state, and its answer leaves with the batch's, once what it read is
// durable (the Committer runs it again if that commit fails).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/durability.h"
#include "storage/latency.h"
#include "runtime/service.h"

namespace aup::runtime {

inline constexpr size_t kDefaultMaxLineBytes = size_t{16} << 20;

// The answer to a line over the limit (it is skipped up to its newline).
std::string too_long_answer(size_t max_line_bytes);

// Splits what a connection sends into request lines. One buffer, reused;
// it grows only while one line fills it, up to the line limit plus a
// read's worth (a longer line is answered bad_request and skipped up to
// its newline, without being held).
class LineFramer {
 public:
  explicit LineFramer(size_t max_line_bytes, size_t initial_bytes = 16 * 1024);

  // One read(2) into the free space: the bytes read, 0 at end of input
  // (which the framer then remembers), or -errno.
  ssize_t read_from(int fd);

  enum class Piece : uint8_t { None, Line, TooLong };
  // The next piece of what was read. A Line is a view into the buffer,
  // valid until the next read_from; it has no newline and no trailing
  // `\r`, and blank lines are skipped. After the end of input the last
  // line counts even without a newline.
  Piece next(std::string_view& line);

  // Whether next() would give a piece now.
  bool ready() const;
  bool eof() const { return eof_; }
  void set_eof() { eof_ = true; }
  // Bytes read but not yet taken by next().
  size_t buffered() const { return end_ - begin_; }

 private:
  void make_room();

  size_t max_line_bytes_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  bool skipping_ = false;  // inside a line over the limit
  bool eof_ = false;
};

// The answers of a batch, in request order, each for a destination the
// transport names (a connection number); settled together at commit().
//
// Queries are taken like anything else, at any point of a batch: a query
// reads the live state, so it sees every request taken before it (its own
// connection's events among them), and its answer is held with the batch's
// and leaves only after the events it may have read are durable. Should
// the commit fail, those events are undone, and every query that may have
// read them runs again on the state they left before any answer leaves: no
// answer ever shows a change that did not become durable.
class Committer {
 public:
  // `service` and `durability` must outlive the Committer. max_events: a
  // batch is full at that many applied events (0: never). The service's
  // Metrics, if any, get the store's and state's figures now, and after
  // each batch with events.
  Committer(Service& service, Durability& durability, uint32_t max_events);
  Committer(const Committer&) = delete;
  Committer& operator=(const Committer&) = delete;

  // Finishes the request service.prepare(request) took, for destination
  // `to`: an event is applied (answered at commit), anything else is
  // answered now but kept in its place. `request` is the line itself, kept
  // for a query that may have to run again (a transport that hands the
  // Committer only events may pass none). Returns the bytes the answer
  // holds so far (an event's: its result), so the transport can bound
  // what one connection's answers hold.
  size_t take(uint64_t to, double now, std::string_view request = {});
  // An answer the transport formed itself (a line over the limit).
  void add(uint64_t to, std::string answer);

  uint32_t events() const { return events_; }
  // Batches committed with at least one event, and how long each commit
  // took (for --stats; whoever reads them may empty the histogram).
  uint64_t commits() const { return commits_; }
  storage::LatencyHistogram& commit_latency() { return commit_latency_; }
  bool full() const { return max_events_ != 0 && events_ >= max_events_; }
  bool empty() const { return used_ == 0; }

  // Makes the batch's events durable (when it has any), forms their
  // answers, and gives every answer of the batch to deliver(to, answer) in
  // request order. Then the Durability's between-batches work runs. True
  // when the state changed: the batch had events and they are durable.
  template <class Deliver>
  bool commit(Deliver&& deliver) {
    uint32_t events = events_;
    bool changed = settle();
    for (size_t i = 0; i < used_; ++i) {
      // An event's text is its bare result until settle() forms its
      // answer: sent before, it would be a line that answers nothing.
      assert(entries_[i].formed);
      deliver(entries_[i].to, entries_[i].text);
    }
    used_ = 0;
    events_ = 0;
    settled_ = false;
    durability_.between_batches();
    if (events > 0) publish(events, changed);
    return changed;
  }

 private:
  struct Entry {
    uint64_t to = 0;
    std::string text;     // the answer; for an applied event, its result until settled
    std::string id;       // an applied event's raw id
    std::string request;  // a query that read events not yet durable: its line
    double now = 0;       // and its `now`
    bool applied = false;
    bool has_result = false;
    bool rerun = false;  // such a query: run again if the commit fails
    // `text` is the answer to send: at once for anything but an applied
    // event, whose answer settle() forms once its batch's fate is known.
    bool formed = false;
  };
  bool settle();
  void rerun_queries();
  // After a batch with events: its commit and the figures of the store
  // and the state, for the stats request (one lock; nothing per event).
  void publish(uint32_t events, bool committed);
  Entry& next_entry(uint64_t to);

  Service& service_;
  Durability& durability_;
  uint32_t max_events_;
  // The batch is the first used_ entries; the strings of the others keep
  // their capacity, so a batch allocates nothing for its answers once one
  // as large has passed.
  std::vector<Entry> entries_;
  size_t used_ = 0;
  std::string scratch_;  // an answer being formed (swapped with an entry's)
  uint32_t events_ = 0;
  // From settle() until commit() has delivered every answer: the batch's
  // fate is known, and it takes nothing more (a request taken then would
  // be answered with this batch's fate, or lost when used_ is reset).
  bool settled_ = false;
  std::string error_;
  uint64_t commits_ = 0;
  uint64_t last_commit_ns_ = 0;  // the last settle()'s commit
  storage::LatencyHistogram commit_latency_;
};

// What waits to be written to one connection. Answers are appended whole;
// send_to() writes as much as the socket takes with one system call.
class Outbox {
 public:
  Outbox() = default;
  ~Outbox() { count(-static_cast<int64_t>(waiting())); }
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  // Counts the bytes waiting here into `gauge` too (the stats request's
  // answer_bytes_waiting): a gauge of the one thread that uses this.
  void count_in(std::atomic<int64_t>* gauge) { gauge_ = gauge; }
  // One whole answer line. Every answer ends with its newline once it is
  // formed (reply.h); an event's before its commit is only its result.
  void append(std::string_view answer) {
    assert(!answer.empty() && answer.back() == '\n');
    buf_ += answer;
    count(static_cast<int64_t>(answer.size()));
  }
  // Bytes the transport frames (an HTTP response, runtime/framer.h),
  // written in place: `frame(std::string&)` appends them to the buffer.
  template <class Frame>
  void append_framed(Frame&& frame) {
    size_t before = buf_.size();
    frame(buf_);
    assert(buf_.size() >= before);
    count(static_cast<int64_t>(buf_.size() - before));
  }
  // Bytes appended and not yet written.
  size_t waiting() const { return buf_.size() - at_; }
  enum class Sent : uint8_t { All, Some, Gone };
  // One send(2) (MSG_NOSIGNAL). Gone: the peer cannot take answers any more.
  Sent send_to(int fd);
  void clear() {
    count(-static_cast<int64_t>(waiting()));
    buf_.clear();
    at_ = 0;
  }

 private:
  // A relaxed load and store: only this thread writes the gauge.
  void count(int64_t delta) {
    if (gauge_ && delta != 0) {
      gauge_->store(gauge_->load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
    }
  }
  std::string buf_;
  size_t at_ = 0;
  std::atomic<int64_t>* gauge_ = nullptr;
};

}  // namespace aup::runtime

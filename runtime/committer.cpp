#include "runtime/committer.h"

#include <fmt/format.h>

namespace aup::runtime {

Committer::Committer(Service& service, Durability& durability, uint32_t max_events)
    : service_(service), durability_(durability), max_events_(max_events) {
  if (Metrics* m = service_.metrics()) m->after_batch(0, 0, true, service_.state(), durability_);
}

Committer::Entry& Committer::next_entry(uint64_t to) {
  // Not while commit() delivers (a transport's deliver taking a request):
  // the entry would miss its batch's fate.
  assert(!settled_);
  if (used_ == entries_.size()) entries_.emplace_back();
  Entry& e = entries_[used_++];
  // Everything of an entry but its buffers' capacity is reset: a mark
  // left from an earlier batch (a query's rerun) would answer this one's
  // request with that batch's.
  e.to = to;
  e.answer.reset();
  e.applied = false;
  e.rerun = false;
  return e;
}

size_t Committer::take(uint64_t to, const Request& r, const RequestText& text, double now) {
  // Behind a parked query of its destination, or a query after a save the
  // state does not hold yet: parked.
  if ((!parked_.empty() && parked_.count(to)) ||
      (reads_state(r.kind) && r.after > durability_.applied_save())) {
    park(to, r, text, now);
    last_ = nullptr;
    return 0;
  }
  Entry& e = next_entry(to);
  last_ = &e.answer;
  return run(e, r, text, now);
}

size_t Committer::run(Entry& e, const Request& r, const RequestText& text, double now) {
  if (r.kind == RequestKind::Event) {
    if (const std::string* why = durability_.refusing()) {
      service_.refuse_event(r, durability_.refusing_code(), *why, e.answer);
      if (e.answer.code == Code::NotPrimary) e.answer.primary = durability_.primary();
      return e.answer.text.size();
    }
  }
  Outcome o = service_.run(r, now, e.answer);
  if (o == Outcome::EventApplied) {
    e.applied = true;
    ++events_;
  } else if (o == Outcome::Query && reads_state(r.kind) && events_ > 0) {
    // It read events whose commit may still fail.
    e.rerun = true;
    if (!e.held) e.held = std::make_unique<HeldRequest>();
    e.held->hold(text);
    e.now = now;
  }
  return e.answer.text.size();
}

Answer& Committer::add(uint64_t to) {
  // A refusal behind a parked request waits its turn too.
  if (!parked_.empty() && parked_.count(to)) {
    Parked& p = parked_[to].emplace_back();  // made already: it goes at its turn
    return p.made;  // a deque's elements stay put as it grows
  }
  return next_entry(to).answer;
}

void Committer::park(uint64_t to, const Request& r, const RequestText& text, double now) {
  Parked& p = parked_[to].emplace_back();
  p.request = std::make_unique<HeldRequest>(text);
  p.now = now;
  p.after = reads_state(r.kind) ? r.after : 0;
  p.deadline = std::chrono::steady_clock::now() + durability_.after_timeout();
}

bool Committer::unpark(double now) {
  bool took = false;
  auto clock = std::chrono::steady_clock::now();
  uint64_t applied = durability_.applied_save();
  for (auto it = parked_.begin(); it != parked_.end() && !full();) {
    std::deque<Parked>& q = it->second;
    while (!q.empty() && !full()) {
      Parked& p = q.front();
      if (p.after > applied && clock < p.deadline) break;
      Entry& e = next_entry(it->first);
      if (!p.request) {
        std::swap(e.answer, p.made);
      } else if (p.after > applied) {
        e.answer.id.assign(p.request->prepare(service_).id);
        e.answer.fail(Code::Unavailable,
                      fmt::format("this node has applied save {}, not yet save {} (`after`): it waited {} ms",
                                  applied, p.after, durability_.after_timeout().count()));
      } else {
        run(e, p.request->prepare(service_), p.request->text(), now);
      }
      q.pop_front();
      took = true;
    }
    it = q.empty() ? parked_.erase(it) : std::next(it);
  }
  return took;
}

// An event's answer says the save that holds it, on a store.
void Committer::note_saves() {
  if (!durability_.has_saves()) return;
  uint64_t save = durability_.applied_save();
  for (size_t i = 0; i < used_; ++i) {
    if (entries_[i].applied) entries_[i].answer.save = save;
  }
}

// The batch's answers held, behind the batches already held.
void Committer::hold(bool changed) {
  Held& h = waiting_.emplace_back();
  h.save = durability_.applied_save();
  h.awaits = changed && durability_.awaits_acks();
  h.deadline = std::chrono::steady_clock::now() + durability_.sync_timeout();
  h.answers.reserve(used_);
  for (size_t i = 0; i < used_; ++i) {
    h.answers.emplace_back(entries_[i].to, std::move(entries_[i].answer));
    entries_[i].answer = Answer();
  }
}

// This node may no longer lead (a cluster's primary whose lease may have
// run out): its answers must not say the events took effect.
void Committer::no_longer_leading(Answer& a) {
  a.fail(Code::Unavailable, "this node may no longer be the primary (its lease may have run out): the event is "
                            "durable here and may not survive the failover");
  a.fate = storage::Fate::PerhapsWritten;
}

// Replicas did not confirm the batch in time: its entry is durable here
// and may or may not survive a failover.
void Committer::unconfirmed(Held& h) {
  std::string why = fmt::format("replicas did not confirm save {} within {} ms; it is durable on this node and may "
                                "not survive a failover",
                                h.save, durability_.sync_timeout().count());
  for (auto& [to, a] : h.answers) {
    if (!a.save) continue;  // not an applied event
    a.fail(Code::Unavailable, why);
    a.fate = storage::Fate::PerhapsWritten;
  }
}

bool Committer::settle() {
  // One fate per batch: committed, or failed, once.
  assert(!settled_);
  settled_ = true;
  if (events_ == 0) return false;
  why_.clear();
  storage::Fate fate = storage::Fate::NotWritten;
  bool committed = durability_.commit_batch(fate, why_);
  last_commit_ns_ = durability_.last_commit_ns();  // timed once, by the store
  commit_latency_.add(last_commit_ns_);
  ++commits_;
  if (committed) return true;
  // Every event of the batch shares the fate of its one entry.
  for (size_t i = 0; i < used_; ++i) {
    Entry& e = entries_[i];
    if (!e.applied) continue;
    // An applied event's answer is ok until its fate is known: had it been
    // answered otherwise already, a lost write would go out as that.
    assert(e.answer.ok() && !e.answer.fate);
    e.answer.fail(Code::Unavailable, why_);
    e.answer.fate = fate;
  }
  rerun_queries();
  return false;
}

void Committer::publish(uint32_t events, bool committed) {
  if (Metrics* m = service_.metrics()) {
    m->after_batch(last_commit_ns_, events, committed, service_.state(), durability_);
  }
}

// The failed commit undid the events the batch's queries may have read:
// each runs again, in order, on the state that is left.
void Committer::rerun_queries() {
  for (size_t i = 0; i < used_; ++i) {
    Entry& e = entries_[i];
    if (!e.rerun) continue;
    const Request& r = e.held->prepare(service_);
    assert(reads_state(r.kind) && r.id == e.answer.id);  // the same request again
    service_.run(r, e.now, e.answer);
  }
}

}  // namespace aup::runtime

#include "runtime/committer.h"

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
  Entry& e = next_entry(to);
  if (r.kind == RequestKind::Event) {
    if (const std::string* why = durability_.refusing()) {
      service_.refuse_event(r, durability_.refusing_code(), *why, e.answer);
      return e.answer.text.size();
    }
  }
  Outcome o = service_.run(r, now, e.answer);
  if (o == Outcome::EventApplied) {
    e.applied = true;
    ++events_;
  } else if (o == Outcome::Query && r.kind == RequestKind::Query && events_ > 0) {
    // It read events whose commit may still fail.
    e.rerun = true;
    if (!e.held) e.held = std::make_unique<HeldRequest>();
    e.held->hold(text);
    e.now = now;
  }
  return e.answer.text.size();
}

Answer& Committer::add(uint64_t to) { return next_entry(to).answer; }

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
    assert(r.kind == RequestKind::Query && r.id == e.answer.id);  // the same request again
    service_.run(r, e.now, e.answer);
  }
}

}  // namespace aup::runtime

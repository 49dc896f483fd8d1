#include "runtime/server.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/committer.h"
#include "runtime/listener.h"
#include "runtime/loop.h"
#include "runtime/owner_tasks.h"
#include "runtime/shipper.h"
#include "runtime/server_stats.h"
#include "runtime/signals.h"
#include "runtime/snapshots.h"

namespace aup::runtime {

namespace {

// The --stats line of the thread that owns the Committer.
class StatsTicker {
 public:
  StatsTicker(const ServerShared& shared, const vm::State& state, const Durability& d)
      : shared_(shared), line_(state, d) {}
  // The services whose queries count (the owner's, and each I/O thread's).
  void count(const Service& s) { services_.push_back(&s); }
  void print(double seconds, Committer& batch, const Service& owner) {
    if (!shared_.o.stats) return;
    const ServiceCounters& sc = owner.counters();
    uint64_t queries = 0;
    for (const Service* s : services_) queries += s->counters().queries.get();
    StatsCounts totals{sc.events_ok.get() + sc.events_failed.get(), queries, batch.commits(),
                       shared_.connections.load(std::memory_order_relaxed)};
    line_.print(shared_.err, seconds, totals, batch.commit_latency());
  }

 private:
  const ServerShared& shared_;
  StatsLine line_;
  std::vector<const Service*> services_;
};

// ---- --io-threads 0: the owner serves the connections itself ----------------------------

// Every request runs here, in the owner's Committer, on the live state.
class OwnerDispatch : public Dispatch {
 public:
  OwnerDispatch(Service& service, Durability& d, ServerShared& shared, const vm::State& state)
      : tasks_(shared.o.tasks), service_(service), batch_(service, d, shared.o.max_batch), stats_(shared, state, d) {
    stats_.count(service);
  }
  void take(Loop& loop, Conn& c, const RequestText& text, double now) override {
    Request r = service_.prepare(text, doc_);
    if (loop.hand_over(c, r)) return;
    c.unanswered_bytes += batch_.take(c.id, r, text, now);
  }
  void refuse(Loop&, Conn& c, Answer& refusal) override { std::swap(batch_.add(c.id), refusal); }
  bool full() const override { return batch_.full(); }
  void end_batch(Loop& loop) override {
    batch_.unpark(now_ms());
    batch_.commit([&loop](uint64_t to, Answer& a) { loop.deliver(to, a); });
  }
  void tick(double seconds) override { stats_.print(seconds, batch_, service_); }
  // Entries a replica's follower handed over (the state moved on: parked
  // queries may run), acknowledgements from replicas (held answers may
  // go), or a wait running out. The batch is empty here: requests are
  // taken only in the turn's work.
  void woken(Loop& loop) override {
    if (tasks_) tasks_->run();
    if (batch_.waiting()) end_batch(loop);
  }
  bool waiting() const override { return batch_.waiting(); }

 private:
  OwnerTasks* tasks_;
  Service& service_;
  Committer batch_;
  StatsTicker stats_;
  JsonDoc doc_;  // the request being taken (reused)
};

// ---- --io-threads N: I/O threads, and the owner behind them ------------------------------

// A request an I/O thread hands to the owner: parsed there (once), run
// here; or an answer the I/O thread made that must wait its turn behind
// the connection's requests at the owner.
struct HandOff {
  uint64_t conn = 0;
  std::unique_ptr<HeldRequest> request;  // null: `answer` is the answer
  Answer answer;
  double now = 0;
};

class Owner;

// An I/O thread's: queries of a connection with nothing unanswered run
// here on the newest snapshot; the rest goes to the owner.
class HandOffDispatch : public Dispatch {
 public:
  HandOffDispatch(Owner& owner, uint32_t loop, Snapshots& snapshots, const vm::Module& m, vm::State& live,
                  const ServiceOptions& so)
      : owner_(owner), loop_(loop), snapshots_(snapshots), service_(m, live, so),
        next_(std::make_unique<HeldRequest>()) {}
  const Service& service() const { return service_; }
  void take(Loop& loop, Conn& c, const RequestText& text, double now) override;
  void refuse(Loop& loop, Conn& c, Answer& refusal) override;
  bool full() const override { return false; }  // the owner's batches are bounded, not these
  void end_batch(Loop& loop) override;
  void stopped() override;

 private:
  void run_here(Loop& loop, Conn& c, const Request& r, double now);

  Owner& owner_;
  uint32_t loop_;
  Snapshots& snapshots_;
  Service service_;  // bound to a snapshot while it runs a query
  std::unique_ptr<HeldRequest> next_;  // the request being taken: kept if it goes to the owner
  Answer answer_;                      // a query's answered here (reused)
  std::vector<HandOff> out_;           // for the owner at the end of the batch
  size_t events_out_ = 0;              // how many of them are events
};

// The owner thread behind I/O threads: takes what they hand over into its
// Committer, commits, publishes a snapshot, and posts the answers back.
class Owner {
 public:
  Owner(Service& service, Durability& d, vm::State& state, Snapshots& snapshots, ServerShared& shared)
      : service_(service), batch_(service, d, shared.o.max_batch), snapshots_(snapshots), shared_(shared),
        stats_(shared, state, d) {
    stats_.count(service);
  }
  void attach(std::vector<std::unique_ptr<Loop>>& loops, std::vector<std::unique_ptr<HandOffDispatch>>& io) {
    loops_ = &loops;
    running_ = static_cast<uint32_t>(loops.size());
    out_.resize(loops.size());
    for (auto& d : io) stats_.count(d->service());
  }
  // Any thread. `events`: how many of the items are events (for the
  // stats request's events_queued).
  void submit(uint32_t loop, std::vector<HandOff>& items, size_t events);
  void loop_stopped();
  // Under mu_, so a wake between the owner's look at its work and its
  // wait is not lost.
  void wake() {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_one();
  }
  // The owner thread: until every loop has stopped and nothing waits.
  void run();

 private:
  // The Committer's destinations: a loop's connection, as one number
  // that stays the same from batch to batch (answers may wait for
  // replicas, and requests for their `after` save, across batches).
  static uint64_t destination(uint32_t loop, uint64_t conn) {
    assert(conn < (uint64_t{1} << 48));  // a loop numbers its connections from 1, one at a time
    return uint64_t{loop} << 48 | conn;
  }
  bool next_round(std::deque<std::pair<uint32_t, std::vector<HandOff>>>& round);
  void take(uint32_t loop, HandOff& h);
  void commit();
  void count_queued();  // under mu_

  Service& service_;
  Committer batch_;
  Snapshots& snapshots_;
  ServerShared& shared_;
  StatsTicker stats_;
  std::vector<std::unique_ptr<Loop>>* loops_ = nullptr;
  std::vector<std::vector<Routed>> out_;      // answers per loop
  uint64_t unanswered_ = 0;                   // requests taken, not yet answered
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<uint32_t, std::vector<HandOff>>> queue_;  // under mu_
  size_t queued_ = 0;                                             // events in queue_, under mu_
  uint32_t running_ = 0;  // loops that may still submit, under mu_
};

void HandOffDispatch::take(Loop& loop, Conn& c, const RequestText& text, double now) {
  next_->hold(text);
  const Request& r = next_->prepare(service_);
  if (loop.hand_over(c, r)) return;
  // Nothing of this connection is unanswered but this request: a query
  // reads every earlier event of it in the newest snapshot. One `after` a
  // save goes to the owner, which knows the save its state holds.
  if (c.unanswered == 1 && r.kind != RequestKind::Event && r.after == 0) {
    run_here(loop, c, r, now);
    return;
  }
  if (r.kind == RequestKind::Event) ++events_out_;
  out_.push_back(HandOff{c.id, std::move(next_), Answer{}, now});
  next_ = std::make_unique<HeldRequest>();
}

void HandOffDispatch::run_here(Loop& loop, Conn& c, const Request& r, double now) {
  Snapshot* snap = snapshots_.lease();
  service_.rebind(*snap->view);
  service_.run(r, now, answer_);
  Snapshots::give_back(snap);
  loop.deliver(c.id, answer_);
}

void HandOffDispatch::refuse(Loop& loop, Conn& c, Answer& refusal) {
  if (c.unanswered == 1) {
    loop.deliver(c.id, refusal);
    return;
  }
  out_.push_back(HandOff{c.id, nullptr, std::move(refusal), 0});
}

void HandOffDispatch::end_batch(Loop&) {
  if (out_.empty()) return;
  owner_.submit(loop_, out_, events_out_);
  events_out_ = 0;
}

void HandOffDispatch::stopped() { owner_.loop_stopped(); }

void Owner::submit(uint32_t loop, std::vector<HandOff>& items, size_t events) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.emplace_back(loop, std::move(items));
    queued_ += events;
    count_queued();
  }
  items.clear();
  cv_.notify_one();
}

void Owner::loop_stopped() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    assert(running_ > 0);
    --running_;
  }
  cv_.notify_one();
}

void Owner::count_queued() {
  if (shared_.metrics) shared_.metrics->events_queued.store(queued_, std::memory_order_relaxed);
}

// Waits for what the loops handed over (or the second's --stats line);
// false when every loop has stopped and nothing is left.
bool Owner::next_round(std::deque<std::pair<uint32_t, std::vector<HandOff>>>& round) {
  std::unique_lock<std::mutex> lock(mu_);
  OwnerTasks* tasks = shared_.o.tasks;
  auto ready = [&] { return !queue_.empty() || running_ == 0 || (tasks && tasks->pending()); };
  if (batch_.waiting()) {
    cv_.wait_for(lock, std::chrono::milliseconds(Committer::kWaitCheckMs), ready);
  } else if (shared_.o.stats) {
    cv_.wait_for(lock, std::chrono::seconds(1), ready);
  } else {
    cv_.wait(lock, ready);
  }
  round.swap(queue_);
  queued_ = 0;
  count_queued();
  return !round.empty() || running_ > 0 || batch_.waiting();
}

void Owner::take(uint32_t loop, HandOff& h) {
  uint64_t to = destination(loop, h.conn);
  ++unanswered_;
  if (!h.request) {
    std::swap(batch_.add(to), h.answer);
  } else {
    // Prepared where it was read; the Service only resolves the module's
    // names, so any Service of the module prepares it alike.
    const Request& r = h.request->prepare(service_);
    batch_.take(to, r, h.request->text(), h.now);
  }
  if (batch_.full()) commit();
}

// Commits the batch, publishes the state its answers show before any of
// them leaves, and posts them to their loops.
void Owner::commit() {
  batch_.unpark(now_ms());
  bool changed = batch_.commit([this](uint64_t to, Answer& a) {
    // One answer for every request handed over: one too many would go to
    // a request that was never made (and one missing would leave its
    // connection waiting for ever: run() goes on while any waits).
    assert(unanswered_ > 0);
    --unanswered_;
    out_[to >> 48].push_back(Routed{to & ((uint64_t{1} << 48) - 1), std::move(a)});
  });
  if (changed) {
    snapshots_.publish();
    if (shared_.metrics) shared_.metrics->snapshot_published();
  }
  snapshots_.reclaim();
  for (size_t k = 0; k < out_.size(); ++k) {
    if (!out_[k].empty()) (*loops_)[k]->post(out_[k]);
  }
}

void Owner::run() {
  using Clock = std::chrono::steady_clock;
  auto interval_start = Clock::now();
  std::deque<std::pair<uint32_t, std::vector<HandOff>>> round;
  while (next_round(round)) {
    // Entries a replica's follower handed over: the state changed.
    if (shared_.o.tasks && shared_.o.tasks->run()) {
      snapshots_.publish();
      if (shared_.metrics) shared_.metrics->snapshot_published();
      snapshots_.reclaim();
    }
    for (auto& [loop, items] : round) {
      for (HandOff& h : items) take(loop, h);
    }
    round.clear();
    commit();
    auto now = Clock::now();
    if (now - interval_start >= std::chrono::seconds(1)) {
      stats_.print(std::chrono::duration<double>(now - interval_start).count(), batch_, service_);
      interval_start = now;
    }
  }
}

// ---- serving -------------------------------------------------------------------------

int serve_on_owner(Service& owner, vm::State& state, Durability& durability, ServerShared& shared,
                   const std::vector<Listener>& listeners, int signal_fd) {
  OwnerDispatch dispatch(owner, durability, shared, state);
  Loop loop(shared, dispatch);
  shared.stop = [&] {
    shared.stopping.store(true, std::memory_order_release);
    loop.wake();
  };
  std::string error;
  if (!loop.open(listeners, false, signal_fd, error)) {
    fmt::print(shared.err, "aup run: {}\n", error);
    return 2;
  }
  if (shared.o.tasks) shared.o.tasks->set_wake([&loop] { loop.wake(); });
  if (shared.shipper) shared.shipper->set_on_ack([&loop] { loop.wake(); });
  loop.run();
  if (shared.shipper) shared.shipper->set_on_ack(nullptr);
  if (shared.o.tasks) shared.o.tasks->set_wake(nullptr);
  return 0;
}

int serve_with_io_threads(Service& owner_service, vm::State& state, Durability& durability, ServerShared& shared,
                          const std::vector<Listener>& listeners, int signal_fd) {
  const ServerOptions& o = shared.o;
  Snapshots snapshots(state);  // made here: this thread is the owner
  if (shared.metrics) shared.metrics->snapshot_published();
  Owner owner(owner_service, durability, state, snapshots, shared);
  std::vector<std::unique_ptr<HandOffDispatch>> dispatches;
  std::vector<std::unique_ptr<Loop>> loops;
  for (uint32_t i = 0; i < o.io_threads; ++i) {
    dispatches.push_back(std::make_unique<HandOffDispatch>(owner, i, snapshots, state.module(), state, o.service));
    loops.push_back(std::make_unique<Loop>(shared, *dispatches.back()));
  }
  owner.attach(loops, dispatches);
  shared.stop = [&] {
    shared.stopping.store(true, std::memory_order_release);
    for (auto& l : loops) l->wake();
    owner.wake();
  };
  std::string error;
  for (uint32_t i = 0; i < o.io_threads; ++i) {
    // Every loop watches every listener; the signals go to the first.
    if (!loops[i]->open(listeners, true, i == 0 ? signal_fd : -1, error)) {
      fmt::print(shared.err, "aup run: {}\n", error);
      return 2;
    }
  }
  if (o.tasks) o.tasks->set_wake([&owner] { owner.wake(); });
  if (shared.shipper) shared.shipper->set_on_ack([&owner] { owner.wake(); });
  std::vector<std::thread> threads;
  for (auto& l : loops) threads.emplace_back([&l] { l->run(); });
  owner.run();
  if (shared.shipper) shared.shipper->set_on_ack(nullptr);
  if (o.tasks) o.tasks->set_wake(nullptr);
  for (std::thread& t : threads) t.join();
  loops.clear();  // closes the connections
  dispatches.clear();  // their Services, before the snapshots go
  return 0;
}

}  // namespace

uint32_t default_io_threads() {
  // Measured on a 2-CPU machine (bench/server, docs/benchmarks.md): the
  // owner serving the connections itself beat two I/O threads in every
  // row, pipelined and closed-loop, pinned or not. I/O threads pay off only
  // where they get cores of their own for reading and queries.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (::sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) <= 2) return 0;
  return 2;
}

int serve_socket(Service& owner, vm::State& state, Durability& durability, const ServerOptions& o,
                 BoundListeners& bound, std::FILE* err) {
  const std::vector<Listener>& listeners = bound.listeners();
  raise_descriptor_limit(o.max_connections, err);
  // SIGINT and SIGTERM go to a descriptor from before the address is
  // announced (a client may signal as soon as it reads it) and before any
  // thread starts (threads inherit the mask).
  SignalFd signals;
  for (const std::string& where : bound.announced()) fmt::print(err, "aup: listening on {}\n", where);
  std::fflush(err);
  int rc;
  {
    ServerShared shared(o, err);
    shared.shipper = o.shipper;
    rc = o.io_threads == 0 ? serve_on_owner(owner, state, durability, shared, listeners, signals.fd())
                           : serve_with_io_threads(owner, state, durability, shared, listeners, signals.fd());
  }
  durability.close();
  bound.close();
  return rc;
}

}  // namespace aup::runtime

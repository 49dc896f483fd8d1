#include "runtime/server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/framer.h"
#include "runtime/lines.h"
#include "runtime/listener.h"
#include "runtime/owner_server.h"
#include "runtime/pipeline.h"
#include "runtime/server_stats.h"
#include "runtime/snapshots.h"

namespace aup::runtime {

namespace {

// ---- what crosses threads ---------------------------------------------------------

struct EventRequest {
  uint32_t io = 0;       // the I/O thread that owns the connection
  uint64_t conn = 0;
  uint64_t slot = 0;     // the request's number on its connection
  std::unique_ptr<ParsedLine> request;  // parsed once, here on the I/O thread
  double now = 0;
};

struct Answer {
  uint64_t conn = 0;
  uint64_t slot = 0;
  std::string text;
};

// One request of a connection, in order; done when its answer is known.
struct Slot {
  std::string text;
  bool done = false;
};

struct Conn {
  Conn(int fd_in, uint64_t id_in, Protocol p, const ServerOptions& o)
      : fd(fd_in), id(id_in), in(p, o.max_line_bytes, std::chrono::seconds(o.http_timeout_seconds)) {}
  int fd;
  uint64_t id;
  Framer in;
  bool dead = false;      // writing failed: answers are dropped
  std::deque<Slot> slots;
  uint64_t first_slot = 0;  // number of slots.front()
  uint32_t events_in_flight = 0;
  // A query that must wait for this connection's events in flight.
  bool parked = false;
  std::unique_ptr<ParsedLine> parked_request;
  uint64_t parked_slot = 0;
  double parked_now = 0;
  Outbox out;
  size_t done_bytes = 0;  // answers in done slots, not yet moved to `out`
  uint32_t interest = 0;
  bool registered = true;  // in the thread's epoll
};

class Server;

class IoThread {
 public:
  IoThread(Server& server, uint32_t index);
  ~IoThread();
  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;

  bool ok() const { return epfd_ >= 0 && wakefd_ >= 0; }
  void start() { thread_ = std::thread([this] { run(); }); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  // Any thread: hands a connection, or answers, to this thread.
  void adopt(int fd, Protocol p);
  void deliver(std::vector<Answer> answers);
  void wake();
  // Thread 0 also accepts and takes the signals.
  void watch_listeners(const std::vector<Listener>& listeners, int signal_fd);
  // Whether some listener speaks HTTP (then each thread looks for requests
  // past their timeout once a second).
  void set_http(bool any) { any_http_ = any; }

 private:
  void run();
  void take_inbox();
  void accept_all(size_t listener);
  void on_signal();
  void add_conn(int fd, Protocol p);
  void expire_slow();
  void on_ready(Conn& c, uint32_t events);
  void read_some(Conn& c);
  bool pump(Conn& c);  // true when it took a line
  void handle_line(Conn& c, std::string_view line);
  void run_query(Conn& c, uint64_t slot, double now);
  Slot& slot(Conn& c, uint64_t number) { return c.slots[number - c.first_slot]; }
  // Answer bytes held for the client and not yet taken by it, whether
  // already in `out` or still in slots waiting for an earlier answer
  // (bounded by --max-output: past it nothing more is read).
  static size_t waiting_bytes(const Conn& c) { return c.out.waiting() + c.done_bytes; }
  void flush(Conn& c);
  void settle(Conn& c);  // after any change: run a parked query, read on, write, close
  void update_interest(Conn& c);
  bool finished(const Conn& c) const;
  void close_conn(Conn& c);
  double now() const;

  Server& server_;
  uint32_t index_;
  int epfd_ = -1;
  int wakefd_ = -1;
  int signal_fd_ = -1;
  std::vector<std::unique_ptr<Acceptor>> acceptors_;  // thread 0 only
  std::vector<Protocol> protocols_;                   // each listener's
  bool any_http_ = false;
  std::chrono::steady_clock::time_point next_expiry_;
  std::string answer_;  // an answer the framer formed (reused)
  std::thread thread_;
  std::mutex inbox_mu_;
  std::vector<std::pair<int, Protocol>> new_fds_;
  std::vector<Answer> answers_;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  uint64_t next_conn_ = 1;
  std::unique_ptr<Service> service_;  // queries and bad requests, on snapshots
  std::atomic<int64_t>* answer_gauge_ = nullptr;  // this thread's answer bytes waiting
  std::vector<EventRequest> to_owner_;
  uint32_t next_adopter_ = 0;  // thread 0: round robin for new connections
};

class Server {
 public:
  Server(Service& owner, vm::State& state, Durability& durability, const ServerOptions& o, std::FILE* err)
      : owner_(owner), state_(state), durability_(durability), o_(o), err_(err), snapshots_(state),
        committer_(owner, durability, 0) {}

  int run(const std::vector<Listener>& listeners, int signal_fd);

  // I/O threads.
  const ServerOptions& options() const { return o_; }
  Snapshots& snapshots() { return snapshots_; }
  vm::State& state() { return state_; }
  const vm::Module& module() const { return state_.module(); }
  IoThread& io(uint32_t i) { return *ios_[i]; }
  uint32_t io_count() const { return static_cast<uint32_t>(ios_.size()); }
  void submit(std::vector<EventRequest>& requests);
  void stop();
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  bool owner_done() const { return owner_done_.load(std::memory_order_acquire); }
  std::atomic<uint32_t> connections{0};
  std::atomic<uint64_t> queries{0};
  std::FILE* err() const { return err_; }

 private:
  void owner_loop();
  void apply(std::vector<EventRequest>& batch);
  // Under mu_: the events waiting for the owner, for the stats request.
  void count_queued() {
    if (Metrics* m = owner_.metrics()) m->events_queued.store(queue_.size(), std::memory_order_relaxed);
  }

  Service& owner_;
  vm::State& state_;
  Durability& durability_;
  ServerOptions o_;
  std::FILE* err_;
  Snapshots snapshots_;
  std::vector<std::unique_ptr<IoThread>> ios_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EventRequest> queue_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> owner_done_{false};
  Committer committer_;  // owner thread
};

// ---- the I/O threads --------------------------------------------------------------

IoThread::IoThread(Server& server, uint32_t index) : server_(server), index_(index) {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wakefd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (ok()) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = 0;  // 0: the wake descriptor; connections are numbered from 1
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev);
  }
  service_ = std::make_unique<Service>(server.module(), server.state(), server.options().service);
  if (Metrics* m = server.options().service.metrics) answer_gauge_ = m->answer_gauge();
}

IoThread::~IoThread() {
  for (auto& [id, c] : conns_) ::close(c->fd);
  if (epfd_ >= 0) ::close(epfd_);
  if (wakefd_ >= 0) ::close(wakefd_);
}

// Markers for the signal descriptor and the listeners (downwards from
// kFirstListenerTag) in epoll's data.
constexpr uint64_t kSignalTag = ~uint64_t{0};
constexpr uint64_t kFirstListenerTag = ~uint64_t{0} - 1;

void IoThread::watch_listeners(const std::vector<Listener>& listeners, int signal_fd) {
  for (size_t i = 0; i < listeners.size(); ++i) {
    acceptors_.push_back(std::make_unique<Acceptor>(listeners[i].fd, epfd_, kFirstListenerTag - i,
                                                    server_.options().max_connections, listeners[i].http));
    protocols_.push_back(listeners[i].http ? Protocol::Http : Protocol::Lines);
  }
  signal_fd_ = signal_fd;
  if (signal_fd >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kSignalTag;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, signal_fd, &ev);
  }
}

void IoThread::wake() {
  uint64_t one = 1;
  ssize_t n = ::write(wakefd_, &one, sizeof one);
  (void)n;  // a full counter still wakes the thread
}

void IoThread::adopt(int fd, Protocol p) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    new_fds_.emplace_back(fd, p);
  }
  wake();
}

void IoThread::deliver(std::vector<Answer> answers) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    if (answers_.empty()) {
      answers_ = std::move(answers);
    } else {
      for (Answer& a : answers) answers_.push_back(std::move(a));
    }
  }
  wake();
}

double IoThread::now() const {
  const auto& f = server_.options().fixed_now;
  return f ? *f : now_ms();
}

void IoThread::run() {
  constexpr int kEvents = 64;
  epoll_event events[kEvents];
  auto flush_deadline = std::chrono::steady_clock::time_point::max();
  for (;;) {
    bool draining = server_.owner_done();
    if (draining) {
      // Shutting down: every answer the owner gave is delivered; give the
      // clients a few seconds to take them, then go.
      if (flush_deadline == std::chrono::steady_clock::time_point::max()) {
        flush_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
      }
      take_inbox();  // the owner's last answers
      bool pending = false;
      for (auto& [id, c] : conns_) pending = pending || (!c->dead && c->out.waiting() > 0);
      if (!pending || std::chrono::steady_clock::now() > flush_deadline) break;
    }
    bool paused = false;
    for (auto& a : acceptors_) {
      a->resume(server_.stopping());
      paused = paused || a->paused();
    }
    // A paused listener is retried within 50 ms of its resume time; with
    // HTTP, requests past their timeout are looked for once a second.
    int timeout = server_.stopping() || paused ? 50 : any_http_ ? 1000 : -1;
    int n = ::epoll_wait(epfd_, events, kEvents, timeout);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      uint64_t tag = events[i].data.u64;
      if (tag == 0) {
        uint64_t count;
        ssize_t got = ::read(wakefd_, &count, sizeof count);
        (void)got;
        take_inbox();
      } else if (tag <= kFirstListenerTag && tag > kFirstListenerTag - acceptors_.size()) {
        accept_all(kFirstListenerTag - tag);
      } else if (tag == kSignalTag) {
        on_signal();
      } else {
        auto it = conns_.find(tag);
        if (it != conns_.end()) on_ready(*it->second, events[i].events);
      }
    }
    if (any_http_) expire_slow();
    if (!to_owner_.empty()) server_.submit(to_owner_);
    if (server_.stopping()) {
      // Stop reading everywhere; keep writing.
      for (auto it = conns_.begin(); it != conns_.end();) {
        Conn& c = *it->second;
        ++it;
        settle(c);
      }
    }
  }
}

void IoThread::on_signal() {
  signalfd_siginfo info;
  ssize_t got = ::read(signal_fd_, &info, sizeof info);
  (void)got;
  server_.stop();
}

void IoThread::take_inbox() {
  std::vector<std::pair<int, Protocol>> fds;
  std::vector<Answer> answers;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    fds.swap(new_fds_);
    answers.swap(answers_);
  }
  for (auto [fd, p] : fds) add_conn(fd, p);
  std::vector<uint64_t> touched;
  for (Answer& a : answers) {
    auto it = conns_.find(a.conn);
    if (it == conns_.end()) continue;  // gone: the event committed all the same
    Conn& c = *it->second;
    // The answer is for an event of this connection still waiting: a slot
    // it holds (flush() pops only done ones), answered once. Else it would
    // overwrite another request's answer, or a parked query would run
    // before the events it must read are durable.
    assert(a.slot >= c.first_slot && a.slot - c.first_slot < c.slots.size());
    assert(c.events_in_flight > 0);
    Slot& s = slot(c, a.slot);
    assert(!s.done);
    s.text = std::move(a.text);
    s.done = true;
    c.done_bytes += s.text.size();
    --c.events_in_flight;
    if (touched.empty() || touched.back() != a.conn) touched.push_back(a.conn);
  }
  for (uint64_t id : touched) {
    auto it = conns_.find(id);
    if (it != conns_.end()) settle(*it->second);
  }
}

void IoThread::accept_all(size_t listener) {
  for (;;) {
    int fd = acceptors_[listener]->accept_next(server_.connections.load(), server_.stopping());
    if (fd < 0) return;
    server_.connections.fetch_add(1);
    if (Metrics* m = server_.options().service.metrics) m->connections.fetch_add(1, std::memory_order_relaxed);
    uint32_t to = next_adopter_++ % server_.io_count();
    if (to == index_) {
      add_conn(fd, protocols_[listener]);
    } else {
      server_.io(to).adopt(fd, protocols_[listener]);
    }
  }
}

// HTTP requests that did not arrive whole in time are refused (408, close):
// looked for once a second, so one takes up to a second past its timeout.
void IoThread::expire_slow() {
  auto now = std::chrono::steady_clock::now();
  if (now < next_expiry_) return;
  next_expiry_ = now + std::chrono::seconds(1);
  for (auto it = conns_.begin(); it != conns_.end();) {
    Conn& c = *it->second;
    ++it;  // settle() may close `c`
    if (!c.dead && c.in.expire(now)) {
      pump(c);
      settle(c);
    }
  }
}

void IoThread::add_conn(int fd, Protocol p) {
  auto c = std::make_unique<Conn>(fd, next_conn_++, p, server_.options());
  Conn& ref = *c;
  ref.out.count_in(answer_gauge_);
  conns_.emplace(c->id, std::move(c));
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = ref.id;
  ref.interest = ev.events;
  ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
}

void IoThread::on_ready(Conn& c, uint32_t events) {
  if (events & EPOLLOUT) flush(c);
  if ((events & (EPOLLIN | EPOLLRDHUP)) && (c.interest & EPOLLIN)) {
    read_some(c);
    pump(c);
  } else if (events & (EPOLLHUP | EPOLLERR)) {
    // Hung up while not being read (epoll reports these whatever the
    // interest): nothing more can be written to it.
    c.in.set_eof();
    c.dead = true;
  }
  settle(c);
}

void IoThread::read_some(Conn& c) {
  ssize_t n = c.in.read_from(c.fd, c.out);
  if (n < 0 && n != -EAGAIN && n != -EINTR) {
    c.in.set_eof();
    c.dead = true;
  }
}

bool IoThread::pump(Conn& c) {
  const ServerOptions& o = server_.options();
  bool progress = false;
  // Each query answered here adds to what waits for the client; stopping
  // at --max-output bounds that (to the limit plus one answer) even when
  // many small requests ask for large answers.
  std::string_view line;
  while (!c.dead && !c.parked && !server_.stopping() && c.slots.size() < o.max_pending &&
         waiting_bytes(c) <= o.max_output_bytes) {
    Framer::Piece p = c.in.next(line, answer_);
    if (p == Framer::Piece::None) break;
    progress = true;
    if (p == Framer::Piece::Answer) {
      c.slots.push_back(Slot{std::move(answer_), true});
      c.done_bytes += c.slots.back().text.size();
    } else {
      handle_line(c, line);
    }
    // --max-pending bounds what one connection holds: each line takes one
    // slot, and none is taken at the limit.
    assert(c.slots.size() <= o.max_pending);
    assert(c.events_in_flight <= c.slots.size());
  }
  return progress;
}

void IoThread::handle_line(Conn& c, std::string_view line) {
  uint64_t number = c.first_slot + c.slots.size();
  c.slots.emplace_back();
  double t = now();
  // Parsed once, into a buffer of its own: an event's parse is handed to
  // the owner, which only turns its arguments into values.
  auto request = std::make_unique<ParsedLine>(line);
  bool query = service_->prepare(*request);
  if (service_->prepared_event()) {
    to_owner_.push_back(EventRequest{index_, c.id, number, std::move(request), t});
    ++c.events_in_flight;
  } else if (query && c.events_in_flight > 0) {
    // It must read this connection's earlier events: wait for their
    // commit, and read nothing after it meanwhile.
    c.parked = true;
    c.parked_request = std::move(request);
    c.parked_slot = number;
    c.parked_now = t;
  } else if (query) {
    run_query(c, number, t);
  } else {
    Slot& s = slot(c, number);
    service_->finish(t, s.text);  // a bad request: answered here
    s.done = true;
    c.done_bytes += s.text.size();
  }
}

void IoThread::run_query(Conn& c, uint64_t number, double t) {
  Snapshot* snap = server_.snapshots().lease();
  service_->rebind(*snap->view);
  Slot& s = slot(c, number);
  service_->finish(t, s.text);
  Snapshots::give_back(snap);
  s.done = true;
  c.done_bytes += s.text.size();
  server_.queries.fetch_add(1, std::memory_order_relaxed);
}

void IoThread::flush(Conn& c) {
  while (!c.slots.empty() && c.slots.front().done) {
    c.done_bytes -= c.slots.front().text.size();
    if (!c.dead) c.in.deliver(c.slots.front().text, c.out);
    c.slots.pop_front();
    ++c.first_slot;
  }
  if (!c.dead && c.out.send_to(c.fd) == Outbox::Sent::Gone) c.dead = true;  // the client is gone
  if (c.dead) c.out.clear();
}

void IoThread::settle(Conn& c) {
  for (;;) {
    flush(c);
    if (c.parked && c.events_in_flight == 0 && !c.dead) {
      c.parked = false;
      std::unique_ptr<ParsedLine> request = std::move(c.parked_request);
      service_->prepare(*request);
      run_query(c, c.parked_slot, c.parked_now);
      pump(c);  // what came after it
      continue;
    }
    if (c.in.ready() && pump(c)) continue;  // lines held back by the pending limit
    break;
  }
  if (finished(c)) {
    close_conn(c);
    return;
  }
  update_interest(c);
}

bool IoThread::finished(const Conn& c) const {
  if (c.events_in_flight > 0 || c.parked) return false;  // the owner still answers to it
  if (c.dead) return true;
  bool input_done = c.in.eof() || server_.stopping();
  return input_done && c.slots.empty() && c.out.waiting() == 0 &&
         (c.in.eof() ? !c.in.ready() : true);
}

void IoThread::update_interest(Conn& c) {
  const ServerOptions& o = server_.options();
  if (c.dead) {
    // Kept only until the owner's answers for it arrive: out of epoll, so
    // a hung-up socket does not report itself again and again.
    if (c.registered) ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
    c.registered = false;
    return;
  }
  uint32_t want = 0;
  bool backlog = c.slots.size() >= o.max_pending || waiting_bytes(c) > o.max_output_bytes;
  if (!c.in.eof() && !c.parked && !server_.stopping() && !backlog) want |= EPOLLIN | EPOLLRDHUP;
  if (c.out.waiting() > 0) want |= EPOLLOUT;
  set_interest(epfd_, c.fd, c.id, want, c.interest);
}

void IoThread::close_conn(Conn& c) {
  if (c.registered) ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  server_.connections.fetch_sub(1);
  if (Metrics* m = server_.options().service.metrics) m->connections.fetch_sub(1, std::memory_order_relaxed);
  conns_.erase(c.id);  // `c` is gone after this
}

// ---- the owner ----------------------------------------------------------------------

void Server::submit(std::vector<EventRequest>& requests) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!owner_done_.load()) {
      for (EventRequest& r : requests) queue_.push_back(std::move(r));
    }
    count_queued();
  }
  requests.clear();
  cv_.notify_one();
}

void Server::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_.store(true, std::memory_order_release);
  }
  cv_.notify_one();
  for (auto& io : ios_) io->wake();
}

void Server::apply(std::vector<EventRequest>& batch) {
  // The I/O threads parsed the lines; values for the VM are made here, on
  // the thread that owns the state.
  for (size_t i = 0; i < batch.size(); ++i) {
    owner_.prepare(*batch[i].request);
    committer_.take(i, batch[i].now);
  }
  std::vector<std::vector<Answer>> per(ios_.size());
  bool changed = committer_.commit([&](uint64_t i, std::string& answer) {
    per[batch[i].io].push_back(Answer{batch[i].conn, batch[i].slot, std::move(answer)});
  });
  // Published before any answer leaves: an answered event is visible to
  // every later query.
  if (changed) {
    snapshots_.publish();
    if (Metrics* m = owner_.metrics()) m->snapshot_published();
  }
  snapshots_.reclaim();
  for (size_t k = 0; k < per.size(); ++k) {
    if (!per[k].empty()) ios_[k]->deliver(std::move(per[k]));
  }
}

void Server::owner_loop() {
  using Clock = std::chrono::steady_clock;
  auto interval_start = Clock::now();
  StatsLine stats(state_, durability_);
  std::vector<EventRequest> batch;
  for (;;) {
    batch.clear();
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto ready = [&] { return !queue_.empty() || stopping_.load(); };
      if (o_.stats) {
        cv_.wait_until(lock, interval_start + std::chrono::seconds(1), ready);
      } else {
        cv_.wait(lock, ready);
      }
      size_t take = queue_.size();
      if (o_.max_batch && take > o_.max_batch) take = o_.max_batch;
      for (size_t i = 0; i < take; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      count_queued();
      if (batch.empty() && stopping_.load()) {
        owner_done_.store(true, std::memory_order_release);  // submit() takes nothing more
        break;
      }
    }
    if (!batch.empty()) apply(batch);
    if (o_.stats && Clock::now() - interval_start >= std::chrono::seconds(1)) {
      auto now = Clock::now();
      const ServiceCounters& sc = owner_.counters();
      StatsCounts totals{sc.events_ok.get() + sc.events_failed.get(), queries.load(), committer_.commits(),
                         connections.load()};
      stats.print(err_, std::chrono::duration<double>(now - interval_start).count(), totals,
                  committer_.commit_latency());
      interval_start = now;
    }
  }
  for (auto& io : ios_) io->wake();
}

int Server::run(const std::vector<Listener>& listeners, int signal_fd) {
  if (Metrics* m = owner_.metrics()) m->snapshot_published();  // the first, made with snapshots_
  for (uint32_t i = 0; i < o_.io_threads; ++i) {
    ios_.push_back(std::make_unique<IoThread>(*this, i));
    if (!ios_.back()->ok()) {
      fmt::print(err_, "aup run: cannot create an epoll or eventfd descriptor: {}\n", std::strerror(errno));
      return 2;
    }
  }
  ios_[0]->watch_listeners(listeners, signal_fd);
  bool any_http = std::any_of(listeners.begin(), listeners.end(), [](const Listener& l) { return l.http; });
  for (auto& io : ios_) io->set_http(any_http);
  for (auto& io : ios_) io->start();
  owner_loop();
  for (auto& io : ios_) io->join();
  ios_.clear();  // closes the connections
  durability_.close();
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

namespace {

// Listens on every address of --listen, announcing each; false (the
// reason on `err`, the ones opened closed) when one cannot be.
bool listen_all(const std::vector<std::string>& specs, std::vector<Listener>& out,
                std::vector<std::string>& unix_paths, std::vector<std::string>& announced, std::FILE* err) {
  for (const std::string& spec : specs) {
    ListenAddress a;
    std::string error, where;
    bool parsed = parse_listen_address(spec, a, error);
    int fd = parsed ? listen_on(a, where, error) : -1;
    if (fd < 0) {
      fmt::print(err, "aup run: {}{}\n", parsed ? "" : "--listen: ", error);
      for (const Listener& l : out) ::close(l.fd);
      for (const std::string& path : unix_paths) ::unlink(path.c_str());
      return false;
    }
    out.push_back(Listener{fd, a.http});
    if (a.unix_socket) unix_paths.push_back(a.path);
    announced.push_back(where);
  }
  return true;
}

}  // namespace

int serve_socket(Service& owner, vm::State& state, Durability& durability, const ServerOptions& o,
                 std::FILE* err) {
  std::vector<Listener> listeners;
  std::vector<std::string> unix_paths, announced;
  if (!listen_all(o.listen, listeners, unix_paths, announced, err)) return 2;
  raise_descriptor_limit(o.max_connections, err);
  // SIGINT and SIGTERM go to a descriptor from before the address is
  // announced (a client may signal as soon as it reads it) and before any
  // thread starts (threads inherit the mask).
  SignalFd signals;
  for (const std::string& where : announced) fmt::print(err, "aup: listening on {}\n", where);
  std::fflush(err);
  int rc;
  if (o.io_threads == 0) {
    rc = serve_on_owner(owner, state, durability, o, listeners, signals.fd(), err);
  } else {
    Server server(owner, state, durability, o, err);
    rc = server.run(listeners, signals.fd());
  }
  for (const Listener& l : listeners) ::close(l.fd);
  for (const std::string& path : unix_paths) ::unlink(path.c_str());
  return rc;
}

}  // namespace aup::runtime

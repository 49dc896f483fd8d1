#include "runtime/owner_server.h"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "runtime/framer.h"
#include "runtime/lines.h"
#include "runtime/listener.h"
#include "runtime/pipeline.h"
#include "runtime/server_stats.h"

namespace aup::runtime {

namespace {

// Tags in epoll's data besides connections, which are numbered from 1:
// the signal descriptor, then the listeners downwards.
constexpr uint64_t kSignalTag = ~uint64_t{0};
constexpr uint64_t kFirstListenerTag = ~uint64_t{0} - 1;

// How long answers may still be flushed after SIGINT/SIGTERM.
constexpr auto kDrainTime = std::chrono::seconds(3);

struct Conn {
  Conn(int fd_in, uint64_t id_in, Protocol p, const ServerOptions& o)
      : fd(fd_in), id(id_in), in(p, o.max_line_bytes, std::chrono::seconds(o.http_timeout_seconds)) {}
  int fd;
  uint64_t id;
  Framer in;
  Outbox out;
  uint32_t in_batch = 0;     // answers of this connection the Committer holds
  size_t batch_bytes = 0;    // and about how many bytes they hold
  bool dead = false;      // cannot be written: its answers are dropped
  bool queued = false;   // in work_: lines to take this turn
  bool touched = false;  // in touched_: to flush, close or re-arm after the turn
  uint32_t interest = 0;
};

class OwnerServer {
 public:
  OwnerServer(Service& owner, vm::State& state, Durability& durability, const ServerOptions& o, std::FILE* err)
      : service_(owner), state_(state), durability_(durability), o_(o), err_(err),
        batch_(owner, durability, o.max_batch), metrics_(owner.metrics()),
        answer_gauge_(metrics_ ? metrics_->answer_gauge() : nullptr) {}
  ~OwnerServer() {
    for (auto& [id, c] : conns_) ::close(c->fd);
    if (epfd_ >= 0) ::close(epfd_);
  }
  OwnerServer(const OwnerServer&) = delete;
  OwnerServer& operator=(const OwnerServer&) = delete;

  int run(const std::vector<Listener>& listeners, int signal_fd);

 private:
  void turn(const epoll_event* events, int n, int signal_fd);
  void settle_turn();
  void accept_all(size_t listener);
  void count_connections();
  void expire_slow(std::chrono::steady_clock::time_point now);
  int wait_ms(std::chrono::steady_clock::time_point stats_due) const;
  void on_ready(Conn& c, uint32_t events);
  void take_lines(Conn& c);
  void work();
  void commit();
  void deliver(uint64_t to, std::string& answer);
  void queue(Conn& c);
  void touch(Conn& c);
  void settle_touched();
  void flush(Conn& c);
  bool finished(const Conn& c) const;
  bool can_take(const Conn& c) const;
  void update_interest(Conn& c);
  void close_conn(Conn& c);
  bool drained() const;

  Service& service_;
  vm::State& state_;
  Durability& durability_;
  const ServerOptions& o_;
  std::FILE* err_;
  Committer batch_;
  Metrics* metrics_;                      // or null
  std::atomic<int64_t>* answer_gauge_;  // this thread's answer bytes waiting
  int epfd_ = -1;
  std::vector<std::unique_ptr<Acceptor>> acceptors_;
  std::vector<Protocol> protocols_;  // each listener's
  bool any_http_ = false;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  uint64_t next_id_ = 1;
  // Connections with lines to take, held at --max-pending until the
  // commit, and touched this turn. A connection is closed only in
  // settle_touched(), when the first two are empty.
  std::vector<Conn*> work_, held_, touched_;
  double turn_now_ = 0;  // an event's `now`: when its turn's read happened
  std::string answer_;   // an answer the framer formed (reused)
  bool stopping_ = false;
};

void OwnerServer::queue(Conn& c) {
  if (c.queued) return;
  c.queued = true;
  work_.push_back(&c);
}

void OwnerServer::touch(Conn& c) {
  if (c.touched) return;
  c.touched = true;
  touched_.push_back(&c);
}

void OwnerServer::accept_all(size_t listener) {
  for (;;) {
    int fd = acceptors_[listener]->accept_next(static_cast<uint32_t>(conns_.size()), stopping_);
    if (fd < 0) return;
    auto c = std::make_unique<Conn>(fd, next_id_++, protocols_[listener], o_);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = c->id;
    c->interest = ev.events;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
    c->out.count_in(answer_gauge_);
    conns_.emplace(c->id, std::move(c));
    count_connections();
  }
}

void OwnerServer::count_connections() {
  if (metrics_) metrics_->connections.store(static_cast<uint32_t>(conns_.size()), std::memory_order_relaxed);
}

void OwnerServer::on_ready(Conn& c, uint32_t events) {
  touch(c);
  if (events & EPOLLOUT) {
    flush(c);
    if (c.in.ready()) queue(c);  // lines held back while answers waited
  }
  if ((events & (EPOLLIN | EPOLLRDHUP)) && (c.interest & EPOLLIN)) {
    // One read per ready connection per turn; what is left is reported
    // again by the next epoll_wait.
    ssize_t n = c.in.read_from(c.fd, c.out);
    if (n < 0 && n != -EAGAIN && n != -EINTR) {
      c.dead = true;
      c.in.set_eof();
    }
    queue(c);
  } else if (events & (EPOLLHUP | EPOLLERR)) {
    // Hung up while not being read: nothing more can be written to it.
    c.dead = true;
    c.in.set_eof();
  }
}

// Takes the connection's complete lines into the batch until none is
// left, or a limit holds the connection back.
void OwnerServer::take_lines(Conn& c) {
  std::string_view request;
  // Answers still in the batch count toward --max-output, so a connection
  // asking for large answers holds at most about the limit plus one.
  while (!c.dead && !stopping_ && c.out.waiting() + c.batch_bytes <= o_.max_output_bytes) {
    if (c.in_batch >= o_.max_pending) {
      held_.push_back(&c);  // taken again once this batch is answered
      return;
    }
    Framer::Piece p = c.in.next(request, answer_);
    if (p == Framer::Piece::None) return;
    ++c.in_batch;
    // --max-pending bounds what one connection has in the batch.
    assert(c.in_batch <= o_.max_pending);
    if (p == Framer::Piece::Answer) {
      batch_.add(c.id, std::move(answer_));
      continue;
    }
    service_.prepare(request);
    c.batch_bytes += batch_.take(c.id, turn_now_, request);
    if (batch_.full()) commit();
  }
}

void OwnerServer::deliver(uint64_t to, std::string& answer) {
  auto it = conns_.find(to);
  assert(it != conns_.end());  // a connection with answers in the batch is never closed
  Conn& c = *it->second;
  // One answer for each line taken: past zero, the connection would count
  // as holding answers for ever (never closed, never read again).
  assert(c.in_batch > 0);
  if (--c.in_batch == 0) c.batch_bytes = 0;
  if (!c.dead) c.in.deliver(answer, c.out);
  touch(c);
}

// Commits the batch (its answers go out with the turn's); connections
// held at --max-pending go on.
void OwnerServer::commit() {
  batch_.commit([this](uint64_t to, std::string& answer) { deliver(to, answer); });
  for (Conn* c : held_) queue(*c);
  held_.clear();
}

// Every queued connection's lines, batch after batch, until none has a
// line it may take now.
void OwnerServer::work() {
  while (!work_.empty()) {
    // Taking lines may commit (a full batch) and queue connections again:
    // the loop reads work_'s size each round.
    for (size_t i = 0; i < work_.size(); ++i) {
      Conn& c = *work_[i];
      c.queued = false;
      take_lines(c);
    }
    work_.clear();
    commit();
  }
  assert(batch_.empty() && held_.empty());
}

void OwnerServer::flush(Conn& c) {
  if (!c.dead && c.out.send_to(c.fd) == Outbox::Sent::Gone) c.dead = true;
  if (c.dead) c.out.clear();
}

bool OwnerServer::finished(const Conn& c) const {
  if (c.in_batch > 0) return false;
  if (c.dead) return true;
  if (!c.in.eof() && !stopping_) return false;
  return c.out.waiting() == 0 && (stopping_ || !c.in.ready());
}

void OwnerServer::update_interest(Conn& c) {
  uint32_t want = 0;
  if (!c.dead) {
    bool backlog = c.in_batch >= o_.max_pending || c.out.waiting() > o_.max_output_bytes;
    if (!c.in.eof() && !stopping_ && !backlog) want |= EPOLLIN | EPOLLRDHUP;
    if (c.out.waiting() > 0) want |= EPOLLOUT;
  }
  // A dead connection stays registered with no interest until its last
  // answer is dropped, so a hung-up socket does not report itself again.
  set_interest(epfd_, c.fd, c.id, want, c.interest);
}

void OwnerServer::close_conn(Conn& c) {
  ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  conns_.erase(c.id);  // `c` is gone after this
  count_connections();
}

void OwnerServer::settle_touched() {
  for (Conn* c : touched_) {
    c->touched = false;
    flush(*c);  // every answer of the turn in one send
    if (finished(*c)) {
      close_conn(*c);
      continue;
    }
    // Lines held back while its answers waited may go on now that this
    // send took them: no event will say so if the client, waiting for
    // those lines' answers, sends nothing more.
    if (can_take(*c)) queue(*c);
    update_interest(*c);
  }
  touched_.clear();
}

// Whether the connection has a line it may take now: within --max-output
// and --max-pending, and the server still reading.
bool OwnerServer::can_take(const Conn& c) const {
  return !c.dead && !stopping_ && c.in.ready() && c.in_batch < o_.max_pending &&
         c.out.waiting() + c.batch_bytes <= o_.max_output_bytes;
}

bool OwnerServer::drained() const {
  for (const auto& [id, c] : conns_) {
    if (!c->dead && c->out.waiting() > 0) return false;
  }
  return true;
}

void OwnerServer::turn(const epoll_event* events, int n, int signal_fd) {
  turn_now_ = o_.fixed_now ? *o_.fixed_now : now_ms();
  for (int i = 0; i < n; ++i) {
    uint64_t tag = events[i].data.u64;
    if (tag <= kFirstListenerTag && tag > kFirstListenerTag - acceptors_.size()) {
      accept_all(kFirstListenerTag - tag);
    } else if (tag == kSignalTag) {
      signalfd_siginfo info;
      ssize_t got = ::read(signal_fd, &info, sizeof info);
      (void)got;
      stopping_ = true;
    } else if (auto it = conns_.find(tag); it != conns_.end()) {
      on_ready(*it->second, events[i].events);
    }
  }
  settle_turn();
}

// Takes what the turn queued, commits, and sends. Sending a turn's answers
// can make room for lines held back: they are taken in this turn too,
// before the server waits again.
void OwnerServer::settle_turn() {
  do {
    work();
    if (stopping_) {
      for (auto& [id, c] : conns_) touch(*c);  // stop reading everywhere; close what is done
    }
    settle_touched();
  } while (!work_.empty());
}

// How long the next epoll_wait may block: until something arrives,
// unless a paused listener is to be retried (within 50 ms) or the second's
// work is due (--stats, HTTP's request timeout).
int OwnerServer::wait_ms(std::chrono::steady_clock::time_point tick_due) const {
  bool paused = std::any_of(acceptors_.begin(), acceptors_.end(), [](const auto& a) { return a->paused(); });
  int timeout = stopping_ || paused ? 50 : -1;
  if (o_.stats || any_http_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(tick_due - std::chrono::steady_clock::now());
    int ms = static_cast<int>(std::max<int64_t>(0, left.count()) + 1);
    timeout = timeout < 0 ? ms : std::min(timeout, ms);
  }
  return timeout;
}

// HTTP requests that did not arrive whole in time are refused (408, close):
// checked once a second, so one takes up to a second past its timeout.
void OwnerServer::expire_slow(std::chrono::steady_clock::time_point now) {
  turn_now_ = o_.fixed_now ? *o_.fixed_now : now_ms();
  for (auto& [id, c] : conns_) {
    if (c->dead || !c->in.expire(now)) continue;
    queue(*c);
    touch(*c);
  }
  settle_turn();
}

int OwnerServer::run(const std::vector<Listener>& listeners, int signal_fd) {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) {
    fmt::print(err_, "aup run: cannot create an epoll descriptor: {}\n", std::strerror(errno));
    return 2;
  }
  for (size_t i = 0; i < listeners.size(); ++i) {
    acceptors_.push_back(std::make_unique<Acceptor>(listeners[i].fd, epfd_, kFirstListenerTag - i,
                                                    o_.max_connections, listeners[i].http));
    protocols_.push_back(listeners[i].http ? Protocol::Http : Protocol::Lines);
    any_http_ = any_http_ || listeners[i].http;
  }
  if (signal_fd >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kSignalTag;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, signal_fd, &ev);
  }
  using Clock = std::chrono::steady_clock;
  StatsLine stats(state_, durability_);
  auto interval_start = Clock::now();
  auto drain_until = Clock::time_point::max();
  constexpr int kEvents = 64;
  epoll_event events[kEvents];
  for (;;) {
    if (stopping_) {
      if (drain_until == Clock::time_point::max()) drain_until = Clock::now() + kDrainTime;
      if (drained() || Clock::now() > drain_until) break;
    }
    for (auto& a : acceptors_) a->resume(stopping_);
    int n = ::epoll_wait(epfd_, events, kEvents, wait_ms(interval_start + std::chrono::seconds(1)));
    if (n < 0 && errno != EINTR) {
      fmt::print(err_, "aup run: epoll_wait: {}\n", std::strerror(errno));
      break;
    }
    turn(events, std::max(n, 0), signal_fd);
    auto now = Clock::now();
    if (now - interval_start < std::chrono::seconds(1)) continue;
    if (any_http_) expire_slow(now);
    if (o_.stats) {
      const ServiceCounters& sc = service_.counters();
      StatsCounts totals{sc.events_ok.get() + sc.events_failed.get(), sc.queries.get(), batch_.commits(),
                         static_cast<uint32_t>(conns_.size())};
      stats.print(err_, std::chrono::duration<double>(now - interval_start).count(), totals,
                  batch_.commit_latency());
    }
    interval_start = now;
  }
  return 0;
}

}  // namespace

int serve_on_owner(Service& owner, vm::State& state, Durability& durability, const ServerOptions& o,
                   const std::vector<Listener>& listeners, int signal_fd, std::FILE* err) {
  int rc;
  {
    OwnerServer server(owner, state, durability, o, err);
    rc = server.run(listeners, signal_fd);
  }  // closes the connections
  durability.close();
  return rc;
}

}  // namespace aup::runtime

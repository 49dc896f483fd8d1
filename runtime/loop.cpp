#include "runtime/loop.h"

#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>

#include "runtime/committer.h"
#include "runtime/shipper.h"
#include "runtime/signals.h"

namespace aup::runtime {

namespace {

// Tags in epoll's data: the wake descriptor 0, connections from 1, the
// signal descriptor the highest, then the listeners downwards.
constexpr uint64_t kWakeTag = 0;
constexpr uint64_t kSignalTag = ~uint64_t{0};
constexpr uint64_t kFirstListenerTag = ~uint64_t{0} - 1;

// How long answers may still be flushed after SIGINT/SIGTERM.
constexpr auto kDrainTime = std::chrono::seconds(3);

void watch(int epfd, int fd, uint64_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = tag;
  ::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

}  // namespace

Loop::Loop(ServerShared& shared, Dispatch& dispatch)
    : shared_(shared), o_(shared.o), dispatch_(dispatch),
      answer_gauge_(shared.metrics ? shared.metrics->answer_gauge() : nullptr) {}

Loop::~Loop() {
  for (auto& [id, c] : conns_) ::close(c->fd);
  count_connections(-static_cast<int>(conns_.size()));
  acceptors_.clear();  // out of epfd_ before it closes
  if (wakefd_ >= 0) ::close(wakefd_);
  if (epfd_ >= 0) ::close(epfd_);
}

bool Loop::open(const std::vector<Listener>& listeners, bool shared_listeners, int signal_fd, std::string& error) {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wakefd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epfd_ < 0 || wakefd_ < 0) {
    error = fmt::format("cannot create an epoll or eventfd descriptor: {}", std::strerror(errno));
    return false;
  }
  watch(epfd_, wakefd_, kWakeTag);
  for (size_t i = 0; i < listeners.size(); ++i) {
    acceptors_.push_back(std::make_unique<Acceptor>(listeners[i].fd, epfd_, kFirstListenerTag - i,
                                                    o_.max_connections, listeners[i].http, shared_listeners));
    protocols_.push_back(listeners[i].http ? Protocol::Http : Protocol::Lines);
    any_http_ = any_http_ || listeners[i].http;
  }
  signal_fd_ = signal_fd;
  if (signal_fd >= 0) watch(epfd_, signal_fd, kSignalTag);
  return true;
}

void Loop::wake() {
  uint64_t one = 1;
  ssize_t n = ::write(wakefd_, &one, sizeof one);
  (void)n;  // a full counter still wakes the loop
}

void Loop::post(std::vector<Routed>& answers) {
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    if (posted_.empty()) {
      posted_.swap(answers);
    } else {
      for (Routed& r : answers) posted_.push_back(std::move(r));
    }
  }
  answers.clear();
  wake();
}

void Loop::take_posted() {
  uint64_t count;
  ssize_t got = ::read(wakefd_, &count, sizeof count);
  (void)got;
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    delivering_.swap(posted_);
  }
  for (Routed& r : delivering_) deliver(r.conn, r.answer);
  delivering_.clear();
  dispatch_.woken(*this);
}

// ---- connections ----------------------------------------------------------------------

void Loop::queue(Conn& c) {
  if (c.queued) return;
  c.queued = true;
  work_.push_back(&c);
}

void Loop::touch(Conn& c) {
  if (c.touched) return;
  c.touched = true;
  touched_.push_back(&c);
}

void Loop::count_connections(int delta) {
  if (delta == 0) return;
  uint32_t now = shared_.connections.fetch_add(static_cast<uint32_t>(delta)) + static_cast<uint32_t>(delta);
  if (shared_.metrics) shared_.metrics->connections.store(now, std::memory_order_relaxed);
}

void Loop::accept_all(size_t listener) {
  for (;;) {
    int fd = acceptors_[listener]->accept_next(shared_.connections.load(), stopping());
    if (fd < 0) return;
    auto c = std::make_unique<Conn>(fd, next_id_++, protocols_[listener], o_);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = c->id;
    c->interest = ev.events;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
    c->out.count_in(answer_gauge_);
    conns_.emplace(c->id, std::move(c));
    count_connections(1);
  }
}

void Loop::on_ready(Conn& c, uint32_t events) {
  touch(c);
  if (events & EPOLLOUT) {
    flush(c);
    if (c.in.ready()) queue(c);  // requests held back while answers waited
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

// Takes the connection's complete requests until none is left, or a limit
// holds the connection back.
void Loop::take_requests(Conn& c) {
  RequestText request;
  // Answers still to come count toward --max-output, so a connection
  // asking for large answers holds at most about the limit plus one.
  while (!c.dead && !stopping() && c.out.waiting() + c.unanswered_bytes <= o_.max_output_bytes) {
    if (c.unanswered >= o_.max_pending) {
      held_.push_back(&c);  // taken again once answers make room
      return;
    }
    Framer::Piece p = c.in.next(request, refusal_);
    if (p == Framer::Piece::None) return;
    ++c.unanswered;
    // --max-pending bounds what one connection has unanswered.
    assert(c.unanswered <= o_.max_pending);
    if (p == Framer::Piece::Answer) {
      dispatch_.refuse(*this, c, refusal_);
    } else {
      dispatch_.take(*this, c, request, turn_now_);
    }
    c.spoke = true;
    if (dispatch_.full()) dispatch_.end_batch(*this);
  }
}

void Loop::deliver(uint64_t conn, Answer& a) {
  auto it = conns_.find(conn);
  assert(it != conns_.end());  // a connection with answers to come is never closed
  Conn& c = *it->second;
  // One answer for each request taken: past zero, the connection would
  // count as waiting for answers for ever (never closed, never read again).
  assert(c.unanswered > 0);
  if (--c.unanswered == 0) c.unanswered_bytes = 0;
  if (!c.dead) c.in.deliver(a, c.out);
  touch(c);
}

bool Loop::hand_over(Conn& c, const Request& r) {
  if (r.kind != RequestKind::Replicate || !shared_.shipper || c.spoke || c.unanswered != 1 || c.in.ready() ||
      c.in.protocol() != Protocol::Lines) {
    return false;
  }
  ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
  --c.unanswered;
  c.dead = true;
  c.handed = true;
  c.out.clear();
  touch(c);  // forgotten at the end of the turn (settle_touched)
  shared_.shipper->adopt(c.fd, r);
  return true;
}

// Every queued connection's requests, batch after batch, until none has
// one it may take now.
void Loop::work() {
  while (!work_.empty()) {
    // Taking requests may end a batch (a full one) and queue connections
    // again: the loop reads work_'s size each round.
    for (size_t i = 0; i < work_.size(); ++i) {
      Conn& c = *work_[i];
      c.queued = false;
      take_requests(c);
    }
    work_.clear();
    dispatch_.end_batch(*this);
    // Connections held at --max-pending go on if their answers made room
    // (the owner's came with the batch; an I/O thread's come later).
    for (Conn* c : held_) {
      if (can_take(*c)) queue(*c);
    }
    held_.clear();
  }
}

void Loop::flush(Conn& c) {
  if (!c.dead && c.out.send_to(c.fd) == Outbox::Sent::Gone) c.dead = true;
  if (c.dead) c.out.clear();
}

bool Loop::finished(const Conn& c) const {
  if (c.unanswered > 0) return false;
  if (c.dead) return true;
  if (!c.in.eof() && !stopping()) return false;
  return c.out.waiting() == 0 && (stopping() || !c.in.ready());
}

void Loop::update_interest(Conn& c) {
  uint32_t want = 0;
  if (!c.dead) {
    bool backlog = c.unanswered >= o_.max_pending || c.out.waiting() > o_.max_output_bytes;
    if (!c.in.eof() && !stopping() && !backlog) want |= EPOLLIN | EPOLLRDHUP;
    if (c.out.waiting() > 0) want |= EPOLLOUT;
  }
  // A dead connection stays registered with no interest until its last
  // answer is dropped, so a hung-up socket does not report itself again.
  set_interest(epfd_, c.fd, c.id, want, c.interest);
}

void Loop::close_conn(Conn& c) {
  if (!c.handed) {
    ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
    ::close(c.fd);
  }
  conns_.erase(c.id);  // `c` is gone after this
  count_connections(-1);
}

void Loop::settle_touched() {
  for (Conn* c : touched_) {
    c->touched = false;
    flush(*c);  // every answer of the turn in one send
    if (finished(*c)) {
      close_conn(*c);
      continue;
    }
    // Requests held back while its answers waited may go on now that this
    // send took them: no event will say so if the client, waiting for
    // those requests' answers, sends nothing more.
    if (can_take(*c)) queue(*c);
    update_interest(*c);
  }
  touched_.clear();
}

// Whether the connection has a request it may take now: within
// --max-output and --max-pending, and the server still reading.
bool Loop::can_take(const Conn& c) const {
  return !c.dead && !stopping() && c.in.ready() && c.unanswered < o_.max_pending &&
         c.out.waiting() + c.unanswered_bytes <= o_.max_output_bytes;
}

bool Loop::drained() const {
  for (const auto& [id, c] : conns_) {
    if (c->unanswered > 0 || (!c->dead && c->out.waiting() > 0)) return false;
  }
  return true;
}

// ---- the turn -------------------------------------------------------------------------

void Loop::turn(const epoll_event* events, int n) {
  turn_now_ = o_.fixed_now ? *o_.fixed_now : now_ms();
  for (int i = 0; i < n; ++i) {
    uint64_t tag = events[i].data.u64;
    if (tag == kWakeTag) {
      take_posted();
    } else if (tag <= kFirstListenerTag && tag > kFirstListenerTag - acceptors_.size()) {
      accept_all(kFirstListenerTag - tag);
    } else if (tag == kSignalTag) {
      signalfd_siginfo info;
      ssize_t got = ::read(signal_fd_, &info, sizeof info);
      (void)got;
      shared_.stop();
    } else if (auto it = conns_.find(tag); it != conns_.end()) {
      on_ready(*it->second, events[i].events);
    }
  }
  // A wait checked (replicas that did not confirm in time, a save not
  // reached): answered at its time even when nothing else happens.
  if (n == 0 && dispatch_.waiting()) dispatch_.woken(*this);
  settle_turn();
}

// Takes what the turn queued, ends the batch, and sends. Sending a turn's
// answers can make room for requests held back: they are taken in this
// turn too, before the loop waits again.
void Loop::settle_turn() {
  do {
    work();
    if (stopping()) {
      if (!stopped_) {
        stopped_ = true;
        dispatch_.stopped();
      }
      for (auto& [id, c] : conns_) touch(*c);  // stop reading everywhere; close what is done
    }
    settle_touched();
  } while (!work_.empty());
}

// How long the next epoll_wait may block: until something arrives,
// unless a paused listener is to be retried (within 50 ms) or the second's
// work is due (--stats, HTTP's request timeout).
int Loop::wait_ms(std::chrono::steady_clock::time_point tick_due) const {
  bool paused = std::any_of(acceptors_.begin(), acceptors_.end(), [](const auto& a) { return a->paused(); });
  int timeout = stopping() || paused ? 50 : -1;
  if (dispatch_.waiting()) timeout = timeout < 0 ? Committer::kWaitCheckMs : std::min(timeout, Committer::kWaitCheckMs);
  if (o_.stats || any_http_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(tick_due - std::chrono::steady_clock::now());
    int ms = static_cast<int>(std::max<int64_t>(0, left.count()) + 1);
    timeout = timeout < 0 ? ms : std::min(timeout, ms);
  }
  return timeout;
}

// HTTP requests that did not arrive whole in time are refused (408, close):
// checked once a second, so one takes up to a second past its timeout.
void Loop::expire_slow(std::chrono::steady_clock::time_point now) {
  turn_now_ = o_.fixed_now ? *o_.fixed_now : now_ms();
  for (auto& [id, c] : conns_) {
    if (c->dead || !c->in.expire(now)) continue;
    queue(*c);
    touch(*c);
  }
  settle_turn();
}

void Loop::run() {
  using Clock = std::chrono::steady_clock;
  auto interval_start = Clock::now();
  auto drain_until = Clock::time_point::max();
  constexpr int kEvents = 64;
  epoll_event events[kEvents];
  for (;;) {
    if (stopping()) {
      if (drain_until == Clock::time_point::max()) {
        drain_until = Clock::now() + kDrainTime;
        settle_turn();  // a stop from another thread: stop reading here too
      }
      if (drained() || Clock::now() > drain_until) break;
    }
    for (auto& a : acceptors_) a->resume(stopping());
    int n = ::epoll_wait(epfd_, events, kEvents, wait_ms(interval_start + std::chrono::seconds(1)));
    if (n < 0 && errno != EINTR) {
      fmt::print(shared_.err, "aup run: epoll_wait: {}\n", std::strerror(errno));
      shared_.stop();
      break;
    }
    turn(events, std::max(n, 0));
    auto now = Clock::now();
    if (now - interval_start < std::chrono::seconds(1)) continue;
    if (any_http_) expire_slow(now);
    dispatch_.tick(std::chrono::duration<double>(now - interval_start).count());
    interval_start = now;
  }
  if (!stopped_) {
    stopped_ = true;
    dispatch_.stopped();
  }
}

}  // namespace aup::runtime

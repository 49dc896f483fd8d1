#include "server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

#include "json.h"
#include "latency.h"
#include "lines.h"
#include "snapshots.h"

namespace aup::runtime {

// ---- addresses ------------------------------------------------------------------

bool parse_listen_address(const std::string& spec, ListenAddress& out, std::string& error) {
  out = ListenAddress{};
  if (spec.rfind("unix:", 0) == 0) {
    out.unix_socket = true;
    out.path = spec.substr(5);
    if (out.path.empty()) {
      error = "unix: needs a path (unix:/run/app.sock)";
      return false;
    }
    if (out.path.size() >= sizeof(sockaddr_un{}.sun_path)) {
      error = fmt::format("the socket path is {} bytes; at most {} fit", out.path.size(),
                          sizeof(sockaddr_un{}.sun_path) - 1);
      return false;
    }
    return true;
  }
  std::string host = "127.0.0.1", port = spec;  // a bare port is loopback
  size_t colon = spec.rfind(':');
  if (colon != std::string::npos) {
    host = spec.substr(0, colon);
    port = spec.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (host.empty()) host = "127.0.0.1";
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(port) > 65535) {
    error = fmt::format("`{}` is not an address: use unix:PATH, HOST:PORT or :PORT (loopback)", spec);
    return false;
  }
  out.host = host;
  out.port = static_cast<uint16_t>(std::stoul(port));
  return true;
}

namespace {

std::string errno_text(int e) { return std::strerror(e); }

int listen_unix(const ListenAddress& a, std::string& where, std::string& error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, a.path.c_str(), a.path.size() + 1);
  struct stat st;
  if (::lstat(a.path.c_str(), &st) == 0) {
    // A socket file nobody listens on is left from an earlier run: replace
    // it. Anything else is not ours to remove.
    if (!S_ISSOCK(st.st_mode)) {
      error = fmt::format("{} exists and is not a socket", a.path);
      return -1;
    }
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (probe >= 0) ::close(probe);
    if (live) {
      error = fmt::format("{} is in use by another server", a.path);
      return -1;
    }
    ::unlink(a.path.c_str());
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = "socket: " + errno_text(errno);
    return -1;
  }
  // Mode 0600 from the start: no moment where others may connect.
  mode_t old = ::umask(0177);
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int bind_errno = errno;
  ::umask(old);
  if (rc != 0 || ::listen(fd, SOMAXCONN) != 0) {
    error = fmt::format("cannot listen on {}: {}", a.path, errno_text(rc != 0 ? bind_errno : errno));
    ::close(fd);
    return -1;
  }
  where = "unix:" + a.path;
  return fd;
}

int listen_tcp(const ListenAddress& a, std::string& where, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string port = std::to_string(a.port);
  if (int rc = ::getaddrinfo(a.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    error = fmt::format("cannot resolve {}: {}", a.host, gai_strerror(rc));
    return -1;
  }
  int fd = -1;
  int last = 0;
  for (addrinfo* p = res; p && fd < 0; p = p->ai_next) {
    fd = ::socket(p->ai_family, p->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, p->ai_protocol);
    if (fd < 0) {
      last = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, p->ai_addr, p->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      last = errno;
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd < 0) {
    error = fmt::format("cannot listen on {}:{}: {}", a.host, a.port, errno_text(last));
    return -1;
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  uint16_t actual = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                                : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  where = a.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", a.host, actual)
                                                 : fmt::format("{}:{}", a.host, actual);
  return fd;
}

// ---- what crosses threads ---------------------------------------------------------

struct EventRequest {
  uint32_t io = 0;       // the I/O thread that owns the connection
  uint64_t conn = 0;
  uint64_t slot = 0;     // the request's number on its connection
  std::string line;
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
  int fd = -1;
  uint64_t id = 0;
  std::vector<char> in;
  size_t begin = 0, end = 0;
  bool skipping = false;  // inside a line over the limit
  bool eof = false;       // the client sent all it will
  bool dead = false;      // writing failed: answers are dropped
  std::deque<Slot> slots;
  uint64_t first_slot = 0;  // number of slots.front()
  uint32_t events_in_flight = 0;
  // A query that must wait for this connection's events in flight.
  bool parked = false;
  std::string parked_line;
  uint64_t parked_slot = 0;
  double parked_now = 0;
  std::string out;
  size_t out_at = 0;
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
  void adopt(int fd);
  void deliver(std::vector<Answer> answers);
  void wake();
  // Thread 0 also accepts and takes the signals.
  void watch_listener(int fd, int signal_fd);

 private:
  void run();
  void take_inbox();
  void accept_all();
  void on_signal();
  void add_conn(int fd);
  void on_ready(Conn& c, uint32_t events);
  void read_some(Conn& c);
  bool pump(Conn& c);  // true when it took a line
  void handle_line(Conn& c, std::string_view line);
  void run_query(Conn& c, uint64_t slot, double now);
  Slot& slot(Conn& c, uint64_t number) { return c.slots[number - c.first_slot]; }
  // Answer bytes held for the client and not yet taken by it, whether
  // already in `out` or still in slots waiting for an earlier answer
  // (bounded by --max-output: past it nothing more is read).
  static size_t waiting_bytes(const Conn& c) { return c.out.size() - c.out_at + c.done_bytes; }
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
  int listen_fd_ = -1;
  int signal_fd_ = -1;
  bool listener_paused_ = false;  // out of descriptors: accept again after listener_resume_
  std::chrono::steady_clock::time_point listener_resume_;
  std::thread thread_;
  std::mutex inbox_mu_;
  std::vector<int> new_fds_;
  std::vector<Answer> answers_;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  uint64_t next_conn_ = 1;
  std::unique_ptr<Service> service_;  // queries and bad requests, on snapshots
  std::vector<EventRequest> to_owner_;
  uint32_t next_adopter_ = 0;  // thread 0: round robin for new connections
};

class Server {
 public:
  Server(Service& owner, vm::State& state, Durability& durability, const ServerOptions& o, std::FILE* err)
      : owner_(owner), state_(state), durability_(durability), o_(o), err_(err), snapshots_(state) {}

  int run(int listen_fd, const std::string& where);

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
  std::atomic<uint64_t> refused_connections{0};
  std::FILE* err() const { return err_; }

 private:
  void owner_loop();
  void apply(std::vector<EventRequest>& batch);
  void print_stats(double seconds);

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
  // Figures for --stats, per interval (owner thread).
  storage::LatencyHistogram commits_;
  uint64_t events_ = 0, batches_ = 0, last_queries_ = 0, last_log_bytes_ = 0;
  uint64_t last_copied_ = 0, last_recycled_ = 0;
  double last_cpu_ = 0;
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
}

IoThread::~IoThread() {
  for (auto& [id, c] : conns_) ::close(c->fd);
  if (epfd_ >= 0) ::close(epfd_);
  if (wakefd_ >= 0) ::close(wakefd_);
}

// Markers for the listener and the signal descriptor in epoll's data.
constexpr uint64_t kListenerTag = ~uint64_t{0};
constexpr uint64_t kSignalTag = ~uint64_t{0} - 1;

void IoThread::watch_listener(int fd, int signal_fd) {
  listen_fd_ = fd;
  signal_fd_ = signal_fd;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenerTag;
  ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
  if (signal_fd >= 0) {
    ev.data.u64 = kSignalTag;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, signal_fd, &ev);
  }
}

void IoThread::wake() {
  uint64_t one = 1;
  ssize_t n = ::write(wakefd_, &one, sizeof one);
  (void)n;  // a full counter still wakes the thread
}

void IoThread::adopt(int fd) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    new_fds_.push_back(fd);
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
      for (auto& [id, c] : conns_) pending = pending || (!c->dead && c->out_at < c->out.size());
      if (!pending || std::chrono::steady_clock::now() > flush_deadline) break;
    }
    if (listener_paused_ && !server_.stopping() && std::chrono::steady_clock::now() > listener_resume_) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kListenerTag;
      ::epoll_ctl(epfd_, EPOLL_CTL_ADD, listen_fd_, &ev);
      listener_paused_ = false;
    }
    int n = ::epoll_wait(epfd_, events, kEvents, server_.stopping() || listener_paused_ ? 50 : -1);
    // (a paused listener is retried within 50 ms of its resume time)
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      uint64_t tag = events[i].data.u64;
      if (tag == 0) {
        uint64_t count;
        ssize_t got = ::read(wakefd_, &count, sizeof count);
        (void)got;
        take_inbox();
      } else if (tag == kListenerTag) {
        accept_all();
      } else if (tag == kSignalTag) {
        on_signal();
      } else {
        auto it = conns_.find(tag);
        if (it != conns_.end()) on_ready(*it->second, events[i].events);
      }
    }
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
  std::vector<int> fds;
  std::vector<Answer> answers;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    fds.swap(new_fds_);
    answers.swap(answers_);
  }
  for (int fd : fds) add_conn(fd);
  std::vector<uint64_t> touched;
  for (Answer& a : answers) {
    auto it = conns_.find(a.conn);
    if (it == conns_.end()) continue;  // gone: the event committed all the same
    Conn& c = *it->second;
    Slot& s = slot(c, a.slot);
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

void IoThread::accept_all() {
  const ServerOptions& o = server_.options();
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: the waiting connection would make the
        // listener ready again at once. Stop watching it for a moment
        // (run() puts it back) instead of spinning.
        ::epoll_ctl(epfd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        listener_paused_ = true;
        listener_resume_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
      }
      return;  // EAGAIN, or a connection that went away meanwhile
    }
    if (server_.stopping()) {
      ::close(fd);
      continue;
    }
    if (server_.connections.load() >= o.max_connections) {
      std::string refusal = fmt::format(
          R"x({{"ok":false,"error":{{"code":"unavailable","message":"too many connections (the limit is {})"}}}})x",
          o.max_connections);
      refusal += '\n';
      ssize_t w = ::send(fd, refusal.data(), refusal.size(), MSG_NOSIGNAL);
      (void)w;
      ::close(fd);
      server_.refused_connections.fetch_add(1);
      continue;
    }
    server_.connections.fetch_add(1);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on unix sockets
    uint32_t to = next_adopter_++ % server_.io_count();
    if (to == index_) {
      add_conn(fd);
    } else {
      server_.io(to).adopt(fd);
    }
  }
}

void IoThread::add_conn(int fd) {
  auto c = std::make_unique<Conn>();
  c->fd = fd;
  c->id = next_conn_++;
  c->in.resize(16 * 1024);  // grows with long lines; idle connections stay small
  Conn& ref = *c;
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
    c.eof = true;
    c.dead = true;
  }
  settle(c);
}

void IoThread::read_some(Conn& c) {
  const ServerOptions& o = server_.options();
  if (c.in.size() - c.end < 4096) {
    // Room: move the unfinished line to the front; grow when it fills the
    // buffer, up to the line limit (past it the line is being skipped).
    std::memmove(c.in.data(), c.in.data() + c.begin, c.end - c.begin);
    c.end -= c.begin;
    c.begin = 0;
    if (c.in.size() - c.end < 4096) c.in.resize(std::min(c.in.size() * 2, o.max_line_bytes + 65536));
  }
  ssize_t n = ::read(c.fd, c.in.data() + c.end, c.in.size() - c.end);
  if (n > 0) {
    c.end += static_cast<size_t>(n);
  } else if (n == 0) {
    c.eof = true;
  } else if (errno != EAGAIN && errno != EINTR) {
    c.eof = true;
    c.dead = true;
  }
}

bool IoThread::pump(Conn& c) {
  const ServerOptions& o = server_.options();
  bool progress = false;
  // Each query answered here adds to what waits for the client; stopping
  // at --max-output bounds that (to the limit plus one answer) even when
  // many small requests ask for large answers.
  while (!c.dead && !c.parked && !server_.stopping() && c.slots.size() < o.max_pending &&
         waiting_bytes(c) <= o.max_output_bytes) {
    const char* base = c.in.data();
    const char* nl = static_cast<const char*>(std::memchr(base + c.begin, '\n', c.end - c.begin));
    if (!nl) {
      if (c.end - c.begin > o.max_line_bytes) {
        // An unfinished line already over the limit: answer now, drop its bytes.
        if (!c.skipping) {
          c.slots.push_back(Slot{too_long_answer(o.max_line_bytes), true});
          c.done_bytes += c.slots.back().text.size();
        }
        c.skipping = true;
        c.begin = c.end = 0;
        progress = true;
      } else if (c.eof && c.end > c.begin && !c.skipping) {
        // The last line, without a newline.
        std::string_view line(base + c.begin, c.end - c.begin);
        c.begin = c.end;
        handle_line(c, line);
        progress = true;
      }
      if (c.begin == c.end) c.begin = c.end = 0;
      return progress;
    }
    progress = true;
    size_t line_end = static_cast<size_t>(nl - base);
    std::string_view line(base + c.begin, line_end - c.begin);
    c.begin = line_end + 1;
    if (c.skipping) {
      c.skipping = false;
      continue;
    }
    if (line.size() > o.max_line_bytes) {
      c.slots.push_back(Slot{too_long_answer(o.max_line_bytes), true});
      c.done_bytes += c.slots.back().text.size();
      continue;
    }
    handle_line(c, line);
  }
  return progress;
}

void IoThread::handle_line(Conn& c, std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (blank(line)) return;
  uint64_t number = c.first_slot + c.slots.size();
  c.slots.emplace_back();
  double t = now();
  bool query = service_->prepare(line);
  if (service_->prepared_event()) {
    to_owner_.push_back(EventRequest{index_, c.id, number, std::string(line), t});
    ++c.events_in_flight;
  } else if (query && c.events_in_flight > 0) {
    // It must read this connection's earlier events: wait for their
    // commit, and read nothing after it meanwhile.
    c.parked = true;
    c.parked_line.assign(line);
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
    if (!c.dead) c.out += c.slots.front().text;
    c.slots.pop_front();
    ++c.first_slot;
  }
  while (!c.dead && c.out_at < c.out.size()) {
    ssize_t n = ::send(c.fd, c.out.data() + c.out_at, c.out.size() - c.out_at, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_at += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      break;
    } else {
      c.dead = true;  // the client is gone: its answers go nowhere
    }
  }
  if (c.dead || c.out_at == c.out.size()) {
    c.out.clear();
    c.out_at = 0;
  } else if (c.out_at > (size_t{1} << 20)) {
    c.out.erase(0, c.out_at);
    c.out_at = 0;
  }
}

void IoThread::settle(Conn& c) {
  for (;;) {
    flush(c);
    if (c.parked && c.events_in_flight == 0 && !c.dead) {
      c.parked = false;
      std::string line = std::move(c.parked_line);
      service_->prepare(line);
      run_query(c, c.parked_slot, c.parked_now);
      pump(c);  // what came after it
      continue;
    }
    if (c.begin < c.end && pump(c)) continue;  // lines held back by the pending limit
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
  bool input_done = c.eof || server_.stopping();
  return input_done && c.slots.empty() && c.out_at == c.out.size() &&
         (c.eof ? c.begin == c.end || c.skipping : true);
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
  if (!c.eof && !c.parked && !server_.stopping() && !backlog) want |= EPOLLIN | EPOLLRDHUP;
  if (c.out_at < c.out.size()) want |= EPOLLOUT;
  if (want == c.interest) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = c.id;
  ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
  c.interest = want;
}

void IoThread::close_conn(Conn& c) {
  if (c.registered) ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
  ::close(c.fd);
  server_.connections.fetch_sub(1);
  conns_.erase(c.id);  // `c` is gone after this
}

// ---- the owner ----------------------------------------------------------------------

void Server::submit(std::vector<EventRequest>& requests) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!owner_done_.load()) {
      for (EventRequest& r : requests) queue_.push_back(std::move(r));
    }
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

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void Server::apply(std::vector<EventRequest>& batch) {
  std::vector<Answer> answers(batch.size());
  std::vector<std::string> ids(batch.size());
  std::vector<bool> applied(batch.size(), false);
  bool any = false;
  for (size_t i = 0; i < batch.size(); ++i) {
    owner_.set_refusing(durability_.refusing());
    owner_.prepare(batch[i].line);
    Outcome out = owner_.finish(batch[i].now, answers[i].text);
    answers[i].conn = batch[i].conn;
    answers[i].slot = batch[i].slot;
    if (out == Outcome::EventApplied) {
      applied[i] = true;
      ids[i] = std::string(owner_.id());
      any = true;
    }
  }
  if (any) {
    auto started = std::chrono::steady_clock::now();
    std::string error;
    bool committed = durability_.commit_batch(error);
    commits_.add(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count()));
    if (committed) {
      snapshots_.publish();  // before any answer: an answered event is visible to every later query
    } else {
      std::string message;
      json_append_string(message, error);
      for (size_t i = 0; i < batch.size(); ++i) {
        if (!applied[i]) continue;
        std::string id = ids[i].empty() ? "" : fmt::format(R"("id":{},)", ids[i]);
        answers[i].text = fmt::format(R"({{{}"ok":false,"error":{{"code":"unavailable","message":{}}}}})", id, message);
        answers[i].text += '\n';
      }
    }
  }
  durability_.between_batches();
  snapshots_.reclaim();
  events_ += batch.size();
  ++batches_;
  // Back to the I/O threads, each its own answers.
  std::vector<std::vector<Answer>> per(ios_.size());
  for (size_t i = 0; i < batch.size(); ++i) per[batch[i].io].push_back(std::move(answers[i]));
  for (size_t k = 0; k < per.size(); ++k) {
    if (!per[k].empty()) ios_[k]->deliver(std::move(per[k]));
  }
}

void Server::print_stats(double seconds) {
  double cpu = thread_cpu_seconds();
  uint64_t q = queries.load();
  uint64_t log_bytes = durability_.log_bytes();
  uint64_t copied = 0, recycled = 0;
  for (uint32_t t = 0; t < state_.module().tables.size(); ++t) {
    copied += state_.table(t).nodes_copied();
    recycled += state_.table(t).nodes_recycled();
  }
  fmt::print(err_,
             "aup: stats {{\"events_per_s\":{:.0f},\"queries_per_s\":{:.0f},\"batch\":{:.1f},\"commit_p50_us\":{:.1f},"
             "\"commit_p99_us\":{:.1f},\"owner_busy\":{:.2f},\"nodes_copied\":{},\"nodes_recycled\":{},"
             "\"log_bytes\":{},\"connections\":{}}}\n",
             static_cast<double>(events_) / seconds, static_cast<double>(q - last_queries_) / seconds,
             batches_ ? static_cast<double>(events_) / static_cast<double>(batches_) : 0.0,
             static_cast<double>(commits_.percentile_ns(0.5)) / 1000.0,
             static_cast<double>(commits_.percentile_ns(0.99)) / 1000.0, (cpu - last_cpu_) / seconds,
             copied - last_copied_, recycled - last_recycled_, log_bytes - last_log_bytes_, connections.load());
  std::fflush(err_);
  events_ = batches_ = 0;
  commits_ = storage::LatencyHistogram{};
  last_queries_ = q;
  last_cpu_ = cpu;
  last_log_bytes_ = log_bytes;
  last_copied_ = copied;
  last_recycled_ = recycled;
}

void Server::owner_loop() {
  using Clock = std::chrono::steady_clock;
  auto interval_start = Clock::now();
  last_cpu_ = thread_cpu_seconds();
  last_log_bytes_ = durability_.log_bytes();
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
      if (batch.empty() && stopping_.load()) {
        owner_done_.store(true, std::memory_order_release);  // submit() takes nothing more
        break;
      }
    }
    if (!batch.empty()) apply(batch);
    if (o_.stats && Clock::now() - interval_start >= std::chrono::seconds(1)) {
      auto now = Clock::now();
      print_stats(std::chrono::duration<double>(now - interval_start).count());
      interval_start = now;
    }
  }
  for (auto& io : ios_) io->wake();
}

int Server::run(int listen_fd, const std::string& where) {
  SignalFd signals;  // before any thread starts: they inherit the mask
  uint32_t n = std::max<uint32_t>(1, o_.io_threads);
  for (uint32_t i = 0; i < n; ++i) {
    ios_.push_back(std::make_unique<IoThread>(*this, i));
    if (!ios_.back()->ok()) {
      fmt::print(err_, "aup run: cannot create an epoll or eventfd descriptor: {}\n", std::strerror(errno));
      ::close(listen_fd);
      return 2;
    }
  }
  ios_[0]->watch_listener(listen_fd, signals.fd());
  fmt::print(err_, "aup: listening on {}\n", where);
  std::fflush(err_);
  for (auto& io : ios_) io->start();
  owner_loop();
  for (auto& io : ios_) io->join();
  ::close(listen_fd);
  ios_.clear();  // closes the connections
  durability_.close();
  return 0;
}

}  // namespace

int serve_socket(Service& owner, vm::State& state, Durability& durability, const ServerOptions& o,
                 std::FILE* err) {
  ListenAddress a;
  std::string error, where;
  if (!parse_listen_address(o.listen, a, error)) {
    fmt::print(err, "aup run: --listen: {}\n", error);
    return 2;
  }
  int fd = a.unix_socket ? listen_unix(a, where, error) : listen_tcp(a, where, error);
  if (fd < 0) {
    fmt::print(err, "aup run: {}\n", error);
    return 2;
  }
  // Room for the connections: the soft descriptor limit is often 1024,
  // less than --max-connections plus the store's files.
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < o.max_connections + 64u) {
    fmt::print(err, "aup: warning: {} file descriptors allowed; fewer than --max-connections {} can be served\n",
               nofile.rlim_cur, o.max_connections);
  }
  int rc;
  {
    Server server(owner, state, durability, o, err);
    rc = server.run(fd, where);
  }
  if (a.unix_socket) ::unlink(a.path.c_str());
  return rc;
}

}  // namespace aup::runtime

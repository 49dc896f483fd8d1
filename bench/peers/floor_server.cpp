// peers_floor: the least a durable transfer server of aup's shape can cost
// on this machine, as a row beside the real systems. It does what every
// one of them must do and nothing else: one epoll on one thread, one read
// per ready connection a turn, each transfer applied to an array of
// balances and noted as 24 bytes, one pwrite and one fdatasync for all the
// transfers of the turn (group commit), then one send per connection. No
// parsing beyond finding three numbers, no journal, no checkpoints, no
// snapshots. Whatever it spends per transfer (CPU, device bytes) no server
// answering each transfer over its own socket write can spend less of, so
// a target below it is a target on the machine, not on the server.
//
// It answers the bank's requests the benchmark sends, in the same line
// protocol as aup: {"event":"transfer","args":{"from":F,"to":T,"amount":A}},
// {"query":"transfers_made"} and {"query":"total"} (the totals check).
//
// Usage: peers_floor SOCKET LOG_FILE ACCOUNTS DEPOSIT
// SIGTERM or SIGINT: the turn in progress ends, exit 0.
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

constexpr uint64_t kListenTag = ~uint64_t{0};
constexpr uint64_t kSignalTag = ~uint64_t{0} - 1;
// The log file is allocated once and written round and round: its blocks
// are allocated, as aup's preallocated segments are.
constexpr off_t kLogBytes = off_t{64} << 20;

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "peers_floor: %s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

struct Conn {
  int fd = -1;
  std::string in, out;
  bool closed = false;
};

// The number after `"key":` in a request line; false when there is none.
bool number_after(std::string_view line, std::string_view key, uint64_t& out) {
  size_t at = line.find(key);
  if (at == std::string_view::npos) return false;
  const char* p = line.data() + at + key.size();
  char* end = nullptr;
  out = std::strtoull(p, &end, 10);
  return end != p;
}

class Floor {
 public:
  Floor(int log_fd, uint64_t accounts, uint64_t deposit)
      : log_fd_(log_fd), balances_(accounts + 1, deposit), accounts_(accounts) {}

  void answer(Conn& c, std::string_view line) {
    uint64_t from = 0, to = 0, amount = 0;
    if (line.find("\"transfer\"") != std::string_view::npos && number_after(line, "\"from\":", from) &&
        number_after(line, "\"to\":", to) && number_after(line, "\"amount\":", amount)) {
      transfer(c, from, to, amount);
    } else if (line.find("\"transfers_made\"") != std::string_view::npos) {
      c.out += "{\"ok\":true,\"result\":" + std::to_string(transfers_) + "}\n";
    } else if (line.find("\"total\"") != std::string_view::npos) {
      uint64_t sum = 0;
      for (uint64_t a = 1; a <= accounts_; ++a) sum += balances_[a];
      c.out += "{\"ok\":true,\"result\":{\"total\":" + std::to_string(sum) + ",\"accounts\":" +
               std::to_string(accounts_) + "}}\n";
    } else {
      c.out += "{\"ok\":false,\"error\":{\"code\":\"bad_request\",\"message\":\"not a request peers_floor knows\"}}\n";
    }
  }

  // Every transfer of the turn, durable: one write, one fdatasync.
  void commit() {
    if (pending_.empty()) return;
    if (at_ + static_cast<off_t>(pending_.size()) > kLogBytes) at_ = 0;
    if (::pwrite(log_fd_, pending_.data(), pending_.size(), at_) != static_cast<ssize_t>(pending_.size())) {
      die("pwrite");
    }
    if (::fdatasync(log_fd_) != 0) die("fdatasync");
    at_ += static_cast<off_t>(pending_.size());
    pending_.clear();
  }

 private:
  void transfer(Conn& c, uint64_t from, uint64_t to, uint64_t amount) {
    if (from == 0 || to == 0 || from > accounts_ || to > accounts_ || from == to || balances_[from] < amount) {
      c.out += "{\"ok\":false,\"error\":{\"code\":\"refused\",\"message\":\"no such transfer\"}}\n";
      return;
    }
    balances_[from] -= amount;
    balances_[to] += amount;
    ++transfers_;
    uint64_t record[3] = {from, to, amount};
    pending_.append(reinterpret_cast<const char*>(record), sizeof record);
    c.out += "{\"ok\":true}\n";
  }

  int log_fd_;
  std::vector<uint64_t> balances_;
  uint64_t accounts_;
  uint64_t transfers_ = 0;
  std::string pending_;
  off_t at_ = 0;
};

int listen_unix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    std::fprintf(stderr, "peers_floor: socket path too long: %s\n", path.c_str());
    std::exit(2);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) die("bind");
  if (::listen(fd, 1024) != 0) die("listen");
  return fd;
}

void add(int epfd, int fd, uint64_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = tag;
  if (::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl");
}

// Reads once; hands each complete line to the floor.
void take(Floor& floor, Conn& c) {
  char buf[64 * 1024];
  ssize_t n = ::read(c.fd, buf, sizeof buf);
  if (n <= 0) {
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) c.closed = true;
    return;
  }
  c.in.append(buf, static_cast<size_t>(n));
  size_t begin = 0;
  for (size_t nl; (nl = c.in.find('\n', begin)) != std::string::npos; begin = nl + 1) {
    floor.answer(c, std::string_view(c.in).substr(begin, nl - begin));
  }
  c.in.erase(0, begin);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: peers_floor SOCKET LOG_FILE ACCOUNTS DEPOSIT\n");
    return 2;
  }
  int log_fd = ::open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (log_fd < 0) die("open the log file");
  if (::posix_fallocate(log_fd, 0, kLogBytes) != 0) die("fallocate");
  if (::fsync(log_fd) != 0) die("fsync");
  Floor floor(log_fd, std::strtoull(argv[3], nullptr, 10), std::strtoull(argv[4], nullptr, 10));

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sigfd = ::signalfd(-1, &mask, SFD_CLOEXEC);
  int epfd = ::epoll_create1(EPOLL_CLOEXEC);
  if (sigfd < 0 || epfd < 0) die("signalfd/epoll");
  int lfd = listen_unix(argv[1]);
  add(epfd, lfd, kListenTag);
  add(epfd, sigfd, kSignalTag);

  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;
  std::vector<Conn*> ready;
  epoll_event events[64];
  for (bool stop = false; !stop;) {
    int n = ::epoll_wait(epfd, events, 64, -1);
    if (n < 0 && errno != EINTR) die("epoll_wait");
    ready.clear();
    for (int i = 0; i < n; ++i) {
      uint64_t tag = events[i].data.u64;
      if (tag == kSignalTag) {
        stop = true;
      } else if (tag == kListenTag) {
        for (int fd; (fd = ::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
          auto c = std::make_unique<Conn>();
          c->fd = fd;
          add(epfd, fd, static_cast<uint64_t>(fd));
          conns[static_cast<uint64_t>(fd)] = std::move(c);
        }
      } else if (auto it = conns.find(tag); it != conns.end()) {
        take(floor, *it->second);
        ready.push_back(it->second.get());
      }
    }
    floor.commit();
    for (Conn* c : ready) {
      // One send: a closed-loop client has one answer waiting, which a
      // socket buffer always takes (the rest is retried at once if not).
      for (size_t sent = 0; sent < c->out.size() && !c->closed;) {
        ssize_t k = ::send(c->fd, c->out.data() + sent, c->out.size() - sent, MSG_NOSIGNAL);
        if (k > 0) sent += static_cast<size_t>(k);
        else if (errno != EAGAIN && errno != EINTR) c->closed = true;
      }
      c->out.clear();
      if (c->closed) {
        ::close(c->fd);
        conns.erase(static_cast<uint64_t>(c->fd));
      }
    }
  }
  ::unlink(argv[1]);
  return 0;
}

// The floor's server (floor_server.cpp, and floor_uring.cpp which does the
// same work through io_uring): the transfers applied to an array of
// balances, each noted as 24 bytes; one pwrite and one fdatasync a turn;
// the few requests the benchmark sends found by their words, not parsed.
// Both programs share this, so the two differ only in how they wait, read
// and send.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aup::bench::floor {


// The program's name, for its messages.
inline const char* program_name = "peers_floor";

// The log file is allocated once and written round and round: its blocks
// are allocated, as aup's preallocated segments are.
constexpr off_t kLogBytes = off_t{64} << 20;

[[noreturn]] inline void die(const char* what) {
  std::fprintf(stderr, "%s: %s: %s\n", program_name, what, std::strerror(errno));
  std::exit(2);
}

struct Conn {
  int fd = -1;
  std::string in, out;
  bool closed = false;
};

// The number after `"key":` in a request line; false when there is none.
inline bool number_after(std::string_view line, std::string_view key, uint64_t& out) {
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
    std::string_view bytes = pending();
    if (bytes.empty()) return;
    if (::pwrite(log_fd_, bytes.data(), bytes.size(), log_offset(bytes.size())) != static_cast<ssize_t>(bytes.size())) {
      die("pwrite");
    }
    if (::fdatasync(log_fd_) != 0) die("fdatasync");
    committed(bytes.size());
  }

  // commit() in its steps, for a server that writes and syncs by other
  // means: the turn's records, where they go, and that they are durable.
  std::string_view pending() const { return pending_; }
  int log_fd() const { return log_fd_; }
  off_t log_offset(size_t bytes) {
    if (at_ + static_cast<off_t>(bytes) > kLogBytes) at_ = 0;
    return at_;
  }
  void committed(size_t bytes) {
    at_ += static_cast<off_t>(bytes);
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

inline int listen_unix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    std::fprintf(stderr, "%s: socket path too long: %s\n", program_name, path.c_str());
    std::exit(2);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) die("bind");
  if (::listen(fd, 1024) != 0) die("listen");
  return fd;
}

// Appends `n` bytes read from the connection and hands each complete line
// to the floor.
inline void take_bytes(Floor& floor, Conn& c, const char* buf, size_t n) {
  c.in.append(buf, n);
  size_t begin = 0;
  for (size_t nl; (nl = c.in.find('\n', begin)) != std::string::npos; begin = nl + 1) {
    floor.answer(c, std::string_view(c.in).substr(begin, nl - begin));
  }
  c.in.erase(0, begin);
}

// Opens the log file, allocated once (its blocks allocated, as aup's
// preallocated segments are), and makes the floor.
inline Floor open_floor(const char* log_path, const char* accounts, const char* deposit) {
  int log_fd = ::open(log_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (log_fd < 0) die("open the log file");
  if (::posix_fallocate(log_fd, 0, kLogBytes) != 0) die("fallocate");
  if (::fsync(log_fd) != 0) die("fsync");
  return Floor(log_fd, std::strtoull(accounts, nullptr, 10), std::strtoull(deposit, nullptr, 10));
}

// What both programs start with: the arguments checked (the usage and exit
// 2 when they are not four), the floor made, SIGTERM and SIGINT blocked
// and read from a signalfd, the socket listening (non-blocking).
struct Started {
  Floor floor;
  int signal_fd;
  int listen_fd;
};
inline Started start(int argc, char** argv, const char* name) {
  program_name = name;
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s SOCKET LOG_FILE ACCOUNTS DEPOSIT\n", name);
    std::exit(2);
  }
  Floor floor = open_floor(argv[2], argv[3], argv[4]);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  int signal_fd = ::signalfd(-1, &mask, SFD_CLOEXEC);
  if (signal_fd < 0) die("signalfd");
  return Started{std::move(floor), signal_fd, listen_unix(argv[1])};
}

}  // namespace aup::bench::floor

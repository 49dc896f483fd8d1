#include "bench/server/client.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "bench/server/wait_input.h"
#include "runtime/http.h"

namespace aup::bench::server {

namespace {

// A server that answers nothing for this long has hung: say so rather
// than wait forever.
constexpr int kReceiveTimeoutSeconds = 30;
// Accounts per chunk: two requests each, below the server's default
// --max-pending (1024), so a chunk is read whole.
constexpr uint32_t kSetupChunk = 500;

std::string errno_text() { return std::strerror(errno); }

// The number after "KEY": in an answer; throws when there is none.
double number_after(const std::string& answer, const std::string& key) {
  std::string quoted = "\"" + key + "\":";
  size_t at = answer.find(quoted);
  if (at == std::string::npos) throw std::runtime_error("no " + key + " in the answer " + answer);
  return std::strtod(answer.c_str() + at + quoted.size(), nullptr);
}

}  // namespace

Connection::Connection(const std::string& path) {
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error("socket: " + errno_text());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) throw std::runtime_error("socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::string why = errno_text();
    ::close(fd_);
    throw std::runtime_error("cannot connect to " + path + ": " + why);
  }
}

Connection::Connection(uint16_t port, bool http) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error("socket: " + errno_text());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::string why = errno_text();
    ::close(fd_);
    throw std::runtime_error(fmt::format("cannot connect to 127.0.0.1:{}: {}", port, why));
  }
  if (http) http_ = std::make_unique<runtime::HttpAnswerReader>();
}

Connection::~Connection() {
  if (fd_ >= 0) ::close(fd_);
}

Connection::Connection(Connection&& other) noexcept
    : fd_(other.fd_), in_(std::move(other.in_)), http_(std::move(other.http_)) {
  other.fd_ = -1;
}

void Connection::send(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("cannot send to the server: " + errno_text());
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void Connection::fill() {
  char buf[64 * 1024];
  while (in_.find('\n') == std::string::npos) {
    // In poll, not in recv: bench/server/wait_input.h says why.
    if (!wait_input(fd_, kReceiveTimeoutSeconds * 1000)) {
      throw std::runtime_error(fmt::format("no answer from the server for {} s", kReceiveTimeoutSeconds));
    }
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0 && http_) {
      // Each response's body is its answer line, newline included.
      std::string error, body;
      if (!http_->feed(std::string_view(buf, static_cast<size_t>(n)), error)) throw std::runtime_error(error);
      for (int status = 0; http_->next(status, body);) in_ += body;
    } else if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      throw std::runtime_error("the server closed the connection with requests unanswered");
    } else if (errno != EINTR) {
      throw std::runtime_error("cannot read from the server: " + errno_text());
    }
  }
}

std::vector<std::string> exchange(Connection& c, const std::string& requests, size_t count) {
  c.send(requests);
  std::vector<std::string> answers;
  while (answers.size() < count) {
    c.receive([&](std::string_view line) { answers.emplace_back(line); });
  }
  if (answers.size() != count) {
    throw std::runtime_error(fmt::format("{} answers to {} requests", answers.size(), count));
  }
  return answers;
}

void open_accounts(const std::string& socket, uint32_t accounts, uint64_t deposit) {
  Connection c(socket);
  for (uint32_t first = 1; first <= accounts; first += kSetupChunk) {
    uint32_t last = std::min(accounts, first + kSetupChunk - 1);
    // The server keeps a connection's order: each deposit follows its open.
    std::string requests;
    for (uint32_t id = first; id <= last; ++id) {
      fmt::format_to(std::back_inserter(requests),
                     "{{\"event\":\"open\",\"args\":{{\"id\":{0},\"owner\":\"o{0}\"}}}}\n"
                     "{{\"event\":\"deposit\",\"args\":{{\"id\":{0},\"amount\":{1}}}}}\n",
                     id, deposit);
    }
    for (const std::string& a : exchange(c, requests, 2 * size_t{last - first + 1})) {
      if (!is_ok(a)) throw std::runtime_error("setting up the bank: " + a);
    }
  }
}

BankTotals read_totals(const std::string& socket) {
  Connection c(socket);
  std::vector<std::string> a =
      exchange(c, "{\"query\":\"transfers_made\"}\n{\"query\":\"total\"}\n", 2);
  for (const std::string& answer : a) {
    if (!is_ok(answer)) throw std::runtime_error("a final query failed: " + answer);
  }
  BankTotals t;
  t.transfers_made = number_after(a[0], "result");
  t.total = number_after(a[1], "total");
  t.accounts = number_after(a[1], "accounts");
  return t;
}

}  // namespace aup::bench::server

#include "bench/peers/stream.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "bench/server/wait_input.h"

namespace aup::bench::peers {

namespace {

std::string errno_text() { return std::strerror(errno); }

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) throw std::runtime_error("socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// A connected socket, or -1 with errno set.
int connect_unix(const sockaddr_un& addr) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

}  // namespace

Stream::Stream(const std::string& path, int timeout_s) {
  fd_ = connect_unix(unix_address(path));
  if (fd_ < 0) throw std::runtime_error("cannot connect to " + path + ": " + errno_text());
  timeout_ms_ = timeout_s > 0 ? timeout_s * 1000 : -1;
}

Stream::~Stream() {
  if (fd_ >= 0) ::close(fd_);
}

Stream::Stream(Stream&& other) noexcept
    : fd_(other.fd_), timeout_ms_(other.timeout_ms_), in_(std::move(other.in_)), begin_(other.begin_) {
  other.fd_ = -1;
}

bool Stream::accepts(const std::string& path) {
  int fd = connect_unix(unix_address(path));
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

void Stream::send(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("cannot send to the server: " + errno_text());
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void Stream::fill() {
  // Consumed bytes are dropped only once they are most of the buffer, so
  // a stream of small answers costs no quadratic copying.
  if (begin_ > 0 && begin_ * 2 >= in_.size()) {
    in_.erase(0, begin_);
    begin_ = 0;
  }
  char buf[64 * 1024];
  for (;;) {
    // In poll, not in recv: bench/server/wait_input.h says why.
    if (!server::wait_input(fd_, timeout_ms_)) throw std::runtime_error("no answer from the server in time");
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      return;
    }
    if (n == 0) throw std::runtime_error("the server closed the connection");
    if (errno != EINTR) throw std::runtime_error("cannot read from the server: " + errno_text());
  }
}

void Stream::consume(size_t n) {
  if (n > in_.size() - begin_) throw std::logic_error("consumed more than was read");
  begin_ += n;
}

void Stream::shut_down() { ::shutdown(fd_, SHUT_RDWR); }

}  // namespace aup::bench::peers

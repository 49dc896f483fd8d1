#include "runtime/listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "runtime/http.h"
#include "runtime/answer.h"

namespace aup::runtime {

namespace {

bool not_an_address(const std::string& given, std::string_view why, std::string& error) {
  error = fmt::format("`{}` is not an address{}; the forms are {}", given, why, kAddressForms);
  return false;
}

// The host of HOST:PORT, checked: one with a colon must be an IPv6
// address (`tcp:127.0.0.1:80` is no host named `tcp:127.0.0.1`).
bool check_host(const std::string& given, const std::string& host, std::string& error) {
  in6_addr v6;
  if (host.find(':') == std::string::npos || ::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return true;
  return not_an_address(
      given, fmt::format(": its host would be `{}` (HOST:PORT is split at the last colon)", host), error);
}

}  // namespace

bool parse_listen_address(const std::string& given, ListenAddress& out, std::string& error) {
  out = ListenAddress{};
  out.spec = given;
  std::string spec = given;
  if (spec.rfind("http://", 0) == 0) {
    out.http = true;
    spec = spec.substr(7);
    if (!spec.empty() && spec.back() == '/') spec.pop_back();  // http://host:port/ as a browser writes it
    if (spec.find(':') == std::string::npos) {
      error = fmt::format("`{}` needs a port: http://HOST:PORT or http://:PORT (loopback)", given);
      return false;
    }
  } else if (size_t scheme = spec.find("://"); scheme != std::string::npos) {
    return not_an_address(given, fmt::format(" (no `{}`: HTTP is http://, with no TLS)", spec.substr(0, scheme + 3)),
                          error);
  }
  if (spec.rfind("unix:", 0) == 0 && !out.http) {
    out.unix_socket = true;
    out.path = spec.substr(5);
    if (out.path.empty()) {
      error = "unix: needs a path (unix:/run/app.sock)";
      return false;
    }
    if (out.path.size() >= sizeof(sockaddr_un{}.sun_path)) {
      error = fmt::format("the socket path of `{}` is {} bytes; at most {} fit (a shorter path, or one relative "
                          "to a nearer directory)",
                          given, out.path.size(), sizeof(sockaddr_un{}.sun_path) - 1);
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
    return not_an_address(given, given.find('/') != std::string::npos && !out.http ? " (a Unix socket is unix:PATH)" : "",
                          error);
  }
  if (!check_host(given, host, error)) return false;
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
    int e = rc != 0 ? bind_errno : errno;
    std::string dir = a.path.find('/') == std::string::npos ? "." : a.path.substr(0, a.path.rfind('/'));
    if (dir.empty()) dir = "/";
    error = e == ENOENT ? fmt::format("cannot listen on {}: the directory {} does not exist", a.path, dir)
                        : fmt::format("cannot listen on {}: {}", a.path, errno_text(e));
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
    error = fmt::format("cannot resolve the host `{}` of `{}`: {} (an address is HOST:PORT; the forms are {})", a.host,
                        a.spec.empty() ? fmt::format("{}:{}", a.host, a.port) : a.spec, gai_strerror(rc),
                        kAddressForms);
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
    error = fmt::format("cannot listen on {}:{}: {}{}", a.host, a.port, errno_text(last),
                        last == EADDRINUSE ? " (another process listens on that port)" : "");
    return -1;
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  uint16_t actual = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                                : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  where = a.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", a.host, actual)
                                                 : fmt::format("{}:{}", a.host, actual);
  if (a.http) where = "http://" + where;
  return fd;
}

}  // namespace


int listen_on(const ListenAddress& a, std::string& where, std::string& error) {
  return a.unix_socket ? listen_unix(a, where, error) : listen_tcp(a, where, error);
}

bool BoundListeners::bind(const std::vector<std::string>& specs, std::string& error) {
  close();
  for (const std::string& spec : specs) {
    ListenAddress a;
    std::string where;
    int fd = parse_listen_address(spec, a, error) ? listen_on(a, where, error) : -1;
    if (fd < 0) {
      close();
      return false;
    }
    listeners_.push_back(Listener{fd, a.http});
    if (a.unix_socket) unix_paths_.push_back(a.path);
    announced_.push_back(where);
  }
  return true;
}

void BoundListeners::close() {
  for (const Listener& l : listeners_) ::close(l.fd);
  for (const std::string& path : unix_paths_) ::unlink(path.c_str());
  listeners_.clear();
  unix_paths_.clear();
  announced_.clear();
}

void raise_descriptor_limit(uint32_t max_connections, std::FILE* err) {
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < max_connections + 64u) {
    fmt::print(err, "aup: warning: {} file descriptors allowed; fewer than --max-connections {} can be served\n",
               nofile.rlim_cur, max_connections);
  }
}

void set_interest(int epfd, int fd, uint64_t tag, uint32_t want, uint32_t& interest) {
  if (want == interest) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = tag;
  ::epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev);
  interest = want;
}

Acceptor::Acceptor(int listen_fd, int epfd, uint64_t tag, uint32_t max_connections, bool http, bool shared)
    : listen_fd_(listen_fd), epfd_(epfd), tag_(tag), max_connections_(max_connections),
      events_(EPOLLIN | (shared ? EPOLLEXCLUSIVE : 0u)) {
  Answer refused;
  refused.fail(Code::Unavailable, fmt::format("too many connections (the limit is {})", max_connections));
  std::string answer;
  append_answer(answer, refused, false);
  answer += '\n';
  if (http) {
    HttpResponseHead head;
    head.status = 503;
    head.close = true;
    append_http_head(refusal_, head, answer.size());
  }
  refusal_ += answer;
  watch();
}

void Acceptor::watch() {
  epoll_event ev{};
  ev.events = events_;
  ev.data.u64 = tag_;
  ::epoll_ctl(epfd_, EPOLL_CTL_ADD, listen_fd_, &ev);
}

int Acceptor::accept_next(uint32_t open_connections, bool stopping) {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        ::epoll_ctl(epfd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        paused_ = true;
        resume_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
      }
      return -1;  // EAGAIN, or a connection that went away meanwhile
    }
    if (stopping) {
      ::close(fd);
      continue;
    }
    if (open_connections >= max_connections_) {
      ssize_t w = ::send(fd, refusal_.data(), refusal_.size(), MSG_NOSIGNAL);
      (void)w;
      ::close(fd);
      ++refused_;
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on unix sockets
    return fd;
  }
}

void Acceptor::resume(bool stopping) {
  if (!paused_ || stopping || std::chrono::steady_clock::now() < resume_at_) return;
  watch();
  paused_ = false;
}

namespace {

int connect_unix(const std::string& path, int& err) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = errno;
    return -1;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);  // parse_listen_address checked the length
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    err = errno;
    ::close(fd);
    return -1;
  }
  return fd;
}

int connect_tcp(const ListenAddress& a, int& err, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(a.host.c_str(), std::to_string(a.port).c_str(), &hints, &res); rc != 0) {
    error = fmt::format("cannot resolve the host `{}` of `{}`: {} (an address is HOST:PORT; the forms are {})", a.host,
                        a.spec.empty() ? fmt::format("{}:{}", a.host, a.port) : a.spec, gai_strerror(rc),
                        kAddressForms);
    return -1;
  }
  int fd = -1;
  for (addrinfo* p = res; p && fd < 0; p = p->ai_next) {
    fd = ::socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
    if (fd >= 0 && ::connect(fd, p->ai_addr, p->ai_addrlen) != 0) {
      err = errno;
      ::close(fd);
      fd = -1;
    } else if (fd < 0) {
      err = errno;
    }
  }
  ::freeaddrinfo(res);
  return fd;
}

}  // namespace

int connect_to(const ListenAddress& a, const std::string& address, std::string& error) {
  int err = 0;
  error.clear();
  int fd = a.unix_socket ? connect_unix(a.path, err) : connect_tcp(a, err, error);
  if (fd < 0 && error.empty()) {
    error = fmt::format("cannot connect to {}: {}{}", address, std::strerror(err),
                        err == ENOENT || err == ECONNREFUSED ? " (is `aup run --listen` serving there?)" : "");
  }
  return fd;
}

}  // namespace aup::runtime

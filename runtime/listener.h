// Where `aup run --listen` listens, and taking its connections: the parts
// of serving sockets that do not depend on which thread reads them.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace aup::runtime {

// Where to listen, parsed: a Unix socket path, or a host and port (a bare
// ":PORT" is loopback), speaking the line protocol; or `http://HOST:PORT`
// (`http://:PORT`: loopback) speaking HTTP (runtime/http.h). False with a
// message when it cannot be.
struct ListenAddress {
  bool unix_socket = false;
  bool http = false;
  std::string spec;  // as it was written
  std::string path;  // unix
  std::string host;  // tcp
  uint16_t port = 0;
};
bool parse_listen_address(const std::string& spec, ListenAddress& out, std::string& error);

// The forms an address takes, for messages that refuse one.
inline constexpr const char* kAddressForms =
    "unix:PATH, HOST:PORT, :PORT (loopback), http://HOST:PORT or http://:PORT";

// A listening socket and what its connections speak.
struct Listener {
  int fd = -1;
  bool http = false;
};

// A listening, non-blocking socket for `a` (a Unix socket is made mode
// 0600, replacing a stale socket file nobody listens on), or -1 with the
// reason. `where` says what was bound (the port a ":0" got).
int listen_on(const ListenAddress& a, std::string& where, std::string& error);

// Every address of --listen bound and listening, each announced as
// `where` says (the port a ":0" got): made before anything else of the
// server (its store), so that an address that cannot be served is refused
// while nothing has been created, and kept until the server has stopped.
// Closing (or destroying) it closes the sockets and removes the Unix
// socket files it made.
class BoundListeners {
 public:
  BoundListeners() = default;
  ~BoundListeners() { close(); }
  BoundListeners(const BoundListeners&) = delete;
  BoundListeners& operator=(const BoundListeners&) = delete;
  // Each of `specs`, in order; false with the reason (naming the address)
  // when one cannot be parsed, resolved or bound; then none is kept.
  bool bind(const std::vector<std::string>& specs, std::string& error);
  const std::vector<Listener>& listeners() const { return listeners_; }
  const std::vector<std::string>& announced() const { return announced_; }
  void close();

 private:
  std::vector<Listener> listeners_;
  std::vector<std::string> unix_paths_, announced_;
};

// A blocking, close-on-exec socket connected to `a` (the address a server
// listens on: `aup call`, `aup shell`, a replica's follower), or -1 with a
// message that names `address` (its spelling) and the reason.
int connect_to(const ListenAddress& a, const std::string& address, std::string& error);

// Raises the soft descriptor limit to the hard one (it is often 1024, less
// than --max-connections plus the store's files); warns on `err` when even
// that is too few.
void raise_descriptor_limit(uint32_t max_connections, std::FILE* err);

// Sets the epoll interest of connection `fd` (tagged `tag`) to `want` when
// it differs from `interest`, the one set before.
void set_interest(int epfd, int fd, uint64_t tag, uint32_t want, uint32_t& interest);

// Takes the connections waiting on a listener. Past `max_connections` a
// connection is answered `unavailable` (`http`: as a 503 response) and
// closed at once. Out of
// descriptors, the listener is taken out of `epfd` for a moment (a waiting
// connection would otherwise make it ready again at once) and put back by
// resume().
class Acceptor {
 public:
  // `shared`: other threads' epolls watch the same listener (each of
  // several serving threads has an Acceptor for it): each connection
  // wakes one of them (EPOLLEXCLUSIVE).
  Acceptor(int listen_fd, int epfd, uint64_t tag, uint32_t max_connections, bool http, bool shared);
  // The next admitted connection (non-blocking, close-on-exec, TCP_NODELAY),
  // or -1 when none waits. While `stopping`, connections are closed unread.
  int accept_next(uint32_t open_connections, bool stopping);
  // Puts a paused listener back once its pause is over (call each turn).
  void resume(bool stopping);
  bool paused() const { return paused_; }
  uint64_t refused() const { return refused_; }

 private:
  void watch();

  int listen_fd_;
  int epfd_;
  uint64_t tag_;
  uint32_t max_connections_;
  uint32_t events_;  // what it watches the listener for
  std::string refusal_;  // what a connection past the limit is sent
  bool paused_ = false;
  std::chrono::steady_clock::time_point resume_at_;
  uint64_t refused_ = 0;
};

}  // namespace aup::runtime

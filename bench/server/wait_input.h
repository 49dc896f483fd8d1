// How the benchmarks' clients wait for an answer: in poll(2) for input,
// then a recv(2) that finds it, never in a blocking recv(2).
//
// On a Unix socket the two are not the same to the server. When the
// server reads a request, the kernel frees the client's send buffer and
// wakes every task waiting on the client's socket, whatever it waits for
// (unix_write_space). A client blocked in recv(2) is one of them: woken
// for nothing, on its own CPU, by the server's read, and the wake-up (an
// interprocessor interrupt, dear on a paravirtualised guest) is paid on
// the server's CPU and counted as the server's time. poll(2) says what it
// waits for (POLLIN), so that wake-up passes it by; epoll-based clients
// (redis-benchmark, the event loops of most drivers) wait the same way.
// Measured with TPC-C: docs/benchmarks.md ("Clients that wait in poll").
#pragma once

#include <poll.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace aup::bench::server {

// Waits until `fd` has input, or its peer hung up: true; false when
// `timeout_ms` passed first (a negative one never does). Throws on an
// error of poll itself.
inline bool wait_input(int fd, int timeout_ms) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, timeout_ms);
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) throw std::runtime_error(std::string("cannot wait for the server: ") + std::strerror(errno));
  }
}

}  // namespace aup::bench::server

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
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <unordered_map>
#include <vector>

#include "bench/peers/floor.h"

namespace {

using namespace aup::bench::floor;

constexpr uint64_t kListenTag = ~uint64_t{0};
constexpr uint64_t kSignalTag = ~uint64_t{0} - 1;

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
  take_bytes(floor, c, buf, static_cast<size_t>(n));
}

}  // namespace

int main(int argc, char** argv) {
  Started st = start(argc, argv, "peers_floor");
  Floor& floor = st.floor;
  int lfd = st.listen_fd;
  int epfd = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) die("epoll_create1");
  add(epfd, lfd, kListenTag);
  add(epfd, st.signal_fd, kSignalTag);

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

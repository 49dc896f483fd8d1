// peers_floor_uring: the floor (floor_server.cpp) with its waiting, reads,
// sends and its log's write and sync submitted through io_uring, to tell
// what io_uring could save a server of aup's shape. The work is the same
// (bench/peers/floor.h); where the epoll floor makes about two syscalls a
// transfer (a read and a send on each client's socket) and three a turn
// (epoll_wait, pwrite, fdatasync), this one queues a turn's sends, the
// next reads and the linked write and fdatasync, and enters the kernel
// once to submit them and wait.
//
// A turn: every completed read is taken (its lines answered into the
// connection's output); the turn's transfers go out as one write and one
// fdatasync, linked; reads that complete while they run are kept for the
// next turn, so no answer leaves before the transfers it reports are
// durable; then each connection's answers are sent with one send.
//
// Usage: peers_floor_uring SOCKET LOG_FILE ACCOUNTS DEPOSIT
// SIGTERM or SIGINT: the turn in progress ends, exit 0. When the kernel
// refuses io_uring (io_uring_queue_init fails), it says so and exits 2.
#include <fcntl.h>
#include <liburing.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "bench/peers/floor.h"

namespace {

using namespace aup::bench::floor;

// Submission queue entries: a read and a send per client, the accept, the
// signal and the two of the log, with room to spare (the benchmark runs at
// most a few hundred clients; a full queue is submitted and refilled).
constexpr unsigned kQueueEntries = 1024;
constexpr size_t kReadBytes = 16 * 1024;

enum class Op : uint64_t { read = 0, send = 1, accept = 2, signal = 3, log = 4 };

struct UConn : Conn {
  char buf[kReadBytes];
  std::string wire;   // the answers being sent (out is filled meanwhile)
  size_t sent = 0;    // bytes of wire the kernel took
  bool sending = false;
  bool reading = false;
};

uint64_t tag(Op op, uint64_t id) { return (id << 3) | static_cast<uint64_t>(op); }
Op op_of(uint64_t t) { return static_cast<Op>(t & 7); }
uint64_t id_of(uint64_t t) { return t >> 3; }

class Server {
 public:
  Server(Floor& floor, int listen_fd, int signal_fd) : floor_(floor), lfd_(listen_fd), sigfd_(signal_fd) {
    // One thread submits and reaps, so completions' task work can wait
    // until it asks for them (no interrupt of the thread a completion);
    // a kernel before 6.1 refuses the flags, and gets the plain ring.
    io_uring_params p{};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int r = io_uring_queue_init_params(kQueueEntries, &ring_, &p);
    if (r == -EINVAL) r = io_uring_queue_init(kQueueEntries, &ring_, 0);
    if (r < 0) {
      errno = -r;
      die("io_uring_queue_init (the kernel refuses io_uring)");
    }
    arm_accept();
    arm_signal();
  }
  ~Server() { io_uring_queue_exit(&ring_); }

  void run() {
    while (!stop_) {
      enter(1);
      drain(false);
      for (auto [id, n] : deferred_) take_read(id, n);
      deferred_.clear();
      commit();
      for (UConn* c : ready_) start_send(*c);
      ready_.clear();
      reap();
    }
  }

 private:
  io_uring_sqe* sqe() {
    io_uring_sqe* s = io_uring_get_sqe(&ring_);
    if (s == nullptr) {  // full: submit what is queued, then there is room
      if (io_uring_submit(&ring_) < 0) die("io_uring_submit");
      s = io_uring_get_sqe(&ring_);
      if (s == nullptr) die("io_uring_get_sqe");
    }
    return s;
  }

  void enter(unsigned wait) {
    int r = io_uring_submit_and_wait(&ring_, wait);
    if (r < 0 && r != -EINTR) {
      errno = -r;
      die("io_uring_submit_and_wait");
    }
  }

  void arm_accept() {
    io_uring_sqe* s = sqe();
    io_uring_prep_accept(s, lfd_, nullptr, nullptr, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(s, tag(Op::accept, 0));
  }

  void arm_signal() {
    io_uring_sqe* s = sqe();
    io_uring_prep_read(s, sigfd_, &siginfo_, sizeof siginfo_, 0);
    io_uring_sqe_set_data64(s, tag(Op::signal, 0));
  }

  void arm_read(UConn& c) {
    io_uring_sqe* s = sqe();
    io_uring_prep_recv(s, c.fd, c.buf, sizeof c.buf, 0);
    io_uring_sqe_set_data64(s, tag(Op::read, static_cast<uint64_t>(c.fd)));
    c.reading = true;
  }

  void queue_send(UConn& c) {
    io_uring_sqe* s = sqe();
    io_uring_prep_send(s, c.fd, c.wire.data() + c.sent, c.wire.size() - c.sent, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(s, tag(Op::send, static_cast<uint64_t>(c.fd)));
    c.sending = true;
  }

  void start_send(UConn& c) {
    if (c.sending || c.closed || c.out.empty()) return;
    c.wire.swap(c.out);
    c.out.clear();
    c.sent = 0;
    queue_send(c);
  }

  UConn* find(uint64_t id) {
    auto it = conns_.find(id);
    return it == conns_.end() ? nullptr : it->second.get();
  }

  // Handles every completion waiting. While the log's write and sync run
  // (`committing`), completed reads are kept for the next turn.
  void drain(bool committing) {
    io_uring_cqe* cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      complete(io_uring_cqe_get_data64(cqe), cqe->res, committing);
    }
    io_uring_cq_advance(&ring_, seen);
  }

  void complete(uint64_t t, int res, bool committing) {
    switch (op_of(t)) {
      case Op::accept:
        if (res >= 0) {
          auto c = std::make_unique<UConn>();
          c->fd = res;
          arm_read(*c);
          conns_[static_cast<uint64_t>(res)] = std::move(c);
        }
        arm_accept();
        break;
      case Op::signal:
        stop_ = true;
        break;
      case Op::log:
        if (res < 0) {
          errno = -res;
          die("the log's write or fdatasync");
        }
        --log_waiting_;
        break;
      case Op::read:
        if (committing) deferred_.emplace_back(id_of(t), res);
        else take_read(id_of(t), res);
        break;
      case Op::send:
        sent(id_of(t), res);
        break;
    }
  }

  void take_read(uint64_t id, int res) {
    UConn* c = find(id);
    if (c == nullptr) return;
    c->reading = false;
    if (res <= 0) {
      if (res == 0 || (res != -EAGAIN && res != -EINTR)) c->closed = true;
      else arm_read(*c);
      return;
    }
    take_bytes(floor_, *c, c->buf, static_cast<size_t>(res));
    ready_.push_back(c);
    arm_read(*c);
  }

  void sent(uint64_t id, int res) {
    UConn* c = find(id);
    if (c == nullptr) return;
    c->sending = false;
    if (res < 0 && res != -EAGAIN && res != -EINTR) {
      c->closed = true;
      return;
    }
    if (res > 0) c->sent += static_cast<size_t>(res);
    if (c->sent < c->wire.size()) {
      queue_send(*c);
    } else {
      c->wire.clear();
      start_send(*c);  // answers made while this send was out
    }
  }

  // The turn's transfers, durable: a write and an fdatasync linked, waited
  // for (with whatever else completes meanwhile) before any answer leaves.
  void commit() {
    std::string_view bytes = floor_.pending();
    if (bytes.empty()) return;
    off_t at = floor_.log_offset(bytes.size());
    io_uring_sqe* w = sqe();
    io_uring_prep_write(w, floor_.log_fd(), bytes.data(), static_cast<unsigned>(bytes.size()), static_cast<uint64_t>(at));
    io_uring_sqe_set_data64(w, tag(Op::log, 0));
    w->flags |= IOSQE_IO_LINK;
    io_uring_sqe* f = sqe();
    io_uring_prep_fsync(f, floor_.log_fd(), IORING_FSYNC_DATASYNC);
    io_uring_sqe_set_data64(f, tag(Op::log, 1));
    log_waiting_ = 2;
    while (log_waiting_ > 0) {
      enter(1);
      drain(true);
    }
    floor_.committed(bytes.size());
  }

  // Closes the connections that ended once nothing of theirs is in flight.
  void reap() {
    for (auto it = conns_.begin(); it != conns_.end();) {
      UConn& c = *it->second;
      if (c.closed && !c.sending && !c.reading) {
        ::close(c.fd);
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
  }

  Floor& floor_;
  int lfd_, sigfd_;
  io_uring ring_{};
  signalfd_siginfo siginfo_{};
  std::unordered_map<uint64_t, std::unique_ptr<UConn>> conns_;
  std::vector<UConn*> ready_;
  std::vector<std::pair<uint64_t, int>> deferred_;
  int log_waiting_ = 0;
  bool stop_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  Started st = start(argc, argv, "peers_floor_uring");
  // Blocking, so an accept waits in the kernel rather than failing EAGAIN.
  if (::fcntl(st.listen_fd, F_SETFL, ::fcntl(st.listen_fd, F_GETFL) & ~O_NONBLOCK) != 0) die("fcntl");
  Server(st.floor, st.listen_fd, st.signal_fd).run();
  ::unlink(argv[1]);
  return 0;
}

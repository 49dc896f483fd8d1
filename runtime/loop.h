// One serving thread of `aup run --listen` (runtime/server.h): its epoll,
// its connections, and the turn that reads them, takes their requests,
// and writes their answers. The owner serving the connections itself runs
// one; with I/O threads each runs one. What becomes of a request taken is
// its Dispatch's to say (server.cpp has both).
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/answer.h"
#include "runtime/framer.h"
#include "runtime/listener.h"
#include "runtime/metrics.h"
#include "runtime/outbox.h"
#include "runtime/request.h"
#include "runtime/server_options.h"

namespace aup::runtime {

// One connection.
struct Conn {
  Conn(int fd_in, uint64_t id_in, Protocol p, const ServerOptions& o)
      : fd(fd_in), id(id_in), in(p, o.max_line_bytes, std::chrono::seconds(o.http_timeout_seconds)) {}
  int fd;
  uint64_t id;
  Framer in;
  Outbox out;
  // Requests taken and not yet answered (in the batch, or with the owner),
  // and about how many bytes their answers hold so far: both count toward
  // the connection's limits (--max-pending, --max-output).
  uint32_t unanswered = 0;
  size_t unanswered_bytes = 0;
  bool dead = false;     // cannot be written: its answers are dropped
  bool spoke = false;    // a request of it has been taken
  bool handed = false;   // handed over (a replica's, to the Shipper): closed without closing its socket
  bool queued = false;   // in the loop's work: requests to take this turn
  bool touched = false;  // to flush, close or re-arm after the turn
  uint32_t interest = 0;
};

// What every serving thread shares.
class Shipper;

struct ServerShared {
  ServerShared(const ServerOptions& options, std::FILE* err_in)
      : o(options), err(err_in), metrics(options.service.metrics) {}
  const ServerOptions& o;
  std::FILE* err;
  Metrics* metrics;  // or null
  std::atomic<bool> stopping{false};
  std::atomic<uint32_t> connections{0};
  // Where a connection whose first request is `replicate` goes (a server
  // with a store), or null.
  Shipper* shipper = nullptr;
  // After SIGINT/SIGTERM: sets `stopping` and wakes every thread.
  std::function<void()> stop;
};

class Loop;
class Shipper;

// Who runs the requests a loop takes: the owner itself, on the live state
// (OwnerDispatch), or, on an I/O thread, queries on a snapshot and events
// handed to the owner (HandOffDispatch); server.cpp.
class Dispatch {
 public:
  virtual ~Dispatch() = default;
  // A request of `c` (already counted in c.unanswered): its answer goes
  // to loop.deliver(), now or later, in its place among c's.
  virtual void take(Loop& loop, Conn& c, const RequestText& text, double now) = 0;
  // An answer the framer made for `c` (a refusal), in its place.
  virtual void refuse(Loop& loop, Conn& c, Answer& refusal) = 0;
  // Whether a batch must end before another request is taken.
  virtual bool full() const = 0;
  // The turn has taken what it could: the batch ends.
  virtual void end_batch(Loop& loop) = 0;
  // Once a second, on the loop's thread.
  virtual void tick(double seconds) { (void)seconds; }
  // The loop was woken (answers posted, owner tasks: owner_tasks.h,
  // replicas' acknowledgements), or, while waiting(), its wait checked.
  virtual void woken(Loop& loop) { (void)loop; }
  // Answers or requests wait for something other than a connection
  // (replicas, a save): the loop calls woken() at least every
  // Committer::kWaitCheckMs.
  virtual bool waiting() const { return false; }
  // The loop takes nothing more (it is stopping).
  virtual void stopped() {}
};

// An answer for a connection of another thread's loop.
struct Routed {
  uint64_t conn = 0;
  Answer answer;
};

class Loop {
 public:
  Loop(ServerShared& shared, Dispatch& dispatch);
  ~Loop();  // closes its connections
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  // Watches `listeners` (`shared_listeners`: other loops watch them too)
  // and, if not -1, the signal descriptor. False with the reason.
  bool open(const std::vector<Listener>& listeners, bool shared_listeners, int signal_fd, std::string& error);
  // Serves until the server stops and every answer has left (or a few
  // seconds have passed trying).
  void run();

  // The loop's thread: answer `a` for connection `conn`, in its place.
  void deliver(uint64_t conn, Answer& a);
  // The loop's thread, from Dispatch::take: if `r` is a `replicate`
  // request that is `c`'s first and only one, and the server has a
  // Shipper, hands `c` to it (the loop forgets `c`, and counts the request
  // answered) and returns true.
  bool hand_over(Conn& c, const Request& r);
  // Any thread: answers for this loop's connections, delivered by the
  // loop's thread at its next turn; and a wake-up.
  void post(std::vector<Routed>& answers);
  void wake();
  uint32_t connections() const { return static_cast<uint32_t>(conns_.size()); }

 private:
  void turn(const epoll_event* events, int n);
  void settle_turn();
  void accept_all(size_t listener);
  void count_connections(int delta);
  void take_posted();
  void expire_slow(std::chrono::steady_clock::time_point now);
  int wait_ms(std::chrono::steady_clock::time_point tick_due) const;
  void on_ready(Conn& c, uint32_t events);
  void take_requests(Conn& c);
  void work();
  void queue(Conn& c);
  void touch(Conn& c);
  void settle_touched();
  void flush(Conn& c);
  bool finished(const Conn& c) const;
  bool can_take(const Conn& c) const;
  void update_interest(Conn& c);
  void close_conn(Conn& c);
  bool drained() const;
  bool stopping() const { return shared_.stopping.load(std::memory_order_acquire); }

  ServerShared& shared_;
  const ServerOptions& o_;
  Dispatch& dispatch_;
  std::atomic<int64_t>* answer_gauge_ = nullptr;  // this thread's answer bytes waiting
  int epfd_ = -1;
  int wakefd_ = -1;
  int signal_fd_ = -1;
  std::vector<std::unique_ptr<Acceptor>> acceptors_;
  std::vector<Protocol> protocols_;  // each listener's
  bool any_http_ = false;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  uint64_t next_id_ = 1;
  // Connections with requests to take, held at --max-pending until answers
  // come, and touched this turn. A connection is closed only in
  // settle_touched(), when the first two are empty.
  std::vector<Conn*> work_, held_, touched_;
  double turn_now_ = 0;  // a request's `now`: when its turn's read happened
  Answer refusal_;       // an answer the framer made (reused)
  bool stopped_ = false;  // dispatch_.stopped() was called
  std::mutex posted_mu_;
  std::vector<Routed> posted_;  // under posted_mu_
  std::vector<Routed> delivering_;
};

}  // namespace aup::runtime

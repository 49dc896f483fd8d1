// A connection to the aup server that several terminals share, as an
// application server multiplexes its users' requests over a few pipelined
// connections: each terminal thread sends its request and waits for its
// own answer, while other terminals' requests are in flight on the same
// connection.
//
// Matching: the server answers a connection's requests in request order
// (runtime/server.h), so answers go to their requests first in, first out
// (InFlight); each answer's id is still checked against its request's, and
// one that does not match breaks the connection.
//
// Sending: a request is appended to the connection's outbox; the thread
// that finds nobody sending sends the outbox, and again while more was
// queued meanwhile, so the requests of terminals that arrive while a send
// is under way leave together in the next one.
//
// Receiving: one waiting thread at a time reads (the reader). It gives each
// answer to its waiter and wakes that waiter only; once its own answer has
// come it leaves reading to the oldest waiter still waiting that is not
// sending (a sender blocked because the server, with answers unread, has
// stopped reading must not be the only one who could read them). Nobody spins:
// every waiter sleeps on its own condition variable.
//
// Failure: a send that fails, a closed connection or 30 s without an answer
// (server::Connection), or an answer that does not match breaks the
// connection: every waiter wakes with the reason, and every later request
// fails at once. (A send blocked because a live server stopped reading is
// not woken, as on a terminal's own connection: server::Connection's send
// has no timeout.)
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/server/client.h"

namespace aup::tpcc {

// The id of an answer line as the server writes it (`{"id":N,...`, N the
// request's whole-number id), or nullopt when it has none such.
std::optional<uint64_t> answer_id(std::string_view line);

// One request waiting for its answer: a terminal's, reused for each of its
// requests. Owned by its terminal; in an InFlight only while the terminal
// waits in SharedConnection::ask.
struct Waiter {
  uint64_t id = 0;        // the request's
  bool answered = false;
  std::string answer;     // the answer line, without its newline
  std::condition_variable wake;
};

// The requests sent on one connection and not answered yet, in the order
// they were written. Each terminal has at most one in flight, so this holds
// at most the connection's terminals (1000, below the server's
// --max-pending of 1024 a connection).
class InFlight {
 public:
  void push(Waiter* w) { queue_.push_back(w); }
  bool empty() const { return queue_.empty(); }
  Waiter* oldest() const { return queue_.front(); }
  // The oldest waiter that is not `w` (the sender, which cannot read while
  // it sends); null when there is none. `w` has at most one request in
  // flight, so that is the first or the second.
  Waiter* oldest_other_than(const Waiter* w) const {
    for (size_t i = 0; i < queue_.size() && i < 2; ++i) {
      if (queue_[i] != w) return queue_[i];
    }
    return nullptr;
  }
  // The waiter that `line`, the next answer, belongs to, taken off the
  // queue. Throws std::runtime_error quoting the line when nothing is in
  // flight or the line's id is not the oldest request's.
  Waiter* match(std::string_view line);
  // Takes every waiter off (the connection broke); returns them.
  std::deque<Waiter*> take_all() { return std::exchange(queue_, {}); }

 private:
  std::deque<Waiter*> queue_;
};

class SharedConnection {
 public:
  // `terminals` share it (for messages).
  SharedConnection(bench::server::Connection conn, uint32_t terminals);
  SharedConnection(const SharedConnection&) = delete;
  SharedConnection& operator=(const SharedConnection&) = delete;

  // A request id no other request on this connection has.
  uint64_t next_id();

  // Sends `request` (one line, newline included, with id `id`) and waits
  // for its answer, left in `w.answer`. Throws std::runtime_error "aup:
  // WHAT: WHY" when the connection is or becomes broken before the answer
  // came (`what` says what was asked: "new_order").
  void ask(Waiter& w, uint64_t id, std::string_view request, std::string_view what);

 private:
  void send_outbox(Waiter& w, std::unique_lock<std::mutex>& lock);
  void read_until_answered(Waiter& w, std::unique_lock<std::mutex>& lock);
  void hand_out(size_t lines);
  void break_with(const std::string& why);

  // send() and receive() run on different threads at once: send() touches
  // only the socket, receive() the socket and the bytes read, and only the
  // reader calls it.
  bench::server::Connection conn_;
  uint32_t terminals_;
  std::mutex mu_;
  // Under mu_:
  uint64_t next_id_ = 1;
  std::string outbox_;   // requests not yet handed to a send
  const Waiter* sender_ = nullptr;  // the waiter whose thread is sending; null: nobody
  bool reading_ = false;
  InFlight in_flight_;
  std::string broken_;   // why the connection broke; empty while it works
  // The sender's and the reader's own, used outside mu_ (only one of each
  // at a time); their capacity is reused.
  std::string sending_buf_;
  std::vector<std::string> lines_;
};

}  // namespace aup::tpcc

#include "runtime/stdio_loop.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "runtime/committer.h"
#include "runtime/outbox.h"
#include "runtime/signals.h"

namespace aup::runtime {

namespace {

// Writes everything waiting, waiting for the descriptor when it is full
// (a non-blocking stdout); false with the reason when it cannot.
bool write_all(Outbox& out, int fd, std::FILE* err) {
  for (;;) {
    switch (out.send_to(fd)) {
      case Outbox::Sent::All: return true;
      case Outbox::Sent::Some: {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, -1);
        break;
      }
      case Outbox::Sent::Gone:
        fmt::print(err, "aup: cannot write responses: {}\n", std::strerror(out.error()));
        return false;
    }
  }
}

// The requests read so far, through the Committer into `out`.
class StdioBatch {
 public:
  StdioBatch(Service& service, Durability& durability, const StdioOptions& o)
      : service_(service), batch_(service, durability, o.max_batch), in_(Protocol::Lines, o.max_line_bytes, {}),
        out_(/*socket=*/false), bail_(o.bail) {}
  Framer& in() { return in_; }
  Outbox& out() { return out_; }
  // --bail, and a request failed: nothing more is to be read.
  bool bailed() const { return bail_ && failed_; }
  // Some request failed; some event was answered `unavailable`.
  bool failed() const { return failed_; }
  bool unavailable() const { return unavailable_; }
  // Takes every complete request read so far (with --bail, up to the
  // first that fails: the rest is not run); what was committed goes to
  // the outbox.
  void take_all(double now) {
    auto deliver = [this](uint64_t, Answer& a) { this->deliver(a); };
    bool stop = false;
    for (Framer::Piece p; !stop && (p = in_.next(text_, refusal_)) != Framer::Piece::None;) {
      if (p == Framer::Piece::Answer) {
        stop = bail_ && !refusal_.ok();
        std::swap(batch_.add(0), refusal_);
      } else {
        batch_.take(0, service_.prepare(text_, doc_), text_, now);
        const Answer* a = batch_.last_answer();
        stop = bail_ && a && !a->ok();
      }
      if (batch_.full()) batch_.commit(deliver);
    }
    batch_.unpark(now);
    batch_.commit(deliver);  // everything read together: one commit, then the answers
  }
  // At the end of input: what waits (a query's `after` save, replicas)
  // until it is answered or its wait runs out.
  void finish(double now, int out_fd, std::FILE* err) {
    auto deliver = [this](uint64_t, Answer& a) { this->deliver(a); };
    while (batch_.waiting()) {
      ::poll(nullptr, 0, Committer::kWaitCheckMs);
      batch_.unpark(now);
      batch_.commit(deliver);
      if (!write_all(out_, out_fd, err)) return;
    }
  }

 private:
  Service& service_;
  Committer batch_;
  Framer in_;
  Outbox out_;
  void deliver(Answer& a) {
    failed_ = failed_ || !a.ok();
    unavailable_ = unavailable_ || a.code == Code::Unavailable;
    in_.deliver(a, out_);
  }

  RequestText text_;
  Answer refusal_;
  JsonDoc doc_;
  bool bail_;
  bool failed_ = false;
  bool unavailable_ = false;
};

}  // namespace

int serve_stdio(Service& service, Durability& durability, const StdioOptions& o, int in_fd, int out_fd,
                std::FILE* err) {
  SignalFd signals;
  StdioBatch batch(service, durability, o);
  bool stop = false;
  while (!batch.in().eof() && !stop && !batch.bailed()) {
    pollfd fds[2] = {{in_fd, POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    int ready = ::poll(fds, signals.fd() >= 0 ? 2 : 1, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      fmt::print(err, "aup: poll: {}\n", std::strerror(errno));
      return 2;
    }
    if (signals.fd() >= 0 && (fds[1].revents & POLLIN)) {
      // Take the signal off the queue: left pending, it would be delivered
      // (and kill us) when the old mask comes back.
      signalfd_siginfo info;
      ssize_t got = ::read(signals.fd(), &info, sizeof info);
      (void)got;
      stop = true;
    }
    if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = batch.in().read_from(in_fd, batch.out());
    if (n < 0) {
      if (n == -EINTR || n == -EAGAIN) continue;
      fmt::print(err, "aup: cannot read requests: {}\n", std::strerror(static_cast<int>(-n)));
      return 2;
    }
    batch.take_all(o.fixed_now ? *o.fixed_now : now_ms());
    if (!write_all(batch.out(), out_fd, err)) return 2;
  }
  batch.finish(o.fixed_now ? *o.fixed_now : now_ms(), out_fd, err);
  durability.close();
  // Nothing could be committed for an event answered `unavailable`: that
  // is the store's failure, not the request's, and a script must see it.
  // A request that failed is an answer like any other, except with --bail.
  if (batch.unavailable()) {
    fmt::print(err, "aup run: some events were answered `unavailable`: the store could not commit them\n");
    return 1;
  }
  if (batch.bailed()) {
    fmt::print(err, "aup run: --bail: stopped at the first request that failed\n");
    return 1;
  }
  return 0;
}

}  // namespace aup::runtime

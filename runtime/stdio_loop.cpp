#include "runtime/stdio_loop.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/lines.h"
#include "runtime/pipeline.h"

namespace aup::runtime {

namespace {

bool write_all(int fd, const std::string& s, std::string& error) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = fmt::format("cannot write responses: {}", std::strerror(errno));
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// Hands every complete line read so far to the pipeline; the answers of
// what was committed go to `out`.
void take_lines(LineFramer& in, Service& service, Committer& batch, size_t max_line_bytes, double now,
                std::string& out) {
  auto deliver = [&out](uint64_t, std::string& answer) { out += answer; };
  std::string_view line;
  for (LineFramer::Piece p; (p = in.next(line)) != LineFramer::Piece::None;) {
    if (p == LineFramer::Piece::TooLong) {
      batch.add(0, too_long_answer(max_line_bytes));
      continue;
    }
    service.prepare(line);
    batch.take(0, now, line);
    if (batch.full()) batch.commit(deliver);
  }
  batch.commit(deliver);  // everything read together: one commit, then the answers
}

}  // namespace

int serve_stdio(Service& service, Durability& durability, const StdioOptions& o, int in_fd, int out_fd,
                std::FILE* err) {
  SignalFd signals;
  Committer batch(service, durability, o.max_batch);
  LineFramer in(o.max_line_bytes, 64 * 1024);
  std::string out;
  std::string error;
  bool stop = false;
  while (!in.eof() && !stop) {
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
    ssize_t n = in.read_from(in_fd);
    if (n < 0) {
      if (n == -EINTR || n == -EAGAIN) continue;
      fmt::print(err, "aup: cannot read requests: {}\n", std::strerror(static_cast<int>(-n)));
      return 2;
    }
    take_lines(in, service, batch, o.max_line_bytes, o.fixed_now ? *o.fixed_now : now_ms(), out);
    if (!out.empty()) {
      if (!write_all(out_fd, out, error)) {
        fmt::print(err, "aup: {}\n", error);
        return 2;
      }
      out.clear();
    }
  }
  durability.close();
  return 0;
}

}  // namespace aup::runtime

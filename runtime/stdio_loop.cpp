#include "stdio_loop.h"

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

#include "json.h"
#include "lines.h"

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


}  // namespace

// The answers of one batch, held until its commit says what they are.
class Batch {
 public:
  Batch(Service& service, Durability& durability, uint32_t max_events)
      : service_(service), durability_(durability), max_events_(max_events) {}

  void handle(std::string_view line, double now, std::string& out) {
    bool query = service_.prepare(line);
    if (query && events_ > 0) commit(out);  // a query reads only committed state
    service_.set_refusing(durability_.refusing());
    Pending p;
    Outcome o = service_.finish(now, p.response);
    p.applied = o == Outcome::EventApplied;
    if (p.applied) {
      p.id = std::string(service_.id());
      ++events_;
    }
    pending_.push_back(std::move(p));
    if (max_events_ && events_ >= max_events_) commit(out);
  }

  // An answer written by the loop itself (a line over the limit), kept in
  // its place among the others.
  void add(std::string response) {
    Pending p;
    p.response = std::move(response);
    pending_.push_back(std::move(p));
  }

  // Makes the batch durable, then appends its answers to `out`.
  void commit(std::string& out) {
    if (events_ > 0) {
      std::string error;
      if (!durability_.commit_batch(error)) {
        std::string message;
        json_append_string(message, error);  // says whether the batch was written
        for (Pending& p : pending_) {
          if (!p.applied) continue;
          std::string id = p.id.empty() ? "" : fmt::format(R"("id":{},)", p.id);
          p.response = fmt::format(R"({{{}"ok":false,"error":{{"code":"unavailable","message":{}}}}})", id, message);
          p.response += '\n';
        }
      }
    }
    for (Pending& p : pending_) out += p.response;
    pending_.clear();
    events_ = 0;
    durability_.between_batches();
  }

 private:
  struct Pending {
    std::string response;
    std::string id;  // raw JSON, for an answer that must change
    bool applied = false;
  };
  Service& service_;
  Durability& durability_;
  uint32_t max_events_;
  std::vector<Pending> pending_;
  uint32_t events_ = 0;
};

int serve_stdio(Service& service, Durability& durability, const StdioOptions& o, int in_fd, int out_fd,
                std::FILE* err) {
  SignalFd signals;
  Batch batch(service, durability, o.max_batch);
  // Room for one whole line plus a read's worth, allocated as lines need it.
  std::vector<char> buf(64 * 1024);
  size_t begin = 0, end = 0;
  bool skipping = false;  // inside a line that was too long
  bool eof = false, stop = false;
  std::string out;
  std::string error;

  auto handle = [&](std::string_view line, double now) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (blank(line)) return;
    batch.handle(line, o.fixed_now ? *o.fixed_now : now, out);
  };
  auto too_long = [&](double now) {
    (void)now;
    batch.add(too_long_answer(o.max_line_bytes));
  };

  while (!eof && !stop) {
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
    if (buf.size() - end < 4096) {
      // Make room: move the unfinished line to the front, grow if it fills
      // the buffer (up to the limit; past it the line is being skipped).
      std::memmove(buf.data(), buf.data() + begin, end - begin);
      end -= begin;
      begin = 0;
      if (buf.size() - end < 4096) buf.resize(std::min(buf.size() * 2, o.max_line_bytes + 65536));
    }
    ssize_t n = ::read(in_fd, buf.data() + end, buf.size() - end);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      fmt::print(err, "aup: cannot read requests: {}\n", std::strerror(errno));
      return 2;
    }
    double now = now_ms();
    if (n == 0) eof = true;
    end += static_cast<size_t>(n);
    // Every complete line in the buffer.
    size_t scan = begin;
    for (;;) {
      const char* nl = static_cast<const char*>(std::memchr(buf.data() + scan, '\n', end - scan));
      if (!nl) break;
      size_t line_end = static_cast<size_t>(nl - buf.data());
      if (skipping) {
        skipping = false;
      } else if (line_end - begin > o.max_line_bytes) {
        too_long(now);
      } else {
        handle(std::string_view(buf.data() + begin, line_end - begin), now);
      }
      begin = scan = line_end + 1;
    }
    // An unfinished line past the limit: answer now, drop its bytes.
    if (end - begin > o.max_line_bytes) {
      if (!skipping) too_long(now);
      skipping = true;
      begin = end;
    }
    if (eof && end > begin && !skipping) handle(std::string_view(buf.data() + begin, end - begin), now);
    if (begin == end) begin = end = 0;
    batch.commit(out);  // everything read together: one commit, then the answers
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

// What one connection speaks (or standard input): bytes cut into requests,
// and answers framed on the way out. The line protocol (LineFramer: one
// request object a line, one answer line each) or HTTP (HttpFramer,
// runtime/http.h); Framer holds either, so the server's loop is one.
//
// A framer also answers what it refuses itself (a line over the limit, an
// HTTP request with no route), in its place among the answers.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/answer.h"
#include "runtime/http.h"
#include "runtime/outbox.h"
#include "runtime/request.h"

namespace aup::runtime {

inline constexpr size_t kDefaultMaxLineBytes = size_t{16} << 20;

// Splits what a connection sends into request lines. One buffer, reused;
// it grows only while one line fills it, up to the line limit plus a
// read's worth (a longer line is answered bad_request and skipped up to
// its newline, without being held).
class LineFramer {
 public:
  explicit LineFramer(size_t max_line_bytes, size_t initial_bytes = 16 * 1024);

  // One read(2) into the free space: the bytes read, 0 at end of input
  // (which the framer then remembers), or -errno.
  ssize_t read_from(int fd);

  enum class Piece : uint8_t { None, Line, TooLong };
  // The next piece of what was read. A Line is a view into the buffer,
  // valid until the next read_from; it has no newline and no trailing
  // `\r`, and blank lines are skipped. After the end of input the last
  // line counts even without a newline.
  Piece next(std::string_view& line);

  // Whether next() would give a piece now.
  bool ready() const;
  bool eof() const { return eof_; }
  void set_eof() { eof_ = true; }
  // Bytes read but not yet taken by next().
  size_t buffered() const { return end_ - begin_; }
  size_t max_line_bytes() const { return max_line_bytes_; }

 private:
  void make_room();

  size_t max_line_bytes_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  bool skipping_ = false;  // inside a line over the limit
  bool eof_ = false;
};

enum class Protocol : uint8_t { Lines, Http };

class Framer {
 public:
  // `max_line_bytes`: the longest request line, or an HTTP request's
  // longest body; `http_timeout`: how long an HTTP request may take to
  // arrive whole.
  Framer(Protocol p, size_t max_line_bytes, std::chrono::milliseconds http_timeout);
  Framer(const Framer&) = delete;
  Framer& operator=(const Framer&) = delete;

  // One read (see LineFramer::read_from). Over HTTP what it read may owe
  // the peer an interim response (100 Continue): appended to `out`.
  ssize_t read_from(int fd, Outbox& out);
  enum class Piece : uint8_t { None, Request, Answer };
  // A Request: `request` views the framer's buffer until the next read or
  // next(). An Answer: one the framer made (a line over the limit, a
  // refused HTTP request), to be delivered in its place like any other.
  Piece next(RequestText& request, Answer& refusal);
  bool ready() const;
  Protocol protocol() const { return in_.index() == 0 ? Protocol::Lines : Protocol::Http; }
  // No more requests will come (the peer's end of input, or HTTP's last).
  bool eof() const;
  void set_eof();
  // Appends `a` to `out` as this protocol writes it: an answer line, or
  // the HTTP response to the oldest request not yet answered.
  void deliver(const Answer& a, Outbox& out);
  // A request that took too long to arrive is refused (HTTP; see http.h):
  // true when it was, and next() gives the refusal.
  bool expire(std::chrono::steady_clock::time_point now);

 private:
  std::variant<LineFramer, HttpFramer> in_;
};

// The answer to a line over the limit (it is skipped up to its newline).
void too_long(size_t max_line_bytes, Answer& out);

}  // namespace aup::runtime

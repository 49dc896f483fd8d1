// What one connection of `aup run --listen` speaks, behind one interface
// for both server loops (owner_server.h, server.h): the line protocol
// (LineFramer, pipeline.h) or HTTP (HttpFramer, http.h). Either way it
// cuts the bytes read into request lines the Service takes, answers what it
// refuses itself in its place, and frames each answer line on the way out.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include "runtime/http.h"
#include "runtime/pipeline.h"

namespace aup::runtime {

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
  // A Request: `request` is a request line, valid until the next read or
  // next(). An Answer: one the framer formed (a line over the limit, a
  // refused HTTP request), to be delivered in its place like any other.
  Piece next(std::string_view& request, std::string& answer);
  bool ready() const;
  // No more requests will come (the peer's end of input, or HTTP's last).
  bool eof() const;
  void set_eof();
  // Appends answer line `answer` to `out`, framed: as it is, or as the
  // HTTP response to the oldest request not yet answered.
  void deliver(std::string_view answer, Outbox& out);
  // A request that took too long to arrive is refused (HTTP; see http.h):
  // true when it was, and next() gives the refusal.
  bool expire(std::chrono::steady_clock::time_point now);

 private:
  size_t max_line_bytes_;
  std::variant<LineFramer, HttpFramer> in_;
};

}  // namespace aup::runtime

#include "runtime/framer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace aup::runtime {

void too_long(size_t max_line_bytes, Answer& out) {
  out.reset();
  out.fail(Code::BadRequest, fmt::format("line longer than {} bytes", max_line_bytes));
}

// ---- LineFramer --------------------------------------------------------------------------

namespace {
// Whether a request line holds nothing (ignored, not answered).
bool blank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}
// Each read asks for at least this much room, so a long line is not read
// a few bytes at a time.
constexpr size_t kMinReadBytes = 4096;
}  // namespace

LineFramer::LineFramer(size_t max_line_bytes, size_t initial_bytes)
    : max_line_bytes_(max_line_bytes), buf_(std::max(initial_bytes, 2 * kMinReadBytes)) {}

void LineFramer::make_room() {
  if (buf_.size() - end_ >= kMinReadBytes) return;
  // Move the unfinished line to the front; grow only when it fills the
  // buffer, up to the line limit (past it the line is being skipped).
  std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
  if (buf_.size() - end_ < kMinReadBytes) buf_.resize(std::min(buf_.size() * 2, max_line_bytes_ + 65536));
}

ssize_t LineFramer::read_from(int fd) {
  make_room();
  ssize_t n = ::read(fd, buf_.data() + end_, buf_.size() - end_);
  if (n > 0) {
    end_ += static_cast<size_t>(n);
    return n;
  }
  if (n == 0) {
    eof_ = true;
    return 0;
  }
  return -errno;
}

LineFramer::Piece LineFramer::next(std::string_view& line) {
  for (;;) {
    const char* base = buf_.data();
    const char* nl = static_cast<const char*>(std::memchr(base + begin_, '\n', end_ - begin_));
    if (!nl) {
      if (end_ - begin_ > max_line_bytes_) {
        // An unfinished line already over the limit: answered now, its
        // bytes dropped as they come.
        bool first = !skipping_;
        skipping_ = true;
        begin_ = end_ = 0;
        if (first) return Piece::TooLong;
        return Piece::None;
      }
      if (eof_ && end_ > begin_ && !skipping_) {
        line = std::string_view(base + begin_, end_ - begin_);  // the last line, without a newline
        begin_ = end_;
      } else {
        if (begin_ == end_) begin_ = end_ = 0;
        return Piece::None;
      }
    } else {
      size_t line_end = static_cast<size_t>(nl - base);
      line = std::string_view(base + begin_, line_end - begin_);
      begin_ = line_end + 1;
      if (skipping_) {
        skipping_ = false;  // the newline that ends the long line
        continue;
      }
      if (line.size() > max_line_bytes_) return Piece::TooLong;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!blank(line)) return Piece::Line;
  }
}

bool LineFramer::ready() const {
  if (end_ - begin_ > max_line_bytes_) return !skipping_;
  if (std::memchr(buf_.data() + begin_, '\n', end_ - begin_)) return true;
  return eof_ && end_ > begin_ && !skipping_;
}

// ---- Framer ------------------------------------------------------------------------------

Framer::Framer(Protocol p, size_t max_line_bytes, std::chrono::milliseconds http_timeout)
    : in_(p == Protocol::Http ? decltype(in_)(std::in_place_type<HttpFramer>, max_line_bytes, http_timeout)
                              : decltype(in_)(std::in_place_type<LineFramer>, max_line_bytes)) {}

ssize_t Framer::read_from(int fd, Outbox& out) {
  auto* http = std::get_if<HttpFramer>(&in_);
  if (!http) return std::get<LineFramer>(in_).read_from(fd);
  ssize_t n = http->read_from(fd);
  out.append([&](std::string& bytes) { http->take_interim(bytes); });
  return n;
}

Framer::Piece Framer::next(RequestText& request, Answer& refusal) {
  if (auto* http = std::get_if<HttpFramer>(&in_)) {
    switch (http->next(request, refusal)) {
      case HttpFramer::Piece::None: return Piece::None;
      case HttpFramer::Piece::Request: return Piece::Request;
      case HttpFramer::Piece::Answer: return Piece::Answer;
    }
  }
  auto& lines = std::get<LineFramer>(in_);
  std::string_view line;
  switch (lines.next(line)) {
    case LineFramer::Piece::None: return Piece::None;
    case LineFramer::Piece::Line: request = RequestText::of_line(line); return Piece::Request;
    case LineFramer::Piece::TooLong: break;
  }
  too_long(lines.max_line_bytes(), refusal);
  return Piece::Answer;
}

bool Framer::ready() const {
  return std::visit([](const auto& f) { return f.ready(); }, in_);
}

bool Framer::eof() const {
  return std::visit([](const auto& f) { return f.eof(); }, in_);
}

void Framer::set_eof() {
  std::visit([](auto& f) { f.set_eof(); }, in_);
}

void Framer::deliver(const Answer& a, Outbox& out) {
  auto* http = std::get_if<HttpFramer>(&in_);
  out.append([&](std::string& bytes) {
    if (http) {
      http->frame(a, bytes);
    } else {
      append_answer_line(bytes, a);
    }
  });
}

bool Framer::expire(std::chrono::steady_clock::time_point now) {
  auto* http = std::get_if<HttpFramer>(&in_);
  return http && http->expire(now);
}

}  // namespace aup::runtime

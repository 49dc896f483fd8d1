#include "runtime/framer.h"

namespace aup::runtime {

Framer::Framer(Protocol p, size_t max_line_bytes, std::chrono::milliseconds http_timeout)
    : max_line_bytes_(max_line_bytes),
      in_(p == Protocol::Http ? decltype(in_)(std::in_place_type<HttpFramer>, max_line_bytes, http_timeout)
                              : decltype(in_)(std::in_place_type<LineFramer>, max_line_bytes)) {}

ssize_t Framer::read_from(int fd, Outbox& out) {
  auto* http = std::get_if<HttpFramer>(&in_);
  if (!http) return std::get<LineFramer>(in_).read_from(fd);
  ssize_t n = http->read_from(fd);
  out.append_framed([&](std::string& bytes) { http->take_interim(bytes); });
  return n;
}

Framer::Piece Framer::next(std::string_view& request, std::string& answer) {
  if (auto* http = std::get_if<HttpFramer>(&in_)) {
    switch (http->next(request, answer)) {
      case HttpFramer::Piece::None: return Piece::None;
      case HttpFramer::Piece::Request: return Piece::Request;
      case HttpFramer::Piece::Answer: return Piece::Answer;
    }
  }
  switch (std::get<LineFramer>(in_).next(request)) {
    case LineFramer::Piece::None: return Piece::None;
    case LineFramer::Piece::Line: return Piece::Request;
    case LineFramer::Piece::TooLong: break;
  }
  answer = too_long_answer(max_line_bytes_);
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

void Framer::deliver(std::string_view answer, Outbox& out) {
  auto* http = std::get_if<HttpFramer>(&in_);
  if (!http) {
    out.append(answer);
    return;
  }
  out.append_framed([&](std::string& bytes) { http->frame(answer, bytes); });
}

bool Framer::expire(std::chrono::steady_clock::time_point now) {
  auto* http = std::get_if<HttpFramer>(&in_);
  return http && http->expire(now);
}

}  // namespace aup::runtime

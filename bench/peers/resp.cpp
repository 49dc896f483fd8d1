#include "bench/peers/resp.h"

#include <charconv>
#include <stdexcept>

namespace aup::bench::peers::resp {

namespace {

constexpr int kMaxDepth = 8;

// The line after the type byte at `at`, without its \r\n; nothing when
// the \r\n has not arrived.
std::optional<std::string_view> line_at(std::string_view in, size_t at) {
  size_t end = in.find("\r\n", at);
  if (end == std::string_view::npos) return std::nullopt;
  return in.substr(at, end - at);
}

int64_t to_integer(std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    throw std::runtime_error("not a RESP integer: `" + std::string(text) + "`");
  }
  return v;
}

// reply -> type-byte line [bulk bytes \r\n | reply*]
std::optional<Reply> parse_at(std::string_view in, size_t& at, int depth) {
  if (depth > kMaxDepth) throw std::runtime_error("a RESP reply nested too deep");
  if (at >= in.size()) return std::nullopt;
  Reply r;
  r.type = in[at];
  std::optional<std::string_view> line = line_at(in, at + 1);
  if (!line) return std::nullopt;
  size_t next = at + 1 + line->size() + 2;
  switch (r.type) {
    case '+':
    case '-':
      r.text = *line;
      break;
    case ':':
      r.integer = to_integer(*line);
      break;
    case '$': {
      int64_t n = to_integer(*line);
      if (n >= 0) {
        size_t len = static_cast<size_t>(n);
        if (in.size() < next + len + 2) return std::nullopt;
        r.text = in.substr(next, len);
        next += len + 2;
      }
      break;
    }
    case '*': {
      int64_t n = to_integer(*line);
      for (int64_t i = 0; i < n; ++i) {
        std::optional<Reply> item = parse_at(in, next, depth + 1);
        if (!item) return std::nullopt;
        r.items.push_back(std::move(*item));
      }
      break;
    }
    default:
      throw std::runtime_error("not a RESP reply: type byte " + std::to_string(static_cast<unsigned char>(r.type)));
  }
  at = next;
  return r;
}

}  // namespace

void append_command(std::string& out, const std::vector<std::string_view>& args) {
  out += '*';
  out += std::to_string(args.size());
  out += "\r\n";
  for (std::string_view a : args) {
    out += '$';
    out += std::to_string(a.size());
    out += "\r\n";
    out += a;
    out += "\r\n";
  }
}

std::optional<Reply> parse(std::string_view in, size_t& used) {
  size_t at = 0;
  std::optional<Reply> r = parse_at(in, at, 0);
  if (r) used = at;
  return r;
}

std::vector<Reply> receive(Stream& s, size_t count) {
  std::vector<Reply> replies;
  while (replies.size() < count) {
    size_t used = 0;
    std::optional<Reply> r = parse(s.input(), used);
    if (!r) {
      s.fill();
      continue;
    }
    s.consume(used);
    replies.push_back(std::move(*r));
  }
  return replies;
}

Reply call(Stream& s, const std::vector<std::string_view>& args) {
  std::string out;
  append_command(out, args);
  s.send(out);
  return std::move(receive(s, 1).front());
}

}  // namespace aup::bench::peers::resp

#include "runtime/json.h"

#include <fmt/format.h>

#include <cassert>
#include <charconv>
#include <cmath>
#include <cstring>

namespace aup::runtime {

namespace {
// A byte of the input as an error message shows it: itself when it is
// printable ASCII, else its value. A message is sent back in an answer, and
// a lone byte of a longer UTF-8 sequence (or a control character) would
// make that answer itself invalid.
std::string shown(char c) {
  auto b = static_cast<unsigned char>(c);
  return b > 0x20 && b < 0x7F ? fmt::format("`{}`", c) : fmt::format("byte 0x{:02X}", b);
}
}  // namespace

class JsonParser {
 public:
  JsonParser(JsonDoc& doc, std::string_view text) : doc_(doc), s_(text) {}

  bool run(std::string& error) {
    doc_.nodes_.clear();
    doc_.scratch_.clear();
    doc_.scratch_.reserve(s_.size());  // decoded text is never longer
    skip_ws();
    if (!value(0)) {
      error = error_;
      doc_.error_at_ = error_at_;
      return false;
    }
    skip_ws();
    if (i_ != s_.size()) {
      error = fmt::format("unexpected {} after the value at byte {}", shown(s_[i_]), i_);
      doc_.error_at_ = i_;
      return false;
    }
    return true;
  }

 private:
  bool bad(std::string what) {
    if (error_.empty()) {
      error_ = fmt::format("{} at byte {}", what, i_);
      error_at_ = i_;
    }
    return false;
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) ++i_;
  }
  bool literal(std::string_view word, JsonNode::Kind kind) {
    if (s_.substr(i_, word.size()) != word) return bad("invalid literal");
    add(kind, i_, i_ + word.size());
    i_ += word.size();
    return true;
  }
  uint32_t add(JsonNode::Kind kind, size_t begin, size_t end) {
    JsonNode n;
    n.kind = kind;
    n.raw = s_.substr(begin, end - begin);
    doc_.nodes_.push_back(n);
    uint32_t index = static_cast<uint32_t>(doc_.nodes_.size() - 1);
    doc_.nodes_.back().next = index + 1;
    return index;
  }

  bool value(uint32_t depth) {
    if (i_ >= s_.size()) return bad("unexpected end of input");
    switch (s_[i_]) {
      case '{': return object(depth);
      case '[': return array(depth);
      case '"': return string();
      case 't': return literal("true", JsonNode::Kind::True);
      case 'f': return literal("false", JsonNode::Kind::False);
      case 'n': return literal("null", JsonNode::Kind::Null);
      default:
        if (s_[i_] == '-' || (s_[i_] >= '0' && s_[i_] <= '9')) return number();
        return bad(fmt::format("unexpected {}", shown(s_[i_])));
    }
  }

  bool object(uint32_t depth) {
    if (depth >= kMaxJsonDepth) return bad(fmt::format("nesting deeper than {}", kMaxJsonDepth));
    size_t begin = i_++;
    uint32_t self = add(JsonNode::Kind::Object, begin, begin);
    uint32_t count = 0;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
    } else {
      for (;;) {
        skip_ws();
        if (i_ >= s_.size() || s_[i_] != '"') return bad("expected a member name (a string)");
        if (!string()) return false;
        skip_ws();
        if (i_ >= s_.size() || s_[i_] != ':') return bad("expected `:`");
        ++i_;
        skip_ws();
        if (!value(depth + 1)) return false;
        ++count;
        skip_ws();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == '}') {
          ++i_;
          break;
        }
        return bad("expected `,` or `}`");
      }
    }
    finish(self, begin, count);
    return true;
  }

  bool array(uint32_t depth) {
    if (depth >= kMaxJsonDepth) return bad(fmt::format("nesting deeper than {}", kMaxJsonDepth));
    size_t begin = i_++;
    uint32_t self = add(JsonNode::Kind::Array, begin, begin);
    uint32_t count = 0;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
    } else {
      for (;;) {
        skip_ws();
        if (!value(depth + 1)) return false;
        ++count;
        skip_ws();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == ']') {
          ++i_;
          break;
        }
        return bad("expected `,` or `]`");
      }
    }
    finish(self, begin, count);
    return true;
  }

  void finish(uint32_t self, size_t begin, uint32_t count) {
    JsonNode& n = doc_.nodes_[self];
    n.count = count;
    n.next = static_cast<uint32_t>(doc_.nodes_.size());
    n.raw = s_.substr(begin, i_ - begin);
  }

  // RFC 8259 number grammar, then a correctly rounded conversion.
  bool number() {
    size_t begin = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size()) return bad("expected digits");
    // The whole part's value as it is read: up to 15 digits it is exact in
    // a double, so an integer (ids, counts: most numbers in requests) needs
    // no from_chars.
    uint64_t whole = 0;
    size_t digits_begin = i_;
    if (s_[i_] == '0') {
      ++i_;
    } else if (s_[i_] >= '1' && s_[i_] <= '9') {
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') whole = whole * 10 + static_cast<uint64_t>(s_[i_++] - '0');
    } else {
      return bad("expected digits");
    }
    constexpr size_t kExactDigits = 15;
    bool integer = i_ - digits_begin <= kExactDigits &&
                   !(i_ < s_.size() && (s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E'));
    if (integer) {
      uint32_t self = add(JsonNode::Kind::Number, begin, i_);
      auto value = static_cast<double>(whole);
      doc_.nodes_[self].num = s_[begin] == '-' ? -value : value;
      return true;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      size_t d = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == d) return bad("expected digits after `.`");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      size_t d = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == d) return bad("expected exponent digits");
    }
    uint32_t self = add(JsonNode::Kind::Number, begin, i_);
    JsonNode& n = doc_.nodes_[self];
    const char* first = s_.data() + begin;
    const char* last = s_.data() + i_;
    auto [end, ec] = std::from_chars(first, last, n.num);
    if (ec == std::errc::result_out_of_range) {
      // Overflow is not a number aup can hold; underflow rounds to zero
      // (or a subnormal), which is the correctly rounded value.
      std::string copy(first, last);
      n.num = std::strtod(copy.c_str(), nullptr);
      n.finite = std::isfinite(n.num);
    } else if (ec != std::errc() || end != last) {
      return bad("malformed number");
    }
    return true;
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  bool hex4(uint32_t& out) {
    if (i_ + 4 > s_.size()) return bad("truncated \\u escape");
    out = 0;
    for (int k = 0; k < 4; ++k) {
      int h = hex(s_[i_ + k]);
      if (h < 0) return bad("bad \\u escape");
      out = out * 16 + static_cast<uint32_t>(h);
    }
    i_ += 4;
    return true;
  }
  static void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  // Length of the valid UTF-8 sequence at i_, or 0 (RFC 3629: no overlong
  // forms, no surrogates, nothing above U+10FFFF).
  size_t utf8_length() const {
    auto b = [&](size_t k) { return static_cast<unsigned char>(s_[i_ + k]); };
    auto cont = [&](size_t k) { return i_ + k < s_.size() && (b(k) & 0xC0) == 0x80; };
    unsigned char c = b(0);
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
      if (!cont(1) || !cont(2)) return 0;
      if (c == 0xE0 && b(1) < 0xA0) return 0;
      if (c == 0xED && b(1) >= 0xA0) return 0;
      return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
      if (!cont(1) || !cont(2) || !cont(3)) return 0;
      if (c == 0xF0 && b(1) < 0x90) return 0;
      if (c == 0xF4 && b(1) >= 0x90) return 0;
      return 4;
    }
    return 0;
  }

  bool string() {
    size_t begin = i_++;
    size_t run = i_;
    bool escaped = false;
    size_t scratch_begin = doc_.scratch_.size();
    std::string& sc = doc_.scratch_;
    while (i_ < s_.size()) {
      unsigned char c = static_cast<unsigned char>(s_[i_]);
      // Printable ASCII other than `"` and `\`: nearly every byte of a
      // request's names and texts, taken with one range test and no call.
      if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
        ++i_;
        continue;
      }
      if (c == '"') break;
      if (c < 0x20) return bad("control character in a string");
      if (c == '\\') {
        // The plain run since the last escape, then the escape decoded.
        escaped = true;
        sc.append(s_.data() + run, i_ - run);
        if (++i_ >= s_.size()) return bad("truncated escape");
        char e = s_[i_++];
        switch (e) {
          case '"': sc += '"'; break;
          case '\\': sc += '\\'; break;
          case '/': sc += '/'; break;
          case 'b': sc += '\b'; break;
          case 'f': sc += '\f'; break;
          case 'n': sc += '\n'; break;
          case 'r': sc += '\r'; break;
          case 't': sc += '\t'; break;
          case 'u': {
            uint32_t cp;
            if (!hex4(cp)) return false;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              uint32_t lo;
              if (i_ + 1 >= s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') return bad("lone surrogate");
              i_ += 2;
              if (!hex4(lo)) return false;
              if (lo < 0xDC00 || lo > 0xDFFF) return bad("lone surrogate");
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
              return bad("lone surrogate");
            }
            put_utf8(sc, cp);
            break;
          }
          default: return bad(fmt::format("unknown escape: {} after `\\`", shown(e)));
        }
        run = i_;
        continue;
      }
      size_t n = utf8_length();
      if (n == 0) return bad("invalid UTF-8");
      i_ += n;  // copied with its run, at the next escape or the end
    }
    if (i_ >= s_.size()) return bad("unterminated string");
    if (escaped) sc.append(s_.data() + run, i_ - run);
    ++i_;  // the closing quote
    uint32_t self = add(JsonNode::Kind::String, begin, i_);
    if (escaped) {
      doc_.nodes_[self].str = std::string_view(sc.data() + scratch_begin, sc.size() - scratch_begin);
    } else {
      doc_.nodes_[self].str = s_.substr(begin + 1, i_ - begin - 2);
    }
    return true;
  }

  JsonDoc& doc_;
  std::string_view s_;
  size_t i_ = 0;
  std::string error_;
  size_t error_at_ = 0;
};

bool JsonDoc::parse(std::string_view text, std::string& error) {
  JsonParser p(*this, text);
  return p.run(error);
}

bool JsonDoc::parse_copy(std::string_view text, std::string& error) {
  copy_.assign(text);
  return parse(copy_, error);
}

void json_append_string(std::string& out, std::string_view s) {
  out += '"';
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      }
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

void json_append_number(std::string& out, double d) {
  assert(std::isfinite(d));
  char buf[32];
  // A whole number below 2^52 (ids, counts, cents) in integer digits, which
  // costs a fraction of the shortest-digits search. Below 2^52 a double's
  // neighbours are within 0.5, so its shortest digits are the integer's,
  // less trailing zeros; to_chars writes them as `1e+06` or `1.5e+06` when
  // that is shorter than the integer (the integer on a tie), and so do we.
  // -0 is left to to_chars, which writes it `-0`.
  if (std::fabs(d) < 0x1p52 && d == std::trunc(d) && !(d == 0 && std::signbit(d))) {
    char* first = buf;
    if (d < 0) *first++ = '-';
    auto [end, ec] = std::to_chars(first, buf + sizeof buf, static_cast<uint64_t>(std::fabs(d)));
    auto digits = static_cast<size_t>(end - first);
    size_t zeros = 0;
    while (zeros + 1 < digits && end[-1 - static_cast<ptrdiff_t>(zeros)] == '0') ++zeros;
    size_t significant = digits - zeros;
    size_t scientific = significant + (significant > 1 ? 1 : 0) + 4;  // `e+XX`: the exponent is below 16
    if (digits <= scientific) {
      out.append(buf, end);
      return;
    }
  }
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  out.append(buf, end);
}

uint32_t JsonDoc::member(uint32_t obj, std::string_view key) const {
  if (nodes_[obj].kind != JsonNode::Kind::Object) return 0;
  uint32_t k = first_child(obj);
  for (uint32_t i = 0; i < nodes_[obj].count; ++i, k = after(k + 1)) {
    if (nodes_[k].str == key) return k + 1;
  }
  return 0;
}

}  // namespace aup::runtime

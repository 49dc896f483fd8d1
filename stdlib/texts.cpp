#include "stdlib/texts.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace aup::stdlib {

namespace {

constexpr uint64_t kLowBits = 0x0101010101010101ull;
constexpr uint64_t kHighBits = 0x8080808080808080ull;

uint64_t load8(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

// The continuation bytes (10xxxxxx) of `w`: 1 in the low bit of each
// such byte lane, 0 elsewhere.
uint64_t continuations(uint64_t w) { return (w >> 7) & ~(w >> 6) & kLowBits; }

// Bytes of `w` that start a code point. The lanes are summed by a multiply
// (each is 0 or 1, so the top byte cannot carry), not std::popcount, which
// without -mpopcnt is a library call.
int starts_in(uint64_t w) { return 8 - static_cast<int>((continuations(w) * kLowBits) >> 56); }

bool is_start(char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }

bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// The first `s` (not empty) in t[from..]. memchr for its first byte, then
// memcmp for the rest: most searches meet few false starts, and glibc's
// memchr is vectorized. Many false starts (`aaaa...` for `aab`) would make
// that O(n m), so once they have cost more than the bytes scanned, the
// rest goes to memmem, glibc's two-way search, linear in the worst case.
const char* find_bytes(std::string_view t, size_t from, std::string_view s) {
  if (s.size() > t.size() - from) return nullptr;
  const char* start = t.data() + from;
  const char* p = start;
  const char* last = t.data() + t.size() - s.size();
  size_t false_starts = 0;
  while (p <= last) {
    p = static_cast<const char*>(std::memchr(p, s[0], static_cast<size_t>(last - p) + 1));
    if (!p) return nullptr;
    if (std::memcmp(p + 1, s.data() + 1, s.size() - 1) == 0) return p;
    false_starts += s.size();
    ++p;
    if (false_starts > 64 + static_cast<size_t>(p - start)) {
      size_t rest = static_cast<size_t>(t.data() + t.size() - p);
      return static_cast<const char*>(memmem(p, rest, s.data(), s.size()));
    }
  }
  return nullptr;
}

void map_case(std::string_view t, std::string& out, bool* same, char lo, char hi) {
  size_t i = 0;
  while (i < t.size() && !(t[i] >= lo && t[i] <= hi)) ++i;
  *same = i == t.size();
  if (*same) return;
  out.assign(t);
  for (; i < out.size(); ++i) {
    if (out[i] >= lo && out[i] <= hi) out[i] = static_cast<char>(out[i] ^ 0x20);
  }
}

}  // namespace

size_t code_points(std::string_view t) {
  // Every byte less the continuation bytes, counted 8 at a time in byte
  // lanes; a lane holds at most 255, so the lanes are summed at least
  // every 255 words (into 16-bit lanes first: 8 of 255 would carry).
  size_t n = t.size();
  size_t i = 0;
  while (i + 8 <= t.size()) {
    uint64_t lanes = 0;
    size_t stop = std::min(t.size() - 7, i + 8 * 255);
    for (; i < stop; i += 8) lanes += continuations(load8(t.data() + i));
    constexpr uint64_t kEvenBytes = 0x00FF00FF00FF00FFull;
    uint64_t pairs = (lanes & kEvenBytes) + ((lanes >> 8) & kEvenBytes);
    n -= (pairs * 0x0001000100010001ull) >> 48;
  }
  for (; i < t.size(); ++i) n -= !is_start(t[i]);
  return n;
}

size_t byte_offset(std::string_view t, size_t n) {
  size_t count = 0;
  size_t i = 0;
  // ASCII 32 bytes at a time while the code point sought lies past them
  // (a cut in a long ASCII text costs a few loads and one test each),
  for (; i + 32 <= t.size() && count + 32 <= n; i += 32, count += 32) {
    const char* p = t.data() + i;
    if (((load8(p) | load8(p + 8) | load8(p + 16) | load8(p + 24)) & kHighBits) != 0) break;
  }
  // then whole words while it does.
  for (; i + 8 <= t.size(); i += 8) {
    uint64_t w = load8(t.data() + i);
    int starts = (w & kHighBits) == 0 ? 8 : starts_in(w);
    if (count + starts > n) break;
    count += starts;
  }
  for (; i < t.size(); ++i) {
    if (!is_start(t[i])) continue;
    if (count == n) return i;
    ++count;
  }
  return t.size();
}

TextStatus whole_position(double p, size_t limit, size_t* out) {
  if (std::isnan(p) || p != std::floor(p)) return TextStatus::NotWhole;
  *out = p <= 0 ? 0 : p >= static_cast<double>(limit) ? limit : static_cast<size_t>(p);
  return TextStatus::Ok;
}

TextStatus text_slice(std::string_view t, double a, double b, std::string_view* out) {
  size_t from = 0, to = 0;
  // Clamped to the bytes first: a position past the code points is past
  // the bytes too, and byte_offset stops at the end.
  if (whole_position(a, t.size(), &from) != TextStatus::Ok) return TextStatus::NotWhole;
  if (whole_position(b, t.size(), &to) != TextStatus::Ok) return TextStatus::NotWhole;
  if (to <= from) {
    *out = {};
    return TextStatus::Ok;
  }
  size_t start = byte_offset(t, from);
  std::string_view rest = t.substr(start);
  *out = rest.substr(0, byte_offset(rest, to - from));
  return TextStatus::Ok;
}

bool text_contains(std::string_view t, std::string_view s) { return s.empty() || find_bytes(t, 0, s) != nullptr; }

double text_find(std::string_view t, std::string_view s) {
  if (s.empty()) return 0;
  const char* at = find_bytes(t, 0, s);
  if (!at) return -1;
  return static_cast<double>(code_points(t.substr(0, static_cast<size_t>(at - t.data()))));
}

TextStatus text_replace(std::string_view t, std::string_view from, std::string_view to, std::string& out) {
  out.clear();
  if (from.empty()) {
    out.assign(t);
    return TextStatus::Ok;
  }
  size_t i = 0;
  while (const char* at = find_bytes(t, i, from)) {
    size_t p = static_cast<size_t>(at - t.data());
    if (out.size() + (p - i) + to.size() > kMaxResultTextBytes) return TextStatus::TooLong;
    out.append(t.substr(i, p - i));
    out.append(to);
    i = p + from.size();
  }
  if (out.size() + (t.size() - i) > kMaxResultTextBytes) return TextStatus::TooLong;
  out.append(t.substr(i));
  return TextStatus::Ok;
}

void text_split(std::string_view t, std::string_view sep, std::vector<std::string_view>& out) {
  out.clear();
  if (sep.empty()) {
    size_t i = 0;
    while (i < t.size()) {
      size_t j = i + 1;
      while (j < t.size() && !is_start(t[j])) ++j;
      out.push_back(t.substr(i, j - i));
      i = j;
    }
    return;
  }
  size_t i = 0;
  while (const char* at = find_bytes(t, i, sep)) {
    size_t p = static_cast<size_t>(at - t.data());
    out.push_back(t.substr(i, p - i));
    i = p + sep.size();
  }
  out.push_back(t.substr(i));
}

TextStatus text_join(std::span<const std::string_view> parts, std::string_view sep, std::string& out) {
  out.clear();
  size_t n = parts.empty() ? 0 : sep.size() * (parts.size() - 1);
  for (std::string_view p : parts) n += p.size();
  if (n > kMaxResultTextBytes) return TextStatus::TooLong;
  out.reserve(n);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.append(sep);
    out.append(parts[i]);
  }
  return TextStatus::Ok;
}

std::string_view text_trim(std::string_view t) {
  size_t a = 0, b = t.size();
  while (a < b && is_space(t[a])) ++a;
  while (b > a && is_space(t[b - 1])) --b;
  return t.substr(a, b - a);
}

void text_upper(std::string_view t, std::string& out, bool* same) { map_case(t, out, same, 'a', 'z'); }
void text_lower(std::string_view t, std::string& out, bool* same) { map_case(t, out, same, 'A', 'Z'); }

TextStatus text_pad(std::string_view t, double width, std::string_view fill, bool left, std::string& out,
                    bool* same) {
  size_t w = 0;
  if (whole_position(width, kMaxResultTextBytes + size_t{1}, &w) != TextStatus::Ok) return TextStatus::NotWhole;
  if (fill.empty() || code_points(fill) != 1) return TextStatus::BadFill;
  size_t have = code_points(t);
  *same = w <= have;
  if (*same) return TextStatus::Ok;
  size_t add = w - have;
  if (t.size() + add * fill.size() > kMaxResultTextBytes) return TextStatus::TooLong;
  out.clear();
  out.reserve(t.size() + add * fill.size());
  if (!left) out.append(t);
  for (size_t i = 0; i < add; ++i) out.append(fill);
  if (left) out.append(t);
  return TextStatus::Ok;
}

TextStatus text_repeat(std::string_view t, double n, std::string& out) {
  size_t times = 0;
  if (whole_position(n, kMaxResultTextBytes + size_t{1}, &times) != TextStatus::Ok) return TextStatus::NotWhole;
  out.clear();
  if (t.empty() || times == 0) return TextStatus::Ok;
  if (times > kMaxResultTextBytes / t.size()) return TextStatus::TooLong;
  out.reserve(t.size() * times);
  for (size_t i = 0; i < times; ++i) out.append(t);
  return TextStatus::Ok;
}

bool text_eq_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x ^ 0x20);
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y ^ 0x20);
    if (x != y) return false;
  }
  return true;
}

}  // namespace aup::stdlib

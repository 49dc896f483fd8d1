#include "vm/key.h"

#include <array>
#include <bit>
#include <cassert>
#include <charconv>
#include <cmath>

#include "vm/bytes.h"

namespace aup::vm {

namespace {

constexpr double kCompactBound = 0x1p53;  // |x| below it: the compact form
constexpr unsigned char kLargeNegativeTag = 0x02;
constexpr unsigned char kNegativeTag = 0x3f;  // minus k: p < 0 in k bytes
constexpr unsigned char kSmallTag = 0x40;     // plus p: 0 <= p < 64 in the tag itself
constexpr int64_t kSmallLimit = 64;
constexpr unsigned char kPositiveTag = 0x80;  // plus k: p >= 64 in k bytes
constexpr unsigned char kLargePositiveTag = 0xc0;
constexpr size_t kMaxNumBytes = 1 + 8 + 8;  // tag, whole part, fraction

void put_be(uint64_t v, uint32_t bytes, char* out) {
  for (uint32_t i = 0; i < bytes; ++i) out[i] = static_cast<char>(v >> (8 * (bytes - 1 - i)));
}

uint64_t get_be(const char* in, uint32_t bytes) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

uint32_t bytes_for(uint64_t v) {
  uint32_t k = 1;
  while (k < 8 && (v >> (8 * k)) != 0) ++k;
  return k;
}

// The compact form's parts: the whole part t = trunc(x) and the fraction
// f = x - t (exact: f's bits are some of x's), and p, which orders them:
// 2t for a whole number, 2t + 1 with a positive fraction, 2t - 1 with a
// negative one (-1.5 < -1 < -0.5 < 0 < 0.5: p = -3, -2, -1, 0, 1).
struct Compact {
  int64_t p;
  double fraction;
};

Compact compact(double x) {
  double whole = std::trunc(x);
  double fraction = x - whole;
  int64_t p = 2 * static_cast<int64_t>(whole) + (fraction > 0 ? 1 : fraction < 0 ? -1 : 0);
  return Compact{p, fraction};
}

// Whole numbers 0 <= x < 2^52 (ids and counts: nearly every key field): p =
// 2x from an integer conversion, with no trunc (a libm call on baseline
// x86-64), no fraction and the byte count from the bit width. True and p
// for them; compact() does the rest.
bool whole_p(double x, uint64_t* p) {
  if (!(x >= 0 && x < 0x1p52)) return false;
  // Through int64_t, which holds every such x: baseline x86-64 converts
  // between doubles and signed integers in one instruction each, and
  // between doubles and unsigned ones in a branching sequence.
  auto whole = static_cast<int64_t>(x);
  *p = 2 * static_cast<uint64_t>(whole);
  return static_cast<double>(whole) == x;
}

uint32_t whole_bytes(uint64_t p) { return (static_cast<uint32_t>(std::bit_width(p)) + 7) / 8; }

size_t num_bytes(double x) {
  if (uint64_t p; whole_p(x, &p)) return p < kSmallLimit ? 1 : 1 + whole_bytes(p);
  if (!(std::fabs(x) < kCompactBound)) return 9;
  Compact c = compact(x);
  size_t fraction = c.fraction != 0 ? 8 : 0;
  if (c.p >= 0 && c.p < kSmallLimit) return 1 + fraction;
  uint64_t magnitude = c.p < 0 ? static_cast<uint64_t>(-c.p) : static_cast<uint64_t>(c.p);
  return 1 + bytes_for(magnitude) + fraction;
}

// Every number but the whole ones in [0, 2^52): negatives, fractions, large.
[[gnu::noinline]] char* put_other_num(double x, char* out) {
  if (!(std::fabs(x) < kCompactBound)) {
    *out++ = static_cast<char>(x < 0 ? kLargeNegativeTag : kLargePositiveTag);
    put_be(num_order(x), 8, out);
    return out + 8;
  }
  Compact c = compact(x);
  if (c.p >= 0 && c.p < kSmallLimit) {
    *out++ = static_cast<char>(kSmallTag + c.p);
  } else {
    uint64_t magnitude = c.p < 0 ? static_cast<uint64_t>(-c.p) : static_cast<uint64_t>(c.p);
    uint32_t k = bytes_for(magnitude);
    *out++ = static_cast<char>(c.p < 0 ? kNegativeTag - k : kPositiveTag + k);
    put_be(c.p < 0 ? (~uint64_t{0} >> (64 - 8 * k)) - magnitude : magnitude, k, out);
    out += k;
  }
  if (c.fraction != 0) {
    put_be(num_order(c.fraction), 8, out);
    out += 8;
  }
  return out;
}

// Whole numbers below 2^52 (nearly every key component) inline; encoding
// a composite key is a loop over these.
inline char* put_num(double x, char* out) {
  if (uint64_t p; whole_p(x, &p)) {
    if (p < kSmallLimit) {
      *out++ = static_cast<char>(kSmallTag + p);
      return out;
    }
    uint32_t k = whole_bytes(p);
    *out++ = static_cast<char>(kPositiveTag + k);
    put_be(p, k, out);
    return out + k;
  }
  return put_other_num(x, out);
}

// A number component at `at` (which is inside `in`): its value, and the
// position after it; npos if the bytes stop short or the tag is no tag.
size_t get_num(std::string_view in, size_t at, double* x) {
  constexpr size_t kShort = std::string_view::npos;
  auto tag = static_cast<unsigned char>(in[at++]);
  if (tag == kLargeNegativeTag || tag == kLargePositiveTag) {
    if (at + 8 > in.size()) return kShort;
    *x = order_num(get_be(in.data() + at, 8));
    return at + 8;
  }
  int64_t p = 0;
  if (tag >= kSmallTag && tag < kSmallTag + kSmallLimit) {
    p = tag - kSmallTag;
  } else {
    bool positive = tag > kPositiveTag && tag <= kPositiveTag + 7;
    bool negative = tag < kNegativeTag && tag >= kNegativeTag - 7;
    if (!positive && !negative) return kShort;
    uint32_t k = positive ? tag - kPositiveTag : kNegativeTag - tag;
    if (at + k > in.size()) return kShort;
    uint64_t raw = get_be(in.data() + at, k);
    at += k;
    p = tag > kPositiveTag ? static_cast<int64_t>(raw) : -static_cast<int64_t>((~uint64_t{0} >> (64 - 8 * k)) - raw);
  }
  double whole = static_cast<double>(p % 2 == 0 ? p / 2 : p > 0 ? (p - 1) / 2 : (p + 1) / 2);
  double fraction = 0;
  if (p % 2 != 0) {
    if (at + 8 > in.size()) return kShort;
    fraction = order_num(get_be(in.data() + at, 8));
    at += 8;
  }
  *x = whole + fraction;
  return at;
}

void append_number(std::string& out, double d) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  out.append(buf, end);
}

// A text component of `encoded` from `at`: its bytes unescaped into `text`,
// and the position after its terminator; npos if there is none or an
// escape is broken.
size_t read_text(std::string_view encoded, size_t at, std::string& text) {
  while (at < encoded.size()) {
    char c = encoded[at++];
    if (c != '\0') {
      text += c;
      continue;
    }
    if (at >= encoded.size()) break;
    char next = encoded[at++];
    if (next == '\x01') return at;  // the terminator
    if (next != '\xff') break;
    text += '\0';  // an escaped 0x00
  }
  return std::string_view::npos;
}

}  // namespace

void append_quoted(std::string& out, std::string_view s) {
  // At most 64 bytes, cut where a code point starts: a message is UTF-8.
  size_t cut = s.size() <= kQuotedBytes ? s.size() : kQuotedBytes;
  while (cut < s.size() && cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  out += '"';
  for (char c : s.substr(0, cut)) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  if (cut < s.size()) out += "...";
  out += '"';
}

size_t key_bytes(const uint64_t* parts, uint32_t count, uint32_t text_mask) {
  size_t n = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (!((text_mask >> i) & 1u)) {
      n += num_bytes(std::bit_cast<double>(parts[i]));
      continue;
    }
    const auto* t = reinterpret_cast<const TextObj*>(parts[i]);
    n += t->len + 2;
    for (uint32_t b = 0; b < t->len; ++b) n += t->bytes[b] == '\0';
  }
  return n;
}

size_t key_bytes_max(const uint64_t* parts, uint32_t count, uint32_t text_mask) {
  size_t n = 0;
  for (uint32_t i = 0; i < count; ++i) {
    n += (text_mask >> i) & 1u ? key_bytes(parts + i, 1, 1) : kMaxNumBytes;
  }
  return n;
}

size_t encode_key(const uint64_t* parts, uint32_t count, uint32_t text_mask, char* out) {
  char* start = out;
  if (text_mask == 0) {  // numbers only (most composite keys: TPC-C's all): no test a component
    for (uint32_t i = 0; i < count; ++i) out = put_num(std::bit_cast<double>(parts[i]), out);
    return static_cast<size_t>(out - start);
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (!((text_mask >> i) & 1u)) {
      out = put_num(std::bit_cast<double>(parts[i]), out);
      continue;
    }
    const auto* t = reinterpret_cast<const TextObj*>(parts[i]);
    for (uint32_t b = 0; b < t->len; ++b) {
      *out++ = t->bytes[b];
      if (t->bytes[b] == '\0') *out++ = '\xff';
    }
    *out++ = '\0';
    *out++ = '\x01';
  }
  return static_cast<size_t>(out - start);
}

size_t prefix_end_length(std::string_view bytes) {
  size_t n = bytes.size();
  while (n > 0 && static_cast<unsigned char>(bytes[n - 1]) == 0xff) --n;
  assert(n > 0 && "a key prefix of only 0xFF bytes: no key starts with 0xFF");
  return n;
}

size_t prefix_end(char* bytes, size_t n) {
  n = prefix_end_length({bytes, n});
  bytes[n - 1] = static_cast<char>(static_cast<unsigned char>(bytes[n - 1]) + 1);
  return n;
}

namespace {

// Component i of `encoded` from `at` into `c`; the position after it, or
// npos if the bytes end or break inside it.
size_t read_component(std::string_view encoded, size_t at, bool text, KeyComponent& c) {
  if (at >= encoded.size()) return std::string_view::npos;
  if (text) {
    c.text.clear();
    return read_text(encoded, at, c.text);
  }
  return get_num(encoded, at, &c.num);
}

}  // namespace

bool decode_key(std::string_view encoded, uint32_t count, uint32_t text_mask, std::vector<KeyComponent>& out) {
  out.assign(count, KeyComponent{});
  size_t at = 0;
  for (uint32_t i = 0; i < count; ++i) {
    at = read_component(encoded, at, (text_mask >> i) & 1u, out[i]);
    if (at == std::string_view::npos) return false;
  }
  return at == encoded.size();
}

std::string describe_key(std::string_view encoded, uint32_t count, uint32_t text_mask) {
  std::string out = "(";
  size_t at = 0;
  KeyComponent c;
  for (uint32_t i = 0; i < count; ++i) {
    bool text = (text_mask >> i) & 1u;
    at = read_component(encoded, at, text, c);
    if (at == std::string_view::npos) break;  // a prefix ends here
    if (i) out += ", ";
    if (text) {
      append_quoted(out, c.text);
    } else {
      append_number(out, c.num);
    }
  }
  return out + ")";
}

TextObj* nan_key() {
  static TextObj* const key = [] {
    TextObj* t = heap_text(std::string(8, '\xff'));
    t->in_arena = true;  // retain and release leave it alone
    return t;
  }();
  return key;
}

namespace {
// A bound on the encoding's size that reads no text's bytes: a number's
// most for every component, and for each text (the mask's bits, visited
// alone: a key of numbers only costs a multiplication) every byte escaped
// (twice its length) plus its end instead.
size_t encoded_bound(const uint64_t* parts, uint32_t count, uint32_t text_mask) {
  size_t n = size_t{count} * kMaxNumBytes;
  for (uint32_t m = text_mask; m != 0; m &= m - 1) {
    auto i = static_cast<uint32_t>(std::countr_zero(m));
    n += 2 * size_t{reinterpret_cast<const TextObj*>(parts[i])->len} + 2 - kMaxNumBytes;
  }
  return n;
}
}  // namespace

TextObj* encoded_key_text(const uint64_t* parts, uint32_t count, uint32_t text_mask) {
  // One allocation, of the bytes the key takes: a short key (most are:
  // TPC-C's order line (1, 2, 3001, 5) takes 6 bytes) is encoded on the
  // stack first, in one pass over its texts, since allocating the bound
  // (17 bytes a number) kept 48 bytes more per key in the tree, some 250 MB
  // of a W=10 TPC-C store.
  TextObj* text;
  // Room for kMaxKeyFields numbers. An index entry (its fields, then the
  // primary key's) may have twice as many components: its bound says.
  if (char buf[kMaxKeyFields * kMaxNumBytes]; encoded_bound(parts, count, text_mask) <= sizeof buf) {
    size_t len = encode_key(parts, count, text_mask, buf);
    text = heap_text_sized(static_cast<uint32_t>(len));
    bytes::copy(text->bytes, buf, len);
  } else {
    // Encoded in place, into the exact size: a heap text's length is fixed
    // when it is made (its text pool block is found by it, vm/text.h).
    size_t size = key_bytes(parts, count, text_mask);
    text = heap_text_sized(static_cast<uint32_t>(size));
    size_t len = encode_key(parts, count, text_mask, text->bytes);
    assert(len == size);
    (void)len;
  }
  return text;
}

// A composite key: its fields encoded into a heap text this object holds.
void HeldKey::encode(const KeySpec& spec, const uint64_t* values, From from) {
  uint32_t n = static_cast<uint32_t>(spec.fields.size());
  assert(n >= 2 && n <= kMaxKeyFields);
  std::array<uint64_t, kMaxKeyFields> parts;
  for (uint32_t i = 0; i < n; ++i) parts[i] = values[from == From::Row ? spec.fields[i] : i];
  key_ = text_key(encoded_key_text(parts.data(), n, spec.text_mask));
  owned_ = true;
}

}  // namespace aup::vm

// Table keys. A key is a number or a text; both are reduced to a 64-bit
// "order image" that compares like the key, so most comparisons in a seek
// are one integer compare:
//
//   number: the IEEE-754 bits, sign-flipped so that unsigned order is
//           numeric order (-0 is made +0 first: they are the same key;
//           NaN is never a key);
//   text:   the first 7 bytes, big-endian, zero-padded, then the length
//           (8 for 8 bytes or more). That orders like the texts (UTF-8 byte
//           order; a text sorts before a longer one it starts), and texts
//           of up to 7 bytes are told apart and found equal by the image
//           alone, without reading the text: a composite key (below) of a
//           few whole numbers is such a text. Texts of 8 bytes or more with
//           equal images are then compared in full.
//
// A composite key (`key (w, d, o)`) is a text too: its components encoded
// one after another so that comparing the bytes compares the tuples,
// component by component (the encoding below). The tree, the journal and
// snapshots then need nothing new, and a prefix of the components is a
// prefix of the bytes, which is what a view over a key prefix seeks.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "vm/text.h"

namespace aup::vm {

struct Key {
  uint64_t ord = 0;
  TextObj* text = nullptr;  // text keys only
};

inline uint64_t num_order(double d) {
  if (d == 0) d = 0;  // -0 and 0 are one key
  uint64_t bits = std::bit_cast<uint64_t>(d);
  return (bits >> 63) ? ~bits : bits | (uint64_t{1} << 63);
}

inline double order_num(uint64_t ord) {
  uint64_t bits = (ord >> 63) ? ord & ~(uint64_t{1} << 63) : ~ord;
  return std::bit_cast<double>(bits);
}

inline Key num_key(double d) { return Key{num_order(d), nullptr}; }

inline Key text_key(TextObj* t) {
  uint64_t ord = 0;
  if (t->len >= 7) {
    // Eight bytes can be read: the seventh is followed by the eighth or by
    // the terminating 0 every text has (vm/text.h).
    uint64_t word;
    std::memcpy(&word, t->bytes, 8);
    if constexpr (std::endian::native == std::endian::little) word = __builtin_bswap64(word);
    ord = word & ~uint64_t{0xff};
  } else {
    for (uint32_t i = 0; i < t->len; ++i) ord |= uint64_t{static_cast<unsigned char>(t->bytes[i])} << (56 - 8 * i);
  }
  return Key{ord | (t->len < 8 ? t->len : 8), t};
}

// Whether two keys with equal order images still need their texts compared:
// only texts of 8 bytes or more.
inline bool needs_text_compare(const Key& a) { return a.text && (a.ord & 0xff) == 8; }

inline int key_cmp(const Key& a, const Key& b) {
  if (a.ord != b.ord) return a.ord < b.ord ? -1 : 1;
  return needs_text_compare(a) ? compare(a.text, b.text) : 0;
}
inline bool key_less(const Key& a, const Key& b) {
  if (a.ord != b.ord) return a.ord < b.ord;
  return needs_text_compare(a) && compare(a.text, b.text) < 0;
}

// ---- composite keys
//
// Each component in turn, so that comparing the bytes (memcmp) compares
// the tuples, field by field:
//
//   num   whole numbers below 2^53 in a few bytes, so that the first 8
//         bytes (the key's order image, above) hold several fields and a
//         seek rarely has to read further:
//           x with |x| < 2^53, t = trunc(x), f = x - t: p = 2t, and
//             1 more if f > 0, 1 less if f < 0 (-1.5, -1, -0.5, 0, 0.5:
//             p = -3, -2, -1, 0, 1);
//             0 <= p < 64: the byte 0x40 + p;
//             p >= 64: the byte 0x80 + k, then p in k bytes (1 <= k <= 7);
//             p < 0: the byte 0x3f - k, then 2^(8k) - 1 - |p| in k bytes;
//             then, if f is not 0, num_order(f) in 8 bytes;
//           x <= -2^53 (and -inf): 0x02, then num_order(x) in 8 bytes;
//           x >= 2^53 (and inf):   0xc0, then num_order(x) in 8 bytes.
//         So -0 is 0, and TPC-C's order line (1, 2, 3001, 5) takes
//         1 + 1 + 3 + 1 bytes: its order image alone tells it apart.
//   text  its bytes, each 0x00 written as 0x00 0xFF, then 0x00 0x01: the
//         terminator sorts below any byte it could be followed by, and an
//         escaped 0x00 above the terminator, so "a" < "a\0" < "ab".
//
// All big-endian. The encoding lives only in memory (the store writes the
// fields' values), so it may change between versions. No key starts with
// 0xFF (no tag is 0xFF, UTF-8 has none), so every prefix has an end
// (prefix_end) and nan_key() is no key.

// Fields of one key, at most (a named limit: compiler/check_decls.cpp).
inline constexpr uint32_t kMaxKeyFields = 8;

// A table's key: its record fields in key order, and which are texts.
struct KeySpec {
  std::vector<uint32_t> fields;
  uint32_t text_mask = 0;  // bit i: component i is a text
  bool composite() const { return fields.size() > 1; }
  bool text(uint32_t i) const { return (text_mask >> i) & 1u; }
};

// The encoding of `count` components (a number's bits or a TextObj*),
// component i a text when bit i of `text_mask` is set: its size; a bound on
// it that costs no encoding (a number's most, 17 bytes, for each number);
// and the bytes written to `out` (which must hold key_bytes_max of them),
// returning how many. Seeks encode once into a buffer of the bound, rather
// than work out every number's size and then encode it.
size_t key_bytes(const uint64_t* parts, uint32_t count, uint32_t text_mask);
size_t key_bytes_max(const uint64_t* parts, uint32_t count, uint32_t text_mask);
size_t encode_key(const uint64_t* parts, uint32_t count, uint32_t text_mask, char* out);
// The encoding as a new heap text of its exact length (one reference).
TextObj* encoded_key_text(const uint64_t* parts, uint32_t count, uint32_t text_mask);
// The least byte string above every string that starts with bytes[0, n):
// changes `bytes` in place and returns its new length, which
// prefix_end_length tells beforehand (to make a heap text of that length,
// whose length may not change after: vm/text.h).
size_t prefix_end(char* bytes, size_t n);
size_t prefix_end_length(std::string_view bytes);
// An encoded key's components read back (numbers, and texts as their
// bytes): false if the bytes are not exactly `count` components of the
// mask's kinds.
struct KeyComponent {
  double num = 0;
  std::string text;
};
bool decode_key(std::string_view encoded, uint32_t count, uint32_t text_mask, std::vector<KeyComponent>& out);
// "(1, 2, \"x\")": an encoded key's components as a message shows them
// (texts cut at 64 bytes); `count` components are read, fewer if the bytes
// end first (a prefix).
std::string describe_key(std::string_view encoded, uint32_t count, uint32_t text_mask);

// A text as messages show it: in quotes, `"` and `\` escaped, at most
// kQuotedBytes of it (cut where a code point starts, so the message stays
// UTF-8) and `...` after a cut.
inline constexpr size_t kQuotedBytes = 64;
void append_quoted(std::string& out, std::string_view s);

// The key KEY makes when a number component is NaN: eight 0xFF bytes, which
// no key encodes to (no number does, and UTF-8 has no 0xFF), so no row has
// it; a view with it as a bound is empty. Never reference counted.
TextObj* nan_key();

// A key made from values: a row's (all of its slots; the spec picks the
// key's) or the key's own, in key order (a log record's). For a one-field
// key it is the field's value itself (borrowed: no reference taken); for a
// composite key a new heap text, released with this object. A tree that
// keeps a key retains it.
class HeldKey {
 public:
  enum class From : uint8_t { Row, Parts };
  // Inline for a one-field key (every row of most tables' images and logs).
  HeldKey(const KeySpec& spec, const uint64_t* values, From from = From::Row) {
    if (spec.fields.size() != 1) {
      encode(spec, values, from);
      return;
    }
    uint64_t v = values[from == From::Row ? spec.fields[0] : 0];
    key_ = spec.text(0) ? text_key(reinterpret_cast<TextObj*>(v)) : num_key(std::bit_cast<double>(v));
  }
  ~HeldKey() {
    if (owned_) release(key_.text);
  }
  HeldKey(const HeldKey&) = delete;
  HeldKey& operator=(const HeldKey&) = delete;
  const Key& key() const { return key_; }

 private:
  void encode(const KeySpec& spec, const uint64_t* values, From from);
  Key key_;
  bool owned_ = false;
};

}  // namespace aup::vm

// Table keys. A key is a number or a text; both are reduced to a 64-bit
// "order image" that compares like the key, so most comparisons in a seek
// are one integer compare:
//
//   number: the IEEE-754 bits, sign-flipped so that unsigned order is
//           numeric order (-0 is made +0 first: they are the same key;
//           NaN is never a key);
//   text:   the first 8 bytes, big-endian, zero-padded; texts whose first
//           8 bytes are equal are then compared in full (UTF-8 byte order).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

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
  uint32_t n = t->len < 8 ? t->len : 8;
  for (uint32_t i = 0; i < 8; ++i) {
    ord = (ord << 8) | (i < n ? static_cast<unsigned char>(t->bytes[i]) : 0u);
  }
  return Key{ord, t};
}

inline int key_cmp(const Key& a, const Key& b) {
  if (a.ord != b.ord) return a.ord < b.ord ? -1 : 1;
  if (!a.text) return 0;
  return compare(a.text, b.text);
}
inline bool key_less(const Key& a, const Key& b) {
  if (a.ord != b.ord) return a.ord < b.ord;
  return a.text && compare(a.text, b.text) < 0;
}

}  // namespace aup::vm

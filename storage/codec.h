// Value encoding shared by log records, images and the schema file, over
// the byte codec of vm/bytes.h (fixed-width numbers, varints, lengths).
//
//   varint   unsigned LEB128, at most 10 bytes (vm/bytes.h)
//   num      an integer of magnitude below 2^53 (not -0): varint of its
//            zig-zag form shifted left by one (even); any other binary64
//            (-0, fractions, 2^53 and beyond, subnormals): varint 1, then
//            the 8 bytes of its IEEE-754 bits, little-endian. Every value
//            comes back bit for bit.
//   text     varint length, then the UTF-8 bytes
//   bool     one byte, 0 or 1
//
// An integer below 32 in magnitude takes one byte, below 4,096 two, where
// its binary64 takes eight: most numbers a store holds (counts, ids, cents)
// are such integers.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "vm/bytes.h"
#include "storage/schema.h"
#include "vm/text.h"

namespace aup::storage {

// The value encodings over the one byte codec (vm/bytes.h).
class Encoder : public bytes::Writer {
 public:
  explicit Encoder(std::vector<uint8_t>& out) : Writer(out) {}
  void num(double d) {
    constexpr double kLimit = 9007199254740992.0;  // 2^53
    // Whole (the conversion is exact below 2^53) and not -0.
    auto i = std::fabs(d) < kLimit ? static_cast<int64_t>(d) : 0;
    if (std::fabs(d) < kLimit && static_cast<double>(i) == d && !(d == 0 && std::signbit(d))) {
      uint64_t zig = (static_cast<uint64_t>(i) << 1) ^ static_cast<uint64_t>(i >> 63);
      varint(zig << 1);
    } else {
      varint(1);
      fixed64(std::bit_cast<uint64_t>(d));
    }
  }
  void text(std::string_view s) { bytes(s); }
  // A row slot or var of type t (a text slot holds a TextObj*).
  void value(FieldType t, uint64_t slot) {
    switch (t) {
      case FieldType::Num: num(std::bit_cast<double>(slot)); break;
      case FieldType::Text: text(reinterpret_cast<const vm::TextObj*>(slot)->view()); break;
      case FieldType::Bool: u8(slot ? 1 : 0); break;
    }
  }
  void scalar(const Scalar& s) {
    u8(static_cast<uint8_t>(s.type));
    switch (s.type) {
      case FieldType::Num: num(s.num); break;
      case FieldType::Text: text(s.text); break;
      case FieldType::Bool: u8(s.boolean ? 1 : 0); break;
    }
  }
};

class Decoder : public bytes::Reader {
 public:
  Decoder(const uint8_t* p, size_t n, size_t base = 0) : Reader(p, n, base) {}
  // A problem with a value is named at its first byte.
  double num() {
    const uint8_t* start = position();
    uint64_t v = varint();
    if (v & 1) {
      if (v != 1) bad_num_tag(start);
      return std::bit_cast<double>(fixed64());
    }
    uint64_t zig = v >> 1;
    auto i = static_cast<int64_t>((zig >> 1) ^ (~(zig & 1) + 1));
    return static_cast<double>(i);
  }
  // Out of line, so num() stays small enough to inline.
  [[gnu::noinline]] void bad_num_tag(const uint8_t* start) { fail_at(offset_of(start), "a number tag other than 1"); }
  std::string_view text() { return bytes(); }
  // A value of type t as a row slot; a text becomes a new heap text the
  // caller owns.
  //
  // A number inline, the rest out of line: most of the values an open
  // decodes are numbers, and with its other cases value() was too large
  // to inline, a call and a switch for each (a tenth of the instructions
  // of opening a bank store).
  uint64_t value(FieldType t) {
    if (t == FieldType::Num) [[likely]] return std::bit_cast<uint64_t>(num());
    return other_value(t);
  }
  [[gnu::noinline]] uint64_t other_value(FieldType t) {
    switch (t) {
      case FieldType::Num: return std::bit_cast<uint64_t>(num());
      case FieldType::Text: {
        std::string_view s = text();
        if (!ok()) return 0;
        return reinterpret_cast<uint64_t>(vm::heap_text(s));
      }
      case FieldType::Bool: return u8() ? 1 : 0;
    }
    fail("an unknown field type");
    return 0;
  }
  // Skips a value of type t.
  void skip(FieldType t) {
    switch (t) {
      case FieldType::Num: num(); return;
      case FieldType::Text: text(); return;
      case FieldType::Bool: u8(); return;
    }
  }
  Scalar scalar() {
    Scalar s;
    size_t at = offset();
    uint8_t t = u8();
    if (t < 1 || t > 3) {
      fail_at(at, "an unknown value type");
      return s;
    }
    s.type = static_cast<FieldType>(t);
    switch (s.type) {
      case FieldType::Num: s.num = num(); break;
      case FieldType::Text: s.text = std::string(text()); break;
      case FieldType::Bool: s.boolean = u8() != 0; break;
    }
    return s;
  }
};

}  // namespace aup::storage

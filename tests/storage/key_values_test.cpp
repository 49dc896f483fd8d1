// A key's values as the store writes them for a removed row
// (storage/key_values.cpp): a tree key that vm/key.h's encoder made, read
// back (vm::decode_key) into the values it was made from, for numbers of
// every form the encoding has and texts holding 0x00 bytes; a remove
// record written from a key that read back otherwise would replay on
// another row.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "storage/codec.h"
#include "storage/key_values.h"
#include "vm/key.h"
#include "vm/text.h"

namespace aup::storage {
namespace {

using namespace std::string_literals;

// Numbers of each of the encoding's forms (vm/key.h): small whole numbers
// in the tag, larger ones in 1 to 7 bytes either side of 0, fractions
// after them, magnitudes of 2^53 and beyond, infinities, -0, subnormals.
std::vector<double> numbers() {
  std::vector<double> v = {0, -0.0, 1, 31, 32, 63, 64, 65, 255, 256, 65535, 65536, 0x1p31, 0x1p52, 0x1p53 - 1, 0x1p53,
                           0x1p53 + 2, 1e300, -1, -2, -31, -32, -33, -64, -65, -256, -65536, -(0x1p53 - 1), -0x1p53,
                           -1e300, 0.5, -0.5, 1.5, -1.5, 3.25, -3.25, 1e-300, -1e-300, 5e-324, -5e-324,
                           1e15 + 0.5, -123456.789, 3.141592653589793, 0x1p52 + 0.5, -(0x1p52 + 0.5)};
  v.push_back(std::numeric_limits<double>::infinity());
  v.push_back(-std::numeric_limits<double>::infinity());
  return v;
}
std::vector<std::string> texts() { return {"", "a", "\0"s, "a\0b"s, "\0\0"s, "ab\0"s, "\x01\x02", "héllo"}; }

// The values a key made of `parts` (a number's bits or a TextObj*, bit i
// of `mask` a text) reads back as, one of each in key order.
struct Read {
  std::vector<double> nums;
  std::vector<std::string> texts;
};
Read read_back(const std::vector<uint64_t>& parts, uint32_t mask) {
  vm::KeySpec spec;
  for (uint32_t i = 0; i < parts.size(); ++i) spec.fields.push_back(i);
  spec.text_mask = mask;
  std::vector<uint8_t> out;
  {
    vm::HeldKey key(spec, parts.data(), vm::HeldKey::From::Parts);
    Encoder e(out);
    write_key_values(e, spec, key.key());
  }
  Decoder d(out.data(), out.size());
  Read r;
  for (uint32_t i = 0; i < parts.size(); ++i) {
    if (spec.text(i)) {
      r.texts.emplace_back(d.text());
    } else {
      r.nums.push_back(d.num());
    }
  }
  REQUIRE(d.ok());
  CHECK(d.done());
  return r;
}

// The number a key keeps of `x`: itself, bit for bit, but -0 (which is 0).
uint64_t kept(double x) { return std::bit_cast<uint64_t>(x == 0 ? 0.0 : x); }

TEST_SUITE("key_values") {
  TEST_CASE("every number form of a composite key reads back bit for bit, before and after a text") {
    vm::TextObj* t = vm::heap_text("t\0"s);
    for (double x : numbers()) {
      CAPTURE(x);
      uint64_t bits = std::bit_cast<uint64_t>(x);
      auto ptr = reinterpret_cast<uint64_t>(t);
      Read a = read_back({bits, ptr}, 0b10);
      REQUIRE(a.nums.size() == 1);
      CHECK(std::bit_cast<uint64_t>(a.nums[0]) == kept(x));
      CHECK(a.texts == std::vector<std::string>{"t\0"s});
      Read b = read_back({ptr, bits, bits}, 0b001);
      REQUIRE(b.nums.size() == 2);
      CHECK(std::bit_cast<uint64_t>(b.nums[1]) == kept(x));
    }
    vm::release(t);
  }

  TEST_CASE("texts with 0x00 bytes, empty texts and eight components read back") {
    std::vector<vm::TextObj*> held;
    for (const std::string& a : texts()) {
      for (const std::string& b : texts()) {
        CAPTURE(a);
        CAPTURE(b);
        vm::TextObj* ta = vm::heap_text(a);
        vm::TextObj* tb = vm::heap_text(b);
        Read r = read_back({reinterpret_cast<uint64_t>(ta), reinterpret_cast<uint64_t>(tb)}, 0b11);
        CHECK(r.texts == std::vector<std::string>{a, b});
        vm::release(ta);
        vm::release(tb);
      }
    }
    // Eight components, numbers and texts alternating.
    std::vector<uint64_t> parts;
    uint32_t mask = 0;
    for (uint32_t i = 0; i < vm::kMaxKeyFields; ++i) {
      if (i % 2) {
        held.push_back(vm::heap_text(texts()[i]));
        parts.push_back(reinterpret_cast<uint64_t>(held.back()));
        mask |= 1u << i;
      } else {
        parts.push_back(std::bit_cast<uint64_t>(numbers()[i * 5]));
      }
    }
    Read r = read_back(parts, mask);
    CHECK(r.texts == std::vector<std::string>{texts()[1], texts()[3], texts()[5], texts()[7]});
    for (uint32_t i = 0; i < r.nums.size(); ++i) CHECK(std::bit_cast<uint64_t>(r.nums[i]) == kept(numbers()[i * 10]));
    for (vm::TextObj* t : held) vm::release(t);
  }

  TEST_CASE("a one-field key is its value") {
    vm::KeySpec num_key{{0}, 0};
    vm::KeySpec text_key{{0}, 1};
    std::vector<uint8_t> out;
    Encoder e(out);
    write_key_values(e, num_key, vm::num_key(-2.5));
    vm::TextObj* t = vm::heap_text("a\0b"s);
    write_key_values(e, text_key, vm::text_key(t));
    vm::release(t);
    std::vector<uint8_t> want;
    Encoder w(want);
    w.num(-2.5);
    w.text("a\0b"s);
    CHECK(out == want);
  }
}

}  // namespace
}  // namespace aup::storage

// The byte codec of every aup file (vm/bytes.h): fixed widths and varints
// round trip at their edges, every malformed or truncated value is refused,
// and a refusal names the file's byte (the reader's base included).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "vm/bytes.h"

namespace aup::bytes {
namespace {

std::vector<uint8_t> varint_bytes(uint64_t v) {
  std::vector<uint8_t> out;
  Writer(out).varint(v);
  return out;
}

TEST_SUITE("bytes") {
  TEST_CASE("varints round trip at the edges, in as few bytes as LEB128 takes") {
    struct Case {
      uint64_t v;
      size_t bytes;
    };
    const Case cases[] = {{0, 1},
                          {1, 1},
                          {127, 1},
                          {128, 2},
                          {16383, 2},
                          {16384, 3},
                          {uint64_t{1} << 32, 5},
                          {(uint64_t{1} << 63) - 1, 9},
                          {uint64_t{1} << 63, 10},
                          {UINT64_MAX, 10}};
    for (const Case& c : cases) {
      CAPTURE(c.v);
      std::vector<uint8_t> b = varint_bytes(c.v);
      CHECK(b.size() == c.bytes);
      Reader r(b.data(), b.size());
      CHECK(r.varint() == c.v);
      CHECK(r.ok());
      CHECK(r.done());
    }
    CHECK(varint_bytes(0) == std::vector<uint8_t>{0x00});
    CHECK(varint_bytes(127) == std::vector<uint8_t>{0x7F});
    CHECK(varint_bytes(128) == std::vector<uint8_t>{0x80, 0x01});
    CHECK(varint_bytes(uint64_t{1} << 63) ==
          std::vector<uint8_t>{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01});
    CHECK(varint_bytes(UINT64_MAX) ==
          std::vector<uint8_t>{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01});
  }

  TEST_CASE("varints with the longest one's room left decode the same as the span's last ones") {
    // With ten bytes left the reader takes a path without a bounds check a
    // byte (vm/bytes.h); the same values, each with bytes after it.
    for (uint64_t v : {uint64_t{128}, uint64_t{16384}, uint64_t{1} << 32, (uint64_t{1} << 63) - 1, uint64_t{1} << 63,
                       UINT64_MAX}) {
      CAPTURE(v);
      std::vector<uint8_t> b = varint_bytes(v);
      size_t n = b.size();
      b.insert(b.end(), 10, 0x7F);
      Reader r(b.data(), b.size());
      CHECK(r.varint() == v);
      CHECK(r.offset() == n);
      CHECK(r.varint() == 0x7F);
      CHECK(r.ok());
    }
    std::vector<uint8_t> bad(9, 0xFF);
    bad.push_back(0x02);  // past 64 bits, with bytes after
    bad.insert(bad.end(), 5, 0x00);
    Reader r(bad.data(), bad.size());
    CHECK(r.varint() == 0);
    CHECK(r.error() == "malformed varint at byte 0");
  }

  TEST_CASE("varints of every length, with room for the longest, stop at their last byte whatever follows") {
    // Up to eight bytes are decoded from one load (vm/bytes.h): the bytes
    // after the varint's last, continuation bits set or not, must not count.
    for (unsigned k = 1; k <= 9; ++k) {
      for (uint64_t v : {(uint64_t{1} << (7 * k)) - 1, uint64_t{1} << (7 * (k - 1)), uint64_t{0x55} << (7 * (k - 1))}) {
        for (uint8_t after : {uint8_t{0x00}, uint8_t{0xFF}, uint8_t{0x80}}) {
          CAPTURE(v);
          CAPTURE(int{after});
          std::vector<uint8_t> b = varint_bytes(v);
          CHECK(b.size() == k + (v >> (7 * k) ? 1 : 0));
          size_t n = b.size();
          b.insert(b.end(), 10, after);
          Reader r(b.data(), b.size());
          CHECK(r.varint() == v);
          CHECK(r.offset() == n);
          CHECK(r.ok());
        }
      }
    }
    // A longer encoding than needed reads as its value, as LEB128 allows.
    std::vector<uint8_t> padded{0x85, 0x80, 0x80, 0x00};
    padded.insert(padded.end(), 10, 0x01);
    Reader r(padded.data(), padded.size());
    CHECK(r.varint() == 5);
    CHECK(r.offset() == 4);
  }

  TEST_CASE("a tenth varint byte may hold only the top bit of 64") {
    std::vector<uint8_t> b(9, 0xFF);
    b.push_back(0x02);  // bit 64: past a uint64_t
    Reader r(b.data(), b.size());
    CHECK(r.varint() == 0);
    CHECK_FALSE(r.ok());
    CHECK(r.error() == "malformed varint at byte 0");
    b.back() = 0x81;  // the top bit, and a continuation into an 11th byte
    b.push_back(0x00);
    Reader r2(b.data(), b.size());
    r2.varint();
    CHECK(r2.error() == "malformed varint at byte 0");
  }

  TEST_CASE("an 11-byte varint is refused, even of a small value") {
    // A one-byte varint, then ten continuation bytes and an end.
    std::vector<uint8_t> framed(11, 0x80);
    framed[0] = 0x05;
    framed.push_back(0x00);
    Reader r(framed.data(), framed.size());
    CHECK(r.varint() == 5);
    CHECK(r.varint() == 0);
    CHECK(r.error() == "malformed varint at byte 1");
  }

  TEST_CASE("a varint cut short is truncated, at the end of the bytes") {
    const uint8_t b[] = {0x80, 0x80};
    Reader r(b, sizeof b);
    CHECK(r.varint() == 0);
    CHECK(r.error() == "truncated at byte 2");
    Reader empty(b, 0);
    empty.varint();
    CHECK(empty.error() == "truncated at byte 0");
  }

  TEST_CASE("fixed widths are little-endian whatever the host, and round trip at the edges") {
    std::vector<uint8_t> out;
    Writer w(out);
    w.fixed16(0x0102);
    w.fixed32(0x01020304);
    w.fixed64(0x0102030405060708);
    CHECK(out == std::vector<uint8_t>{0x02, 0x01, 0x04, 0x03, 0x02, 0x01, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02,
                                      0x01});
    out.clear();
    for (uint64_t v : {uint64_t{0}, uint64_t{1} << 63, UINT64_MAX}) w.fixed64(v);
    w.fixed32(UINT32_MAX);
    w.fixed16(UINT16_MAX);
    Reader r(out.data(), out.size());
    CHECK(r.fixed64() == 0);
    CHECK(r.fixed64() == uint64_t{1} << 63);
    CHECK(r.fixed64() == UINT64_MAX);
    CHECK(r.fixed32() == UINT32_MAX);
    CHECK(r.fixed16() == UINT16_MAX);
    CHECK(r.ok());
    CHECK(r.done());
    uint8_t p[8];
    put_u64(p, 0x1122334455667788);
    CHECK(p[0] == 0x88);
    CHECK(get_u64(p) == 0x1122334455667788);
    put_u32(p, 0xA1B2C3D4);
    CHECK(p[0] == 0xD4);
    CHECK(get_u32(p) == 0xA1B2C3D4);
    put_u16(p, 0xBEEF);
    CHECK(p[0] == 0xEF);
    CHECK(get_u16(p) == 0xBEEF);
  }

  TEST_CASE("a fixed width cut short is refused at its first byte") {
    const uint8_t b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (size_t n : {1, 2, 3}) {
      Reader r(b, n);
      CHECK(r.fixed32() == 0);
      CHECK(r.error() == "truncated at byte 0");
    }
    Reader r16(b, 1);
    r16.fixed16();
    CHECK(r16.error() == "truncated at byte 0");
    Reader r64(b, 7);
    CHECK(r64.u8() == 1);
    CHECK(r64.fixed64() == 0);
    CHECK(r64.error() == "truncated at byte 1");
    Reader r8(b, 0);
    r8.u8();
    CHECK(r8.error() == "truncated at byte 0");
  }

  TEST_CASE("bytes: a length prefix, then the bytes; a length past the end is refused at its first byte") {
    std::vector<uint8_t> out;
    Writer w(out);
    w.bytes("");
    w.bytes("abc");
    CHECK(out == std::vector<uint8_t>{0, 3, 'a', 'b', 'c'});
    Reader r(out.data(), out.size());
    CHECK(r.bytes().empty());
    CHECK(r.bytes() == "abc");
    CHECK(r.done());
    const uint8_t bad[] = {0x00, 0x04, 'a', 'b', 'c'};
    Reader r2(bad, sizeof bad);
    CHECK(r2.bytes().empty());
    CHECK(r2.bytes().empty());
    CHECK(r2.error() == "a length of 4, longer than the bytes left at byte 1");
  }

  TEST_CASE("count is bounded by the bytes left") {
    // A count of 3, then 6 bytes: three items of 2 fit, of 3 do not.
    const uint8_t b[] = {3, 0, 0, 0, 0, 0, 0};
    Reader fits(b, sizeof b);
    CHECK(fits.count(2) == 3);
    CHECK(fits.ok());
    Reader over(b, sizeof b);
    CHECK(over.count(3) == 0);
    CHECK(over.error() == "a count of 3, more than the bytes left hold at byte 0");
    // A minimum of 0 counts as 1: six items at most.
    const uint8_t seven[] = {7, 0, 0, 0, 0, 0, 0};
    Reader zero(seven, sizeof seven);
    CHECK(zero.count(0) == 0);
    CHECK_FALSE(zero.ok());
    // A huge count is refused, not reserved.
    std::vector<uint8_t> huge = varint_bytes(UINT64_MAX);
    Reader h(huge.data(), huge.size());
    CHECK(h.count(1) == 0);
    CHECK(h.error() == "a count of 18446744073709551615, more than the bytes left hold at byte 0");
  }

  TEST_CASE("errors name the file's byte: the base, then the value's first byte") {
    // A span at byte 100 of its file: a one-byte varint, then a malformed one.
    std::vector<uint8_t> b = {0x01};
    b.insert(b.end(), 10, 0xFF);
    Reader r(b.data(), b.size(), 100);
    CHECK(r.offset() == 100);
    CHECK(r.varint() == 1);
    CHECK(r.offset() == 101);
    r.varint();
    CHECK(r.error() == "malformed varint at byte 101");
    CHECK(r.problem() == "malformed varint");
    CHECK(r.error_offset() == 101);
    Reader t(b.data(), 2, 100);
    t.fixed32();
    CHECK(t.error() == "truncated at byte 100");
  }

  TEST_CASE("the first problem is kept; every read after it gives zeros") {
    const uint8_t b[] = {0xFF, 7, 7, 7};
    Reader r(b, sizeof b, 10);
    r.fail_at(12, "a type byte 9");
    CHECK(r.done());
    CHECK(r.u8() == 0);
    CHECK(r.varint() == 0);
    CHECK(r.fixed64() == 0);
    CHECK(r.bytes().empty());
    r.fail("another problem");
    CHECK(r.error() == "a type byte 9 at byte 12");
    Reader ok(b, sizeof b);
    CHECK(ok.error().empty());
    CHECK(ok.problem().empty());
  }

  TEST_CASE("sub: a part read on its own, at the file's offsets; adopt carries its problem up") {
    const uint8_t b[] = {1, 2, 3, 4, 5};
    Reader file(b, sizeof b, 20);
    CHECK(file.u8() == 1);
    Reader part = file.sub(2);
    CHECK(part.offset() == 21);
    CHECK(file.offset() == 23);
    CHECK(part.u8() == 2);
    CHECK(part.u8() == 3);
    CHECK(part.done());
    part.u8();  // past the part's end, though the file goes on
    CHECK(part.error() == "truncated at byte 23");
    file.adopt(part);
    CHECK(file.error() == "truncated at byte 23");
    CHECK(file.done());
    Reader again(b, sizeof b, 20);
    Reader fine = again.sub(3);
    again.adopt(fine);  // no problem: nothing changes
    CHECK(again.ok());
    CHECK(again.u8() == 4);
    Reader too_long = again.sub(2);
    CHECK(too_long.done());
    CHECK(again.error() == "a length longer than the bytes left at byte 24");
  }

  TEST_CASE("copy moves exactly n bytes, each width of its inline moves and past them") {
    // Every length through the inline widths' edges (1-3, 4, 8, 16, 32)
    // and into memcpy's, at an odd offset, between guard bytes it must
    // leave alone.
    std::vector<uint8_t> from(64);
    for (size_t i = 0; i < from.size(); ++i) from[i] = static_cast<uint8_t>(i + 1);
    for (size_t n = 0; n <= 40; ++n) {
      CAPTURE(n);
      std::vector<uint8_t> to(n + 8, 0xee);
      copy(to.data() + 3, from.data() + 1, n);
      for (size_t i = 0; i < to.size(); ++i) {
        CAPTURE(i);
        bool inside = i >= 3 && i < 3 + n;
        CHECK(to[i] == (inside ? from[1 + i - 3] : 0xee));
      }
    }
  }
}

}  // namespace
}  // namespace aup::bytes

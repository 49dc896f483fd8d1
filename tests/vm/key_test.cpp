// vm/key.cpp: the composite key encoding orders like the tuples it encodes,
// prefixes bound exactly the keys that start with them, and keys describe
// themselves in messages.
#include <doctest/doctest.h>

#include <algorithm>
#include <charconv>
#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "vm/key.h"
#include "vm/text.h"

namespace aup::vm {
namespace {

// A (num, text, num) tuple as its key bytes.
struct Tuple {
  double a;
  std::string b;
  double c;
  bool operator<(const Tuple& o) const {
    if (a != o.a) return a < o.a;
    if (b != o.b) return b < o.b;  // std::string compares bytes as unsigned char
    return c < o.c;
  }
};

std::string encoded(const Tuple& t, uint32_t count = 3) {
  TextObj* text = heap_text(t.b);
  uint64_t parts[3] = {std::bit_cast<uint64_t>(t.a), reinterpret_cast<uint64_t>(text), std::bit_cast<uint64_t>(t.c)};
  size_t exact = key_bytes(parts, count, 0b010);
  std::string out(key_bytes_max(parts, count, 0b010), '\0');
  REQUIRE(exact <= out.size());
  REQUIRE(encode_key(parts, count, 0b010, out.data()) == exact);
  out.resize(exact);
  release(text);
  return out;
}

TEST_SUITE("key") {
  TEST_CASE("bytes compare like the tuples, texts with 0x00 and prefixes of each other included") {
    std::mt19937_64 rng(7);
    const std::string texts[] = {"", "a", std::string("a\0", 2), std::string("a\0b", 3), "ab", "b",
                                 std::string("\0", 1), "\xC3\xA9", "abcdefghij", "abcdefghi"};
    const double nums[] = {-1e300, -0x1p53, -0x1p53 + 1, -65536, -256, -255.5, -255, -2.5, -1, -0.5, -1e-300, -0.0,
                           0, 1e-300, 0.5, 1, 1.5, 2, 30.5, 31, 31.5, 32, 32.5, 255, 256, 3001, 65535.5, 0x1p53 - 1, 0x1p53, 0x1p60, 1e300,
                           INFINITY, -INFINITY};
    std::vector<Tuple> ts;
    for (int i = 0; i < 2000; ++i) {
      ts.push_back({nums[rng() % std::size(nums)], texts[rng() % std::size(texts)], nums[rng() % std::size(nums)]});
    }
    for (size_t i = 0; i + 1 < ts.size(); ++i) {
      const Tuple& x = ts[i];
      const Tuple& y = ts[i + 1];
      std::string ex = encoded(x), ey = encoded(y);
      CHECK_MESSAGE((x < y) == (ex < ey), i);
      CHECK_MESSAGE((!(x < y) && !(y < x)) == (ex == ey), i);
    }
  }

  TEST_CASE("whole numbers below 32 are one byte; 32 and fractions below it are not") {
    CHECK(encoded({0, "", 31}).back() == '\x7e');  // 0x40 + 2 * 31
    CHECK(encoded({0, "", 32}).substr(3) == "\x81\x40");  // p = 64 in one byte
    CHECK(encoded({0, "", 31.5}).size() == 3 + 1 + 8);   // p = 63 and the fraction
    CHECK(encoded({0, "", -0.0}) == encoded({0, "", 0}));
  }

  TEST_CASE("a text's order image reads 7 bytes and the length, at every length around 7") {
    const std::string texts[] = {"", "abcdef", "abcdefg", "abcdefgh", "abcdefga", "abcdeg", "abcdefg\x01"};
    for (const std::string& x : texts) {
      for (const std::string& y : texts) {
        TextObj* tx = heap_text(x);
        TextObj* ty = heap_text(y);
        int c = key_cmp(text_key(tx), text_key(ty));
        CHECK_MESSAGE((c < 0) == (x < y), x, " vs ", y);
        CHECK_MESSAGE((c == 0) == (x == y), x, " vs ", y);
        release(tx);
        release(ty);
      }
    }
  }

  TEST_CASE("-0 and 0 encode alike; a text's 0x00 is escaped and the text terminated") {
    CHECK(encoded({-0.0, "", 1}) == encoded({0.0, "", 1}));
    std::string e = encoded({1, std::string("x\0y", 3), 2});
    CHECK(e == std::string("\x42" "x\0\xffy\0\x01" "\x44", 8));
  }

  TEST_CASE("a prefix's end bounds exactly the keys that start with it") {
    std::string lo = encoded({5, "ab", 0}, 2);  // (5, "ab")
    std::string hi = lo;
    hi.resize(prefix_end(hi.data(), hi.size()));
    for (const Tuple& t : {Tuple{5, "ab", -INFINITY}, Tuple{5, "ab", 0}, Tuple{5, "ab", INFINITY}}) {
      std::string k = encoded(t);
      CHECK(lo <= k);
      CHECK(k < hi);
    }
    for (const Tuple& t : {Tuple{5, "abc", 0}, Tuple{5, "b", 0}, Tuple{6, "", 0}, Tuple{5, std::string("ab\0", 3), 0}}) {
      CHECK_FALSE((lo <= encoded(t) && encoded(t) < hi));
    }
    std::string ff("\x01\xff\xff", 3);  // trailing 0xFF bytes carry
    CHECK(prefix_end_length(ff) == 1);  // told before the bytes change
    CHECK(prefix_end_length("\x01\x02") == 2);
    CHECK(prefix_end(ff.data(), 3) == 1);
    CHECK(ff[0] == '\x02');
  }

  TEST_CASE("whole numbers take a few bytes, so the first 8 hold several fields") {
    CHECK(encoded({0, "", 0}, 1) == "\x40");
    CHECK(encoded({1, "", 0}, 1) == "\x42");
    CHECK(encoded({31, "", 0}, 1) == "\x7e");
    CHECK(encoded({32, "", 0}, 1) == "\x81\x40");
    CHECK(encoded({3001, "", 0}, 1) == "\x82\x17\x72");
    CHECK(encoded({-1, "", 0}, 1) == "\x3e\xfd");
    CHECK(encoded({0.5, "", 0}, 1).size() == 1 + 8);
    CHECK(encoded({100.5, "", 0}, 1).size() == 1 + 1 + 8);
    CHECK(encoded({0x1p53, "", 0}, 1).size() == 9);
    CHECK(encoded({-0x1p53, "", 0}, 1).size() == 9);
  }

  TEST_CASE("whole numbers at and past 2^52, where the integer-conversion path stops, encode alike") {
    using namespace std::string_literals;
    // p = 2^53 - 2, 2^53, 2^53 + 2: seven bytes after the tag either side.
    CHECK(encoded({0x1p52 - 1, "", 0}, 1) == "\x87\x1f\xff\xff\xff\xff\xff\xfe"s);
    CHECK(encoded({0x1p52, "", 0}, 1) == "\x87\x20\x00\x00\x00\x00\x00\x00"s);
    CHECK(encoded({0x1p52 + 1, "", 0}, 1) == "\x87\x20\x00\x00\x00\x00\x00\x02"s);
    // Just below 2^52 with a fraction: p = 2^53 - 1, then the fraction's 8 bytes.
    CHECK(encoded({0x1p52 - 0.5, "", 0}, 1).substr(0, 8) == "\x87\x1f\xff\xff\xff\xff\xff\xff"s);
    CHECK(encoded({0x1p52 - 0.5, "", 0}, 1).size() == 1 + 7 + 8);
    CHECK(encoded({63, "", 0}, 1) == "\x81\x7e");
    CHECK(encoded({65535, "", 0}, 1) == "\x83\x01\xff\xfe");
  }

  TEST_CASE("every pair of numbers of every kind compares like the numbers") {
    const double nums[] = {-INFINITY, -1e300, -0x1p60, -0x1p53, -0x1p53 + 1, -65536.5, -65536, -256, -255.5, -255,
                           -2.5, -2, -1.5, -1, -0.75, -0.5, -1e-300, 0, 1e-300, 0.25, 0.5, 1, 1.5, 2, 255, 255.5,
                           256, 3001, 65535.5, 0x1p52 - 1, 0x1p52 - 0.5, 0x1p52, 0x1p52 + 1, 0x1p53 - 1, 0x1p53,
                           0x1p60, 1e300, INFINITY};
    for (double a : nums) {
      for (double b : nums) {
        CHECK_MESSAGE((a < b) == (encoded({a, "", 0}, 1) < encoded({b, "", 0}, 1)), a << " " << b);
      }
    }
  }

  TEST_CASE("every kind of number reads back from its encoding") {
    for (double x : {0.0, 1.0, -1.0, 0.5, -0.5, -255.5, 255.0, 256.0, 3001.25, 1e-300, -1e-300, 0x1p52 - 1, 0x1p52 - 0.5,
                     0x1p52, 0x1p52 + 1, 0x1p53 - 1, -0x1p53 + 1,
                     0x1p53, -0x1p53, 1e300, -1e300, double(INFINITY), -double(INFINITY)}) {
      std::string want = "(";
      char buf[40];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
      want.append(buf, end);
      CHECK(describe_key(encoded({x, "", 0}, 1), 1, 0) == want + ")");
    }
  }

  TEST_CASE("a key decodes to its components; bytes that are not one are refused") {
    std::string e = encoded({-2.5, std::string("a\0b", 3), 0x1p60});
    std::vector<KeyComponent> parts;
    REQUIRE(decode_key(e, 3, 0b010, parts));
    CHECK(parts[0].num == -2.5);
    CHECK(parts[1].text == std::string("a\0b", 3));
    CHECK(parts[2].num == 0x1p60);
    CHECK_FALSE(decode_key(e, 2, 0b010, parts));                     // bytes left over
    CHECK_FALSE(decode_key(e.substr(0, e.size() - 1), 3, 0b010, parts));  // cut short in a number
    CHECK_FALSE(decode_key(encoded({1, "ab", 0}, 2).substr(0, 3), 2, 0b010, parts));  // no terminator
    CHECK_FALSE(decode_key(std::string("\x42" "a\0\x05", 4), 2, 0b010, parts));        // a broken escape
    CHECK_FALSE(decode_key(std::string("\xff", 1), 1, 0, parts));                     // no such tag
  }

  TEST_CASE("keys describe themselves, prefixes too") {
    std::string e = encoded({1, "o\"k", 2.5});
    CHECK(describe_key(e, 3, 0b010) == "(1, \"o\\\"k\", 2.5)");
    CHECK(describe_key(encoded({1, "x", 0}, 2), 3, 0b010) == "(1, \"x\")");
    CHECK(describe_key(encoded({-0.0, std::string("a\0", 2), 0}, 2), 2, 0b010) == std::string("(0, \"a\0\")", 9));
  }

  TEST_CASE("a held key: the field itself for one field, an owned text for several") {
    TextObj* name = heap_text("ann");
    uint64_t row[3] = {std::bit_cast<uint64_t>(7.0), reinterpret_cast<uint64_t>(name), std::bit_cast<uint64_t>(-0.0)};
    {
      HeldKey one(KeySpec{{1}, 1}, row);
      CHECK(one.key().text == name);
      CHECK(name->refs == 1);  // borrowed
      HeldKey num(KeySpec{{2}, 0}, row);
      CHECK(num.key().text == nullptr);
      CHECK(num.key().ord == num_key(0).ord);
      HeldKey two(KeySpec{{0, 1}, 0b10}, row);
      REQUIRE(two.key().text != nullptr);
      CHECK(two.key().text->view() == encoded({7, "ann", 0}, 2));
      uint64_t parts[2] = {row[0], row[1]};
      HeldKey same(KeySpec{{0, 1}, 0b10}, parts, HeldKey::From::Parts);
      CHECK(key_cmp(two.key(), same.key()) == 0);
    }
    CHECK(name->refs == 1);
    release(name);
  }

  TEST_CASE("a held composite key takes the bytes it encodes to, not the bound: short and long keys") {
    // A tree keeps the held key's text: allocated at the bound (17 bytes a
    // number), TPC-C's order-line keys each held 48 bytes more than they use.
    uint64_t line[4] = {std::bit_cast<uint64_t>(1.0), std::bit_cast<uint64_t>(2.0), std::bit_cast<uint64_t>(3001.0),
                        std::bit_cast<uint64_t>(5.0)};
    HeldKey short_key(KeySpec{{0, 1, 2, 3}, 0}, line);
    REQUIRE(short_key.key().text != nullptr);
    CHECK(short_key.key().text->len == 6);
    std::string want(key_bytes(line, 4, 0), '\0');
    encode_key(line, 4, 0, want.data());
    CHECK(short_key.key().text->view() == want);
    CHECK(text_heap_bytes(short_key.key().text) == 16);  // a text pool block: 10 bytes of header and 6
    TextObj* big = heap_text(std::string(300, 'x'));  // past the stack buffer: encoded in place
    uint64_t row[2] = {std::bit_cast<uint64_t>(9.0), reinterpret_cast<uint64_t>(big)};
    HeldKey long_key(KeySpec{{0, 1}, 0b10}, row);
    CHECK(long_key.key().text->view() == encoded({9, std::string(300, 'x'), 0}, 2));
    CHECK(key_cmp(long_key.key(), HeldKey(KeySpec{{0, 1}, 0b10}, row).key()) == 0);
    release(big);
  }

  TEST_CASE("a key of numbers only past the stack buffer's room: an index entry of 16, each at its longest") {
    // An index entry's components are its fields and then the primary
    // key's, up to 2 x kMaxKeyFields. 2^50 + 0.5 takes 16 bytes (its tag,
    // 7 bytes of whole part, 8 of the fraction's order image), so 16 such
    // numbers take 256, past the 136 bytes on the stack.
    for (uint32_t count : {kMaxKeyFields, kMaxKeyFields + 1, 2 * kMaxKeyFields}) {
      CAPTURE(count);
      std::vector<uint64_t> parts;
      for (uint32_t i = 0; i < count; ++i) parts.push_back(std::bit_cast<uint64_t>(0x1p50 + 0.5 + i * 4096.0));
      std::string want(key_bytes(parts.data(), count, 0), '\0');
      REQUIRE(want.size() == 16 * count);
      REQUIRE(encode_key(parts.data(), count, 0, want.data()) == want.size());
      TextObj* t = encoded_key_text(parts.data(), count, 0);
      CHECK(t->view() == want);
      release(t);
    }
  }

  TEST_CASE("the NaN key is no encoding of a number or of UTF-8, and is never counted") {
    TextObj* k = nan_key();
    CHECK(k->view() == std::string(8, '\xff'));
    CHECK(k->in_arena);
    std::string biggest = encoded({INFINITY, "\xF4\x8F\xBF\xBF", INFINITY}, 1);
    CHECK(biggest < std::string(k->view()));
  }

  TEST_CASE("a text in a message is cut at 64 bytes where a code point starts, so the message stays UTF-8") {
    auto q = [](std::string_view t) {
      std::string out;
      append_quoted(out, t);
      return out;
    };
    std::string a63(63, 'a');
    CHECK(q(std::string(64, 'a')) == "\"" + std::string(64, 'a') + "\"");
    CHECK(q(std::string(65, 'a')) == "\"" + std::string(64, 'a') + "...\"");
    CHECK(q(a63 + "é") == "\"" + a63 + "...\"");           // é is bytes 63 and 64: not split
    CHECK(q(a63 + "\U0001F600") == "\"" + a63 + "...\"");  // nor a 4-byte code point
    CHECK(q(std::string(62, 'a') + "é") == "\"" + std::string(62, 'a') + "é\"");  // 64 bytes whole
    CHECK(q("say \"hi\" \\") == "\"say \\\"hi\\\" \\\\\"");
  }
}

}  // namespace
}  // namespace aup::vm

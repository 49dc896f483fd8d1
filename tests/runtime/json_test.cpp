#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/json.h"
#include "stdlib/numbers.h"

namespace aup::runtime {
namespace {

using K = JsonNode::Kind;

std::string parse_error(std::string_view text) {
  JsonDoc doc;
  std::string error;
  CHECK_FALSE(doc.parse(text, error));
  return error;
}

TEST_SUITE("json") {
  TEST_CASE("an object's member by key; none in other nodes") {
    JsonDoc doc;
    std::string error;
    REQUIRE(doc.parse(R"({"a":[1,{"b":2}],"c":"x","a2":{}})", error));
    uint32_t a = doc.member(doc.root(), "a");
    REQUIRE(a != 0);
    CHECK(doc.node(a).kind == JsonNode::Kind::Array);
    CHECK(doc.node(doc.member(doc.root(), "c")).str == "x");
    CHECK(doc.member(doc.root(), "b") == 0);  // only the object's own members
    CHECK(doc.member(a, "b") == 0);           // an array has none
    CHECK(doc.member(doc.member(doc.root(), "a2"), "a") == 0);
  }

  TEST_CASE("scalars and raw text") {
    JsonDoc doc;
    std::string error;
    REQUIRE(doc.parse(R"( {"a": 1.50, "b": "x", "c": true, "d": null, "e": false} )", error));
    const JsonNode& root = doc.node(0);
    CHECK(root.kind == K::Object);
    CHECK(root.count == 5);
    uint32_t key = doc.first_child(0);
    CHECK(doc.node(key).str == "a");
    CHECK(doc.node(key + 1).num == 1.5);
    CHECK(doc.node(key + 1).raw == "1.50");  // ids are echoed as written
    key = doc.after(key + 1);
    CHECK(doc.node(key + 1).str == "x");
    CHECK(doc.node(key + 1).raw == "\"x\"");
    key = doc.after(key + 1);
    CHECK(doc.node(key + 1).kind == K::True);
    key = doc.after(key + 1);
    CHECK(doc.node(key + 1).kind == K::Null);
    key = doc.after(key + 1);
    CHECK(doc.node(key + 1).kind == K::False);
    CHECK(doc.after(key + 1) == root.next);
  }

  TEST_CASE("nested arrays and objects skip as subtrees") {
    JsonDoc doc;
    std::string error;
    REQUIRE(doc.parse(R"([[1,[2,3]],{"k":[{}]},4])", error));
    const JsonNode& root = doc.node(0);
    CHECK(root.count == 3);
    uint32_t a = doc.first_child(0);
    uint32_t b = doc.after(a);
    uint32_t c = doc.after(b);
    CHECK(doc.node(a).kind == K::Array);
    CHECK(doc.node(b).kind == K::Object);
    CHECK(doc.node(c).num == 4);
    CHECK(doc.after(c) == root.next);
  }

  TEST_CASE("escapes decode, including several in one string and surrogate pairs") {
    JsonDoc doc;
    std::string error;
    REQUIRE(doc.parse(R"(["a\"b\"c", "\\\/\b\f\n\r\t", "\u00e9\u4e2d\ud83d\ude00", "plain h\u00e9", "\u0000x"])", error));
    uint32_t i = doc.first_child(0);
    CHECK(doc.node(i).str == "a\"b\"c");
    i = doc.after(i);
    CHECK(doc.node(i).str == "\\/\b\f\n\r\t");
    i = doc.after(i);
    CHECK(doc.node(i).str == "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80");
    i = doc.after(i);
    CHECK(doc.node(i).str == "plain h\xC3\xA9");
    i = doc.after(i);
    CHECK(doc.node(i).str == std::string("\0x", 2));
  }

  TEST_CASE("numbers: grammar, correct rounding, overflow and underflow") {
    JsonDoc doc;
    std::string error;
    REQUIRE(doc.parse("[0, -0, 0.1, 1e21, 5e-324, 9007199254740993, 1E+2, 1e400, -1e400, 1e-400]", error));
    double want[] = {0, -0.0, 0.1, 1e21, 5e-324, 9007199254740992.0, 100};
    uint32_t i = doc.first_child(0);
    for (double w : want) {
      CHECK(std::bit_cast<uint64_t>(doc.node(i).num) == std::bit_cast<uint64_t>(w));
      CHECK(doc.node(i).finite);
      i = doc.after(i);
    }
    CHECK_FALSE(doc.node(i).finite);
    i = doc.after(i);
    CHECK_FALSE(doc.node(i).finite);
    i = doc.after(i);
    CHECK(doc.node(i).finite);
    CHECK(doc.node(i).num == 0);
    // Integers of up to 15 digits are read without from_chars: at and past
    // that length, signed, and with a fraction or an exponent after them.
    REQUIRE(doc.parse("[999999999999999, -999999999999999, 1000000000000000, 9999999999999999, 12345678901234567890, "
                      "7, -7, 12.5, 12e1, 123456789012345.5]", error));
    double integers[] = {999999999999999.0, -999999999999999.0, 1e15, 1e16, 12345678901234567890.0, 7, -7, 12.5, 120,
                         123456789012345.5};
    i = doc.first_child(0);
    for (double w : integers) {
      CHECK(std::bit_cast<uint64_t>(doc.node(i).num) == std::bit_cast<uint64_t>(w));
      CHECK(doc.node(i).finite);
      i = doc.after(i);
    }
    for (const char* bad : {"01", "1.", ".5", "+1", "1e", "-", "0x10", "1.e5", "NaN", "Infinity", "-a", "12a"}) {
      CAPTURE(bad);
      parse_error(bad);
    }
  }

  TEST_CASE("numbers round-trip bit for bit through the writer") {
    std::mt19937_64 rng(7);
    JsonDoc doc;
    std::string error;
    for (int n = 0; n < 20000; ++n) {
      double d = std::bit_cast<double>(rng());
      if (!std::isfinite(d)) continue;
      std::string text;
      json_append_number(text, d);
      REQUIRE(doc.parse(text, error));
      REQUIRE(std::bit_cast<uint64_t>(doc.node(0).num) == std::bit_cast<uint64_t>(d));
    }
  }

  TEST_CASE("whole numbers are written as std::to_chars writes them, integer digits or exponent") {
    auto shortest = [](double d) {
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
      return std::string(buf, end);
    };
    auto written = [](double d) {
      std::string out;
      json_append_number(out, d);
      return out;
    };
    std::vector<double> xs;
    for (int i = 0; i <= 200000; ++i) xs.push_back(i);
    for (double m : {1.0, 2.0, 15.0, 123.0, 4503.0, 999999.0}) {
      for (double p = 1; p < 0x1p53; p *= 10) xs.push_back(m * p);
    }
    std::mt19937_64 rng(11);
    for (int i = 0; i < 20000; ++i) xs.push_back(static_cast<double>(rng() >> (12 + rng() % 40)));
    for (double x : {0x1p52 - 1, 0x1p52, 0x1p52 + 1, 0x1p53, 1e15, 1e16, 0.5, 1e21}) xs.push_back(x);
    for (double x : xs) {
      CAPTURE(x);
      REQUIRE(written(x) == shortest(x));
      REQUIRE(written(-x) == shortest(-x));
    }
    CHECK(written(1000000) == "1e+06");
    CHECK(written(1500000) == "1500000");  // a tie: the integer
    CHECK(written(15000000) == "1.5e+07");
    CHECK(written(100000) == "1e+05");
    CHECK(written(10000) == "10000");
    CHECK(written(268146) == "268146");
    CHECK(written(-0.0) == "-0");
  }

  TEST_CASE("an integer written out that its binary64 does not hold is told apart; decimals and exponents are not") {
    // Each literal as the parser reads it, then the rule of
    // stdlib::integer_rounded (docs/protocol.md, "Values").
    auto rounded = [](std::string_view literal) {
      JsonDoc doc;
      std::string error;
      REQUIRE_MESSAGE(doc.parse(literal, error), error);
      REQUIRE(doc.node(0).finite);
      return stdlib::integer_rounded(doc.node(0).raw, doc.node(0).num);
    };
    const std::string dbl_max =
        "17976931348623157081452742373170435679807056752584499659891747680315726078002853876058955"
        "86327668781715404589535143824642343213268894641827684675467035375169860499105765512820762"
        "45490090389328944075868508455133942304583236903222948165808559332123348274797826204144723"
        "168738177180919299881250404026184124858368";
    for (std::string_view held : {
             "0", "-0", "1", "-1", "0.1", "19.99", "1e-400",      // ordinary numbers
             "9007199254740991", "9007199254740992", "-9007199254740992",  // up to 2^53
             "9007199254740994", "-9007199254740994", "9007199254740996",  // 2^53 + 2, + 4
             "1e20", "100000000000000000000", "1e22",           // 10^20, 10^22: exact
             "18446744073709551616", "123456789012345683968",   // 2^64, a binary64's digits
             "9007199254740992.0", "9007199254740994.000",      // a fraction of zeros: still exact
             "9007199254740993.5", "-9007199254740993.25",      // not integers: decimals, rounded
             "9007199254740991.99999999",                       // reads as 2^53; a decimal
             "9.007199254740993e15", "9007199254740993e0",      // exponents: read as the nearest
             "90071992547409930e-1", "1e23", "1e308", "-1e308", "1.7976931348623157e308",
             "9.9999999999999992e+22", "1.152921504606847e+18"}) {  // %.17g's 1e23, Python's 2^60
      CAPTURE(held);
      CHECK_FALSE(rounded(held));
    }
    CHECK_FALSE(rounded(dbl_max));
    CHECK_FALSE(rounded("-" + dbl_max));
    for (std::string_view lost : {
             "9007199254740993", "-9007199254740993",           // 2^53 + 1, read as 2^53
             "9007199254740995", "9007199254740997",            // between 2^53 + 2k and + 2k + 2
             "9007199254740993.0", "-9007199254740993.000",     // the same with a fraction of zeros
             "123456789012345678901", "18446744073709551615",   // 2^64 - 1
             "100000000000000000000000",                        // 10^23 written out
             "1152921504606847000"}) {  // 2^60 as JavaScript prints it: not 1152921504606846976
      CAPTURE(lost);
      CHECK(rounded(lost));
    }
    // Past the largest binary64 but rounding to it, and 10^308 written out.
    std::string past_max = dbl_max;
    past_max.back() = '9';
    CHECK(rounded(past_max));
    CHECK(rounded("1" + std::string(308, '0')));
  }

  TEST_CASE("a binary64's exact integer digits, checked against long multiplication") {
    CHECK(stdlib::exact_integer(0x1p53) == "9007199254740992");
    CHECK(stdlib::exact_integer(-1e22) == "-10000000000000000000000");
    CHECK(stdlib::exact_integer(1e23) == "99999999999999991611392");
    CHECK(stdlib::exact_integer(0x1p64) == "18446744073709551616");
    CHECK(stdlib::exact_integer(-0.0) == "-0");
    CHECK(stdlib::exact_integer(1e308).size() == 309);
    // An independent computation: the 53-bit mantissa times 2^k in base
    // 10^9 limbs, for random binary64 values of magnitude 2^53 or more.
    auto by_hand = [](double d) {
      int exp = 0;
      double frac = std::frexp(std::fabs(d), &exp);  // d = frac * 2^exp, frac in [0.5, 1)
      auto mantissa = static_cast<uint64_t>(std::ldexp(frac, 53));
      std::vector<uint64_t> limbs{mantissa % 1000000000, mantissa / 1000000000 % 1000000000,
                                  mantissa / 1000000000000000000};  // little-endian, base 10^9
      for (int k = exp - 53; k > 0; k -= 20) {
        uint64_t carry = 0;
        for (uint64_t& l : limbs) {
          uint64_t v = (l << std::min(k, 20)) + carry;
          l = v % 1000000000;
          carry = v / 1000000000;
        }
        while (carry) {
          limbs.push_back(carry % 1000000000);
          carry /= 1000000000;
        }
      }
      while (limbs.size() > 1 && limbs.back() == 0) limbs.pop_back();
      std::string out = d < 0 ? "-" + std::to_string(limbs.back()) : std::to_string(limbs.back());
      for (size_t i = limbs.size() - 1; i-- > 0;) {
        std::string part = std::to_string(limbs[i]);
        out += std::string(9 - part.size(), '0') + part;
      }
      return out;
    };
    std::mt19937_64 rng(53);
    int checked = 0;
    while (checked < 3000) {
      double d = std::bit_cast<double>(rng());
      if (!std::isfinite(d) || std::fabs(d) < 0x1p53) continue;
      ++checked;
      std::string exact = stdlib::exact_integer(d);
      REQUIRE(exact == by_hand(d));
      // Its own digits are held; one more in the last (odd) digit is not,
      // since every binary64 from 2^53 on is even.
      CHECK_FALSE(stdlib::integer_rounded(exact, d));
      std::string odd = exact;
      odd.back() = static_cast<char>(odd.back() + 1);
      JsonDoc doc;
      std::string error;
      REQUIRE(doc.parse(odd, error));
      CHECK(stdlib::integer_rounded(doc.node(0).raw, doc.node(0).num));
    }
  }

  TEST_CASE("bad input is refused with a position") {
    CHECK(parse_error("").find("unexpected end") != std::string::npos);
    CHECK(parse_error("{\"a\":1,}").find("expected a member name") != std::string::npos);
    CHECK(parse_error("{\"a\" 1}").find("expected `:`") != std::string::npos);
    CHECK(parse_error("[1 2]").find("expected `,` or `]`") != std::string::npos);
    CHECK(parse_error("{} x").find("after the value") != std::string::npos);
    CHECK(parse_error("\"abc").find("unterminated") != std::string::npos);
    CHECK(parse_error("\"a\tb\"").find("control character") != std::string::npos);
    CHECK(parse_error("\"\\x\"").find("unknown escape") != std::string::npos);
    CHECK(parse_error("\"\\u12\"").find("\\u escape") != std::string::npos);
    CHECK(parse_error("\"\\ud800\"").find("lone surrogate") != std::string::npos);
    CHECK(parse_error("\"\\udc00\"").find("lone surrogate") != std::string::npos);
    // A high surrogate followed by a \u escape that is not a low one: the
    // pair is refused, not decoded into some other code point.
    CHECK(parse_error("\"x\\ud800\\u0041y\"").find("lone surrogate") != std::string::npos);
    CHECK(parse_error("\"\\ud800\\ud800\"").find("lone surrogate") != std::string::npos);
    CHECK(parse_error("\"\\udbff\\ue000\"").find("lone surrogate") != std::string::npos);
    CHECK(parse_error("tru").find("invalid literal") != std::string::npos);
    CHECK(parse_error("{\"a\":1").find("at byte") != std::string::npos);
  }

  TEST_CASE("a refusal quotes a byte only when it is printable ASCII, so the answer stays valid UTF-8") {
    // Fuzz finding (request_fuzz): the message quoted the offending byte
    // as it was, so a bad_request answer to a line holding a lone byte of
    // a UTF-8 sequence was itself not valid UTF-8, nor JSON.
    struct Case {
      std::string_view text, says;
    };
    for (const Case& c : {Case{"\xff", "unexpected byte 0xFF"}, Case{"\xc3\xa9", "unexpected byte 0xC3"},
                          Case{"{} \xe2\x82\xac", "unexpected byte 0xE2 after the value"},
                          Case{"\"\\\xc3\xa9\"", "unknown escape: byte 0xC3 after `\\`"},
                          Case{"\x01", "unexpected byte 0x01"}, Case{"x", "unexpected `x`"},
                          Case{"\"\\q\"", "unknown escape: `q` after `\\`"}}) {
      std::string error = parse_error(c.text);
      CHECK_MESSAGE(error.find(c.says) != std::string::npos, error);
      std::string answer;
      json_append_string(answer, error);
      JsonDoc doc;
      std::string problem;
      CHECK_MESSAGE(doc.parse(answer, problem), problem);
    }
  }

  TEST_CASE("invalid UTF-8 in strings is refused") {
    for (const char* bad : {"\"\xFF\"", "\"\xC0\x80\"", "\"\xED\xA0\x80\"", "\"\xF4\x90\x80\x80\"",
                            "\"\xE2\x82\"", "\"\x80\""}) {
      CAPTURE(bad);
      CHECK(parse_error(bad).find("invalid UTF-8") != std::string::npos);
    }
    JsonDoc doc;
    std::string error;
    CHECK(doc.parse("\"\xF0\x9F\x98\x80 \xE2\x82\xAC \xC3\xA9\"", error));
  }

  TEST_CASE("nesting is bounded") {
    std::string ok(kMaxJsonDepth, '['), deep(kMaxJsonDepth + 1, '[');
    ok += std::string(kMaxJsonDepth, ']');
    deep += std::string(kMaxJsonDepth + 1, ']');
    JsonDoc doc;
    std::string error;
    CHECK(doc.parse(ok, error));
    CHECK(parse_error(deep).find("nesting deeper than") != std::string::npos);
    std::string bomb(100000, '[');
    CHECK(parse_error(bomb).find("nesting deeper than") != std::string::npos);
  }

  TEST_CASE("writer escapes what JSON requires and keeps UTF-8") {
    std::string out;
    json_append_string(out, "q\"b\\n\nt\tc\x01 \xC3\xA9");
    CHECK(out == "\"q\\\"b\\\\n\\nt\\tc\\u0001 \xC3\xA9\"");
    out.clear();
    json_append_number(out, 1e21);
    out += ' ';
    json_append_number(out, -0.0);
    out += ' ';
    json_append_number(out, 100);
    CHECK(out == "1e+21 -0 100");
  }

  TEST_CASE("a document is reusable") {
    JsonDoc doc;
    std::string error;
    REQUIRE(doc.parse(R"({"a":"\n"})", error));
    REQUIRE(doc.parse(R"([1])", error));
    CHECK(doc.node(0).kind == K::Array);
    CHECK(doc.node(1).num == 1);
  }

  TEST_CASE("JsonStrings: what lies outside strings, escapes and escaped quotes included") {
    auto outside = [](std::string_view text) {
      JsonStrings strings;
      std::string kept;
      for (char c : text) {
        if (strings.outside(c)) kept += c;
      }
      return kept + (strings.in_string() ? "|open" : "");
    };
    CHECK(outside(R"({"a":[1,"x,y"]})") == "{:[1,]}");
    CHECK(outside(R"(["\"]", "\\", 2])") == "[, , 2]");  // an escaped quote stays inside; \\ ends
    CHECK(outside(R"("a" "b)") == " |open");
    CHECK(outside("") == "");
  }
}

}  // namespace
}  // namespace aup::runtime
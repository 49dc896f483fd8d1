#include <doctest/doctest.h>

#include <bit>
#include <cstring>
#include <random>
#include <string>

#include "runtime/json.h"

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
    for (const char* bad : {"01", "1.", ".5", "+1", "1e", "-", "0x10", "1.e5", "NaN", "Infinity"}) {
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
}

}  // namespace
}  // namespace aup::runtime

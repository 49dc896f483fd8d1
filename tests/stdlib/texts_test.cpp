// stdlib/texts.h: the text methods on byte views, each rule of the header
// (positions in code points, whole or refused, clamped; results bounded;
// ASCII case) held by a case.
#include "stdlib/texts.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace aup::stdlib {
namespace {

// The code points of `t`, one by one (the reference the fast paths must agree with).
std::vector<std::string> naive_points(const std::string& t) {
  std::vector<std::string> out;
  for (char c : t) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) out.emplace_back();
    out.back() += c;
  }
  return out;
}

std::string random_text(std::mt19937& rng, size_t points) {
  static const char* kPieces[] = {"a", "Z", " ", "é", "€", "😀", "\x7f", "ß"};
  std::string t;
  for (size_t i = 0; i < points; ++i) t += kPieces[rng() % 8];
  return t;
}

std::string sliced(std::string_view t, double a, double b) {
  std::string_view out;
  REQUIRE(text_slice(t, a, b, &out) == TextStatus::Ok);
  return std::string(out);
}

TEST_SUITE("texts") {
  TEST_CASE("code points and byte offsets agree with a byte-by-byte count, across every word boundary") {
    std::mt19937 rng(7);
    for (int round = 0; round < 600; ++round) {
      // Half of them after a long ASCII run (the 32-byte stride).
      std::string t = (round % 2 ? std::string(rng() % 100, 'x') : "") + random_text(rng, rng() % 40);
      std::vector<std::string> points = naive_points(t);
      CHECK(code_points(t) == points.size());
      size_t at = 0;
      for (size_t n = 0; n <= points.size() + 2; ++n) {
        CHECK(byte_offset(t, n) == std::min(at, t.size()));
        if (n < points.size()) at += points[n].size();
      }
    }
  }

  TEST_CASE("code points of long texts: the byte lanes are summed before they can carry") {
    std::mt19937 rng(5);
    for (size_t points : {255u * 8, 3000u, 10000u}) {
      std::string t = random_text(rng, points);
      CHECK(code_points(t) == points);
    }
    std::string faces;
    for (int i = 0; i < 5000; ++i) faces += "\U0001F600";  // 3 continuation bytes in every 4
    CHECK(code_points(faces) == 5000);
    CHECK(code_points(std::string(100000, 'x')) == 100000);
    CHECK(byte_offset(faces, 4999) == 4 * 4999);
  }

  TEST_CASE("slice: code points a to b, clamped; b <= a is empty; positions must be whole") {
    CHECK(sliced("héllo", 1, 3) == "él");
    CHECK(sliced("héllo", -10, 2) == "hé");
    CHECK(sliced("héllo", 3, 99) == "lo");
    CHECK(sliced("héllo", 4, 2).empty());
    CHECK(sliced("héllo", 0, INFINITY) == "héllo");
    CHECK(sliced("héllo", -INFINITY, 1) == "h");
    CHECK(sliced("", 0, 5).empty());
    std::string_view out;
    CHECK(text_slice("abc", 0.5, 2, &out) == TextStatus::NotWhole);
    CHECK(text_slice("abc", 0, NAN, &out) == TextStatus::NotWhole);
    std::mt19937 rng(11);
    for (int round = 0; round < 200; ++round) {
      std::string t = random_text(rng, rng() % 30);
      std::vector<std::string> points = naive_points(t);
      int a = static_cast<int>(rng() % 34) - 2, b = static_cast<int>(rng() % 34) - 2;
      std::string want;
      for (int i = std::max(a, 0); i < std::min<int>(b, static_cast<int>(points.size())); ++i) want += points[i];
      CHECK(sliced(t, a, b) == want);
    }
  }

  TEST_CASE("find: the code-point position of the first match, -1 without one, 0 for an empty text") {
    CHECK(text_find("héllo héllo", "llo") == 2);
    CHECK(text_find("😀😀x", "x") == 2);
    CHECK(text_find("abc", "") == 0);
    CHECK(text_find("abc", "abcd") == -1);
    CHECK(text_find("", "a") == -1);
    CHECK(text_contains("abc", ""));
    CHECK_FALSE(text_contains("ab", "abc"));
    // Many false starts (each `a` begins one): found all the same, by the
    // linear search the first-byte scan hands over to.
    std::string as(1u << 20, 'a');
    std::string needle = std::string(1000, 'a') + "b";
    CHECK(text_find(as + "b", needle) == static_cast<double>(as.size() - 1000));
    CHECK(text_find(as, needle) == -1);
    CHECK(text_find("xaab" + as, "aab") == 1);
    // Against std::string_view::find on random texts of few letters.
    std::mt19937 rng(3);
    for (int round = 0; round < 2000; ++round) {
      std::string t, s;
      for (size_t i = rng() % 60; i > 0; --i) t += "ab"[rng() % 2];
      for (size_t i = 1 + rng() % 4; i > 0; --i) s += "ab"[rng() % 2];
      size_t want = t.find(s);
      CHECK(text_find(t, s) == (want == std::string::npos ? -1.0 : static_cast<double>(want)));
    }
  }

  TEST_CASE("replace: left to right, no overlaps; an empty `from` changes nothing; bounded") {
    std::string out;
    CHECK(text_replace("aaa", "aa", "b", out) == TextStatus::Ok);
    CHECK(out == "ba");
    CHECK(text_replace("abc", "", "x", out) == TextStatus::Ok);
    CHECK(out == "abc");
    CHECK(text_replace("a.b.c", ".", "", out) == TextStatus::Ok);
    CHECK(out == "abc");
    std::string big(1u << 20, 'a');
    CHECK(text_replace(big, "a", std::string(16, 'b'), out) == TextStatus::Ok);  // exactly 16 MiB
    CHECK(out.size() == kMaxResultTextBytes);
    CHECK(text_replace(big + "a", "a", std::string(16, 'b'), out) == TextStatus::TooLong);
  }

  TEST_CASE("split and join: pieces between separators, empty ones kept; an empty separator gives code points") {
    std::vector<std::string_view> parts;
    text_split("a,,b,", ",", parts);
    CHECK(parts == std::vector<std::string_view>{"a", "", "b", ""});
    text_split("", ",", parts);
    CHECK(parts == std::vector<std::string_view>{""});
    text_split("é😀", "", parts);
    CHECK(parts == std::vector<std::string_view>{"é", "😀"});
    text_split("", "", parts);
    CHECK(parts.empty());
    std::string out;
    std::vector<std::string_view> xs = {"a", "", "b"};
    CHECK(text_join(xs, "--", out) == TextStatus::Ok);
    CHECK(out == "a----b");
    CHECK(text_join({}, ",", out) == TextStatus::Ok);
    CHECK(out.empty());
    std::string half(kMaxResultTextBytes / 2, 'x');
    std::vector<std::string_view> two = {half, half};
    CHECK(text_join(two, "", out) == TextStatus::Ok);
    CHECK(text_join(two, ",", out) == TextStatus::TooLong);
  }

  TEST_CASE("trim takes ASCII white space only; case maps A-Z and a-z only") {
    CHECK(text_trim(" \t\n\v\f\rx y\r\n") == "x y");
    CHECK(text_trim("\u00a0x") == "\u00a0x");  // a no-break space is not ASCII
    CHECK(text_trim("   ").empty());
    std::string out;
    bool same = false;
    text_upper("héllo", out, &same);
    CHECK_FALSE(same);
    CHECK(out == "HéLLO");
    text_upper("ÉTÉ 42", out, &same);
    CHECK(same);
    text_lower("ÀBC", out, &same);
    CHECK(out == "Àbc");
    CHECK(text_eq_ignore_case("Straße", "STRAßE"));
    CHECK_FALSE(text_eq_ignore_case("é", "É"));
    CHECK_FALSE(text_eq_ignore_case("ab", "abc"));
    CHECK_FALSE(text_eq_ignore_case("@", "`"));  // 0x40 and 0x60 differ by the case bit but are not letters
  }

  TEST_CASE("pad: to a width in code points with one code point; as wide already is unchanged") {
    std::string out;
    bool same = false;
    CHECK(text_pad("é", 3, "·", true, out, &same) == TextStatus::Ok);
    CHECK(out == "··é");
    CHECK(text_pad("é", 3, " ", false, out, &same) == TextStatus::Ok);
    CHECK(out == "é  ");
    CHECK(text_pad("abc", 2, " ", true, out, &same) == TextStatus::Ok);
    CHECK(same);
    CHECK(text_pad("abc", -INFINITY, " ", true, out, &same) == TextStatus::Ok);
    CHECK(same);
    CHECK(text_pad("a", 2.5, " ", true, out, &same) == TextStatus::NotWhole);
    CHECK(text_pad("a", 2, "ab", true, out, &same) == TextStatus::BadFill);
    CHECK(text_pad("a", 2, "", true, out, &same) == TextStatus::BadFill);
    CHECK(text_pad("", kMaxResultTextBytes, "x", true, out, &same) == TextStatus::Ok);
    CHECK(text_pad("", kMaxResultTextBytes + 1.0, "x", true, out, &same) == TextStatus::TooLong);
    CHECK(text_pad("", INFINITY, "x", true, out, &same) == TextStatus::TooLong);
  }

  TEST_CASE("repeat: n times, n clamped at 0, bounded; an empty text any number of times is empty") {
    std::string out;
    CHECK(text_repeat("ab", 3, out) == TextStatus::Ok);
    CHECK(out == "ababab");
    CHECK(text_repeat("ab", -1, out) == TextStatus::Ok);
    CHECK(out.empty());
    CHECK(text_repeat("", INFINITY, out) == TextStatus::Ok);
    CHECK(text_repeat("ab", kMaxResultTextBytes / 2, out) == TextStatus::Ok);
    CHECK(text_repeat("ab", kMaxResultTextBytes / 2 + 1, out) == TextStatus::TooLong);
    CHECK(text_repeat("ab", NAN, out) == TextStatus::NotWhole);
  }
}

}  // namespace
}  // namespace aup::stdlib

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "compiler/lexer.h"

namespace aup {
namespace {

struct Lexed {
  SourceFile file;
  Interner names;
  Diagnostics diags;
  LexOutput out;
  explicit Lexed(std::string text) : file("t.aup", std::move(text)) {
    out = lex(file, names, diags);
  }
  Tok kind(size_t i) const { return out.tokens.at(i).kind; }
  std::string_view sym(size_t i) const { return names.str(out.tokens.at(i).sym); }
};

TEST_SUITE("lexer") {
  TEST_CASE("keywords, names and punctuation") {
    Lexed l("record Account { id: num } table accounts: Account key id");
    CHECK(l.kind(0) == Tok::KwRecord);
    CHECK(l.kind(1) == Tok::Ident);
    CHECK(l.sym(1) == "Account");
    CHECK(l.kind(2) == Tok::LBrace);
    CHECK(l.kind(4) == Tok::Colon);
    CHECK(l.kind(6) == Tok::RBrace);
    CHECK(l.kind(7) == Tok::KwTable);
    CHECK(l.kind(11) == Tok::KwKey);
    CHECK(l.out.tokens.back().kind == Tok::Eof);
    CHECK(l.diags.empty());
  }

  TEST_CASE("a keyword prefix is a name") {
    Lexed l("records onward iffy format notable");
    for (size_t i = 0; i < 5; ++i) CHECK(l.kind(i) == Tok::Ident);
  }

  TEST_CASE("operators, longest match first") {
    Lexed l("== != <= >= < > = .. . + - * / %");
    Tok want[] = {Tok::Eq, Tok::Ne, Tok::Le,  Tok::Ge,   Tok::Lt,    Tok::Gt,   Tok::Assign,
                  Tok::DotDot, Tok::Dot, Tok::Plus, Tok::Minus, Tok::Star, Tok::Slash, Tok::Percent};
    for (size_t i = 0; i < std::size(want); ++i) CHECK(l.kind(i) == want[i]);
  }

  TEST_CASE("numbers are correctly rounded binary64") {
    Lexed l("12 0.5 1e7 2.5E-3 10_000_000 0.1 5e-324 1.7976931348623157e308 9.007199254740993e15 "
            "9007199254740994");
    double want[] = {12, 0.5, 1e7, 2.5e-3, 1e7, 0.1, 5e-324, 1.7976931348623157e308,
                     9007199254740992.0, 9007199254740994.0};
    for (size_t i = 0; i < std::size(want); ++i) {
      CHECK(l.kind(i) == Tok::Number);
      CHECK(std::memcmp(&l.out.tokens[i].number, &want[i], sizeof(double)) == 0);
    }
    CHECK(l.diags.empty());
  }

  TEST_CASE("an integer written out that no binary64 holds is an error, as in a request's arguments") {
    Lexed l("9007199254740993 x 123_456_789_012_345_680_000");
    REQUIRE(l.diags.size() == 2);
    CHECK(l.diags.list()[0].message ==
          "number `9007199254740993` is not exactly a binary64 (integers beyond ±2^53 are rounded: it would be "
          "9007199254740992)");
    CHECK(l.diags.list()[1].message.find("`123456789012345680000`") != std::string::npos);
  }

  TEST_CASE("a number too small rounds to zero; too large is an error") {
    Lexed small("1e-400");
    CHECK(small.diags.empty());
    CHECK(small.out.tokens[0].number == 0.0);
    Lexed big("1e400");
    REQUIRE(big.diags.size() == 1);
    CHECK(big.diags.list()[0].message.find("too large") != std::string::npos);
  }

  TEST_CASE("range after an integer is not a fraction") {
    Lexed l("1..5");
    CHECK(l.kind(0) == Tok::Number);
    CHECK(l.kind(1) == Tok::DotDot);
    CHECK(l.kind(2) == Tok::Number);
  }

  TEST_CASE("malformed numbers") {
    for (const char* s : {"12abc", "1_", "1__0", "1e", "3x"}) {
      Lexed l(s);
      CAPTURE(s);
      REQUIRE(l.diags.size() == 1);
      CHECK(l.diags.list()[0].message.find("malformed number") != std::string::npos);
      CHECK(l.kind(0) == Tok::Number);
    }
  }

  TEST_CASE("text escapes decode") {
    Lexed l(R"("a\"b\\c\nd\te\rf\u{48}\u{e9}\u{1F600}")");
    REQUIRE(l.kind(0) == Tok::Text);
    CHECK(l.sym(0) == "a\"b\\c\nd\te\rfH\xC3\xA9\xF0\x9F\x98\x80");
    CHECK(l.diags.empty());
  }

  TEST_CASE("bad escapes are reported where they are") {
    Lexed l(R"(let x = "ab\qc")");
    REQUIRE(l.diags.size() == 1);
    CHECK(l.diags.list()[0].pos.col == 12);
    CHECK(l.diags.list()[0].message.find("unknown escape `\\q`") != std::string::npos);
    Lexed surrogate(R"("\u{D800}")");
    REQUIRE(surrogate.diags.size() == 1);
    CHECK(surrogate.diags.list()[0].message.find("not a Unicode scalar value") != std::string::npos);
    Lexed nobrace(R"("\u0041")");
    REQUIRE(nobrace.diags.size() == 1);
  }

  TEST_CASE("unterminated text stops at the line end") {
    Lexed l("let x = \"abc\nlet y = 2");
    REQUIRE(l.diags.size() == 1);
    CHECK(l.diags.list()[0].message.find("unterminated") != std::string::npos);
    // The next line lexes normally.
    CHECK(l.kind(4) == Tok::KwLet);
    CHECK(l.out.tokens[4].newline_before);
  }

  TEST_CASE("line breaks are marked on the next token") {
    Lexed l("a b\nc // comment\n\n  d");
    CHECK_FALSE(l.out.tokens[0].newline_before);
    CHECK_FALSE(l.out.tokens[1].newline_before);
    CHECK(l.out.tokens[2].newline_before);
    CHECK(l.out.tokens[3].newline_before);
  }

  TEST_CASE("positions: lines and code-point columns") {
    Lexed l("x\n  \"h\xC3\xA9llo\" y\n\tz");
    CHECK(l.out.tokens[0].pos.line == 1);
    CHECK(l.out.tokens[0].pos.col == 1);
    CHECK(l.out.tokens[1].pos.line == 2);
    CHECK(l.out.tokens[1].pos.col == 3);
    // "héllo" is 7 code points with its quotes, 8 bytes.
    CHECK(l.out.tokens[2].pos.col == 11);
    CHECK(l.out.tokens[2].pos.offset == 13);
    CHECK(l.out.tokens[3].pos.line == 3);
    CHECK(l.out.tokens[3].pos.col == 2);
  }

  TEST_CASE("foreign operators become aup's, with one error each") {
    Lexed l("a && b || !c");
    CHECK(l.diags.size() == 3);
    CHECK(l.kind(1) == Tok::KwAnd);
    CHECK(l.kind(3) == Tok::KwOr);
    CHECK(l.kind(4) == Tok::KwNot);
    Lexed plus("x += 1");
    REQUIRE(plus.diags.size() == 1);
    CHECK(plus.diags.list()[0].message.find("x = x + e") != std::string::npos);
  }

  TEST_CASE("invalid UTF-8 and stray characters") {
    Lexed bad("let \xFF x");
    REQUIRE(bad.diags.size() == 1);
    CHECK(bad.diags.list()[0].message.find("invalid UTF-8 byte 0xFF") != std::string::npos);
    Lexed accent("caf\xC3\xA9");
    REQUIRE(accent.diags.size() == 1);
    CHECK(accent.diags.list()[0].message.find("U+00E9") != std::string::npos);
    Lexed in_text("\"a\xC0z\"");
    REQUIRE(in_text.diags.size() == 1);
    Lexed in_comment("// \xFE\xFE\xFE\nx");
    CHECK(in_comment.diags.size() == 1);  // once per comment
  }

  TEST_CASE("a NUL inside the file is a character, not the end") {
    std::string s("a\0b", 3);
    Lexed l(s);
    CHECK(l.diags.size() == 1);
    CHECK(l.kind(1) == Tok::Ident);
    CHECK(l.sym(1) == "b");
  }

  TEST_CASE("a byte-order mark is skipped") {
    Lexed l("\xEF\xBB\xBFrecord");
    CHECK(l.kind(0) == Tok::KwRecord);
    CHECK(l.diags.empty());
  }

  TEST_CASE("names longer than the limit") {
    Lexed l(std::string(kMaxNameBytes, 'a') + " " + std::string(kMaxNameBytes + 1, 'b'));
    REQUIRE(l.diags.size() == 1);
    CHECK(l.diags.list()[0].pos.col == kMaxNameBytes + 2);
  }

  TEST_CASE("empty input is one end-of-file token") {
    Lexed l("");
    REQUIRE(l.out.tokens.size() == 1);
    CHECK(l.kind(0) == Tok::Eof);
  }
}

}  // namespace
}  // namespace aup

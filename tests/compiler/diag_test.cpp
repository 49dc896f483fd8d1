#include <doctest/doctest.h>

#include "compiler/diag.h"

namespace aup {
namespace {

TEST_SUITE("diag") {
  TEST_CASE("text: location, the line, a caret with tildes under the token") {
    SourceFile f("bank.aup", "let a = 1\n\tlet quantiy = 2\n");
    Diagnostic d{Pos{15, 2, 6}, 7, "no field `quantiy`"};
    CHECK(render_text(f, d, false) ==
          "bank.aup:2:6: error: no field `quantiy`\n\tlet quantiy = 2\n\t    ^~~~~~~\n");
  }

  TEST_CASE("text: carets count code points, not bytes") {
    SourceFile f("t.aup", "\"h\xC3\xA9llo\" x");
    Diagnostic d{Pos{9, 1, 9}, 1, "m"};
    CHECK(render_text(f, d, false) == "t.aup:1:9: error: m\n\"h\xC3\xA9llo\" x\n        ^\n");
  }

  TEST_CASE("text: a position at the end of a line") {
    SourceFile f("t.aup", "abc");
    Diagnostic d{Pos{3, 1, 4}, 5, "m"};
    CHECK(render_text(f, d, false) == "t.aup:1:4: error: m\nabc\n   ^\n");
  }

  TEST_CASE("json: one object with escaped strings") {
    SourceFile f("a\"b.aup", "x");
    Diagnostic d{Pos{0, 1, 1}, 1, "bad `x`\n\ttab \x01"};
    CHECK(render_json(f, d) ==
          R"({"file":"a\"b.aup","line":1,"col":1,"width":1,"severity":"error","message":"bad `x`\n\ttab \u0001"})");
  }

  TEST_CASE("finish sorts by position and drops exact repeats") {
    Diagnostics ds;
    ds.error(Pos{10, 2, 1}, "b");
    ds.error(Pos{0, 1, 1}, "a");
    ds.error(Pos{10, 2, 1}, "b");
    ds.error(Pos{10, 2, 1}, "c");
    ds.finish();
    REQUIRE(ds.size() == 3);
    CHECK(ds.list()[0].message == "a");
    CHECK(ds.list()[1].message == "b");
    CHECK(ds.list()[2].message == "c");
  }
}

}  // namespace
}  // namespace aup

// cli/pretty_json.cpp: answers laid out for a terminal, on one line when
// they fit, else one member or item a line.
#include <doctest/doctest.h>

#include <string>

#include "cli/pretty_json.h"

namespace aup::cli {
namespace {

TEST_SUITE("pretty_json") {
  TEST_CASE("what fits stays on one line, with spaces") {
    CHECK(pretty_json(R"({"balance":100})") == R"({"balance": 100})");
    CHECK(pretty_json(R"([1,"a",true,null,{},[]])") == R"([1, "a", true, null, {}, []])");
    CHECK(pretty_json("100") == "100");
    CHECK(pretty_json(R"("a\"b")") == R"("a\"b")");
  }

  TEST_CASE("what does not fit is broken, each part laid out in what is left") {
    CHECK(pretty_json(R"([{"id":1,"owner":"ann"},{"id":2,"owner":"bob"}])", 30) ==
          "[\n"
          "  {\"id\": 1, \"owner\": \"ann\"},\n"
          "  {\"id\": 2, \"owner\": \"bob\"}\n"
          "]");
    CHECK(pretty_json(R"({"a":{"b":[1,2,3],"c":"x"}})", 12) ==
          "{\n"
          "  \"a\": {\n"
          "    \"b\": [\n"
          "      1,\n"
          "      2,\n"
          "      3\n"
          "    ],\n"
          "    \"c\": \"x\"\n"
          "  }\n"
          "}");
  }

  TEST_CASE("text that is not JSON comes back as it was") { CHECK(pretty_json("{nope") == "{nope"); }
}

}  // namespace
}  // namespace aup::cli

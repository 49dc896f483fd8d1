// cli/table_format.cpp: rows as `aup shell` prints them on a terminal, as
// an aligned table, as field = value lines, or as JSON; anything that is
// not rows as JSON in every mode.
#include <doctest/doctest.h>

#include <string>

#include "cli/table_format.h"

namespace aup::cli {
namespace {

constexpr const char* kRows = R"([{"id":1,"owner":"ann","balance":100},{"id":22,"owner":"Zoë","balance":-5}])";

TEST_SUITE("table_format") {
  TEST_CASE("rows as a table: a header of the fields in their order, numbers to the right") {
    CHECK(format_result(kRows, RowsMode::Table) ==
          "+----+-------+---------+\n"
          "| id | owner | balance |\n"
          "+----+-------+---------+\n"
          "|  1 | ann   |     100 |\n"
          "| 22 | Zoë   |      -5 |\n"  // a code point a column, though ë is two bytes
          "+----+-------+---------+");
  }

  TEST_CASE("rows as lines, one field a line, a blank line between rows") {
    CHECK(format_result(kRows, RowsMode::Line) ==
          "     id = 1\n"
          "  owner = ann\n"
          "balance = 100\n"
          "\n"
          "     id = 22\n"
          "  owner = Zoë\n"
          "balance = -5");
  }

  TEST_CASE("json mode lays the result out as JSON") {
    CHECK(format_result(R"({"balance":100})", RowsMode::Json) == R"({"balance": 100})");
  }

  TEST_CASE("a row or record alone is a one-row table; structured fields one line of JSON") {
    CHECK(format_result(R"({"balance":100,"tags":["a","b"]})", RowsMode::Table) ==
          "+---------+------------+\n"
          "| balance | tags       |\n"
          "+---------+------------+\n"
          "|     100 | [\"a\", \"b\"] |\n"
          "+---------+------------+");
  }

  TEST_CASE("a read answer: its rows, and where the next read goes on from") {
    CHECK(format_result(R"({"rows":[{"id":3}],"next":[4]})", RowsMode::Table) ==
          "+----+\n"
          "| id |\n"
          "+----+\n"
          "|  3 |\n"
          "+----+\n"
          "next: [4]");
    CHECK(format_result(R"({"rows":[]})", RowsMode::Table) == "(no rows)");
    CHECK(format_result(R"({"rows":[]})", RowsMode::Line) == "(no rows)");
  }

  TEST_CASE("a text with a control character prints as its JSON string, so a row stays one line") {
    CHECK(format_result(R"([{"note":"a\nb"}])", RowsMode::Line) == R"(note = "a\nb")");
  }

  TEST_CASE("rows with different fields: every field a column, blank where a row has none") {
    CHECK(format_result(R"([{"a":1},{"b":true}])", RowsMode::Table) ==
          "+---+------+\n"
          "| a | b    |\n"
          "+---+------+\n"
          "| 1 |      |\n"
          "|   | true |\n"
          "+---+------+");
  }

  TEST_CASE("what is not rows prints as JSON in every mode") {
    for (RowsMode m : {RowsMode::Table, RowsMode::Line, RowsMode::Json}) {
      CHECK(format_result("100", m) == "100");
      CHECK(format_result("[1,2]", m) == "[1, 2]");
      CHECK(format_result("[]", m) == "[]");
      CHECK(format_result(R"([{"a":1},2])", m) == R"([{"a": 1}, 2])");
      CHECK(format_result("not json", m) == "not json");
    }
  }

  TEST_CASE("the modes by name") {
    RowsMode m = RowsMode::Json;
    CHECK(parse_rows_mode("line", m));
    CHECK(m == RowsMode::Line);
    CHECK(rows_mode_name(m) == "line");
    CHECK_FALSE(parse_rows_mode("wide", m));
    CHECK(m == RowsMode::Line);
  }
}

}  // namespace
}  // namespace aup::cli

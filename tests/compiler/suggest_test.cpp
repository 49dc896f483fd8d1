#include <doctest/doctest.h>

#include "compiler/suggest.h"

namespace aup {
namespace {

TEST_SUITE("suggest") {
  TEST_CASE("edit distance counts a transposition as one edit") {
    CHECK(edit_distance("", "") == 0);
    CHECK(edit_distance("abc", "abc") == 0);
    CHECK(edit_distance("quantiy", "quantity") == 1);
    CHECK(edit_distance("ab", "ba") == 1);
    CHECK(edit_distance("kitten", "sitting") == 3);
  }

  TEST_CASE("the closest name, when close enough") {
    std::vector<std::string_view> fields = {"id", "quantity", "ytd", "order_cnt"};
    CHECK(closest_name("quantiy", fields) == "quantity");
    CHECK(closest_name("Quantity", fields) == "quantity");
    CHECK(closest_name("ytd", fields).empty());        // itself is not a suggestion
    CHECK(closest_name("xyzzy", fields).empty());      // too far
    CHECK(closest_name("od", fields).empty());         // too short to tell a typo
    CHECK(closest_name("ID", fields) == "id");          // but case still counts
    CHECK(did_you_mean("ordr_cnt", fields) == "; did you mean `order_cnt`?");
    CHECK(did_you_mean("zzzzzz", fields).empty());
  }

  TEST_CASE("a close name is suggested; else every name is listed, or none said") {
    std::vector<std::string_view> tables = {"accounts", "lines"};
    CHECK(did_you_mean_or_list("acounts", tables, "tables") == "; did you mean `accounts`?");
    CHECK(did_you_mean_or_list("orders", tables, "tables") == "; tables: accounts, lines");
    CHECK(did_you_mean_or_list("orders", {}, "tables") == "; tables: none");
  }
}

}  // namespace
}  // namespace aup

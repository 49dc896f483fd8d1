// cli/short_form.cpp: requests typed as `name k=v ...` or `name v ...` become
// the protocol's JSON, checked against the module's schema first, with
// messages that say what is wrong and how the request is written.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli/short_form.h"
#include "runtime/schema.h"
#include "tests/runtime/harness.h"

namespace aup::cli {
namespace {

const char* kModule = R"(
record Account { id: num, owner: text, vip: bool, tags: num }
table accounts: Account key id
index by_tags on accounts (tags, owner)
unique index by_owner on accounts (owner)
event open { id: num, owner: text, vip: bool = false, tags: [text] = [] }
on open { accounts.add(Account { id: open.id, owner: open.owner, vip: open.vip, tags: open.tags.count }) }
query owner(id: num) { return accounts[id].owner }
query tags(id: num) { return accounts[id].tags }
)";

struct Fixture {
  testing::Running running{kModule};
  Schema schema;
  Fixture() {
    std::string error;
    REQUIRE_MESSAGE(parse_schema(runtime::schema_json(running.module()), schema, error), error);
  }
  std::string line(std::vector<std::string> words) {
    std::string out, error;
    REQUIRE_MESSAGE(build_request(schema, words, out, error), error);
    return out;
  }
  std::string error(std::vector<std::string> words) {
    std::string out, error;
    CHECK_FALSE(build_request(schema, words, out, error));
    return error;
  }
};

TEST_SUITE("short_form") {
  TEST_CASE("the schema says which names are events and which queries, and their arguments") {
    Fixture f;
    REQUIRE(f.schema.requests.size() == 3);
    CHECK(f.schema.find("open")->event);
    CHECK_FALSE(f.schema.find("owner")->event);
    CHECK(usage(*f.schema.find("open")) == "open id=num owner=text [vip=bool] [tags=[text]]");
    CHECK(f.schema.tables == std::vector<std::string>{"accounts"});
  }

  TEST_CASE("the schema gives each table's key and indexes, in declaration order") {
    Fixture f;
    REQUIRE(f.schema.table_specs.size() == 1);
    const TableSpec& t = f.schema.table_specs[0];
    CHECK(t.name == "accounts");
    CHECK(t.key == std::vector<std::string>{"id"});
    REQUIRE(t.indexes.size() == 2);
    CHECK(t.indexes[0].name == "by_tags");
    CHECK(t.indexes[0].fields == std::vector<std::string>{"tags", "owner"});
    CHECK_FALSE(t.indexes[0].unique);
    CHECK(t.indexes[1].name == "by_owner");
    CHECK(t.indexes[1].unique);
  }

  TEST_CASE("by name, in order, bare texts, quoted texts and JSON values") {
    Fixture f;
    CHECK(f.line({"open", "id=1", "owner=Ann"}) == R"({"event":"open","args":{"id":1,"owner":"Ann"}})");
    CHECK(f.line({"open", "2", "Bo Lee", "vip=true"}) ==
          R"({"event":"open","args":{"id":2,"owner":"Bo Lee","vip":true}})");
    CHECK(f.line({"open", "3", R"("x=\"y\"")", R"(tags=["a","b"])"}) ==
          R"({"event":"open","args":{"id":3,"owner":"x=\"y\"","tags":["a","b"]}})");
    CHECK(f.line({"owner", "1"}) == R"({"query":"owner","args":{"id":1}})");
    // What the lines do when sent: the server reads them as meant.
    CHECK(f.running.call(f.line({"open", "id=1", "owner=Ann"})) == R"({"ok":true})");
    CHECK(f.running.call(f.line({"open", "2", "a\"b\\c"})) == R"({"ok":true})");
    CHECK(f.running.call(f.line({"owner", "2"})) == R"({"ok":true,"result":"a\"b\\c"})");
  }

  TEST_CASE("each mistake is told with the request's usage") {
    Fixture f;
    const std::string usage = "; usage: open id=num owner=text [vip=bool] [tags=[text]]";
    CHECK(f.error({"open", "id=x", "owner=A"}) == "id: expected number, got `x`" + usage);
    CHECK(f.error({"open", "1", "A", "vip=yes"}) == "vip: expected bool, got `yes`" + usage);
    CHECK(f.error({"open", "1", "A", "tags=[1"}).starts_with("tags: `[1` is not JSON ("));
    CHECK(f.error({"open", "1", "owner=\"x"}).starts_with("owner: `\"x` is not JSON ("));
    CHECK(f.error({"open", "id=1", "id=2", "owner=A"}) == "field `id` appears twice" + usage);
    CHECK(f.error({"open", "owner=A"}) == "missing field `id`" + usage);
    CHECK(f.error({"open", "1", "A", "true", "[]", "5"}) == "open takes 4 arguments; `5` is one too many" + usage);
    CHECK(f.error({"open", "1", "ownr=A"}) == "unknown field `ownr`; did you mean `owner`?" + usage);
    CHECK(f.error({"opn", "1"}) == "no event or query `opn`; did you mean `open`?; events: open; queries: owner, tags");
    CHECK(f.error({}) == "no request: events: open; queries: owner, tags");
  }

  TEST_CASE("a line splits at spaces outside quotes and brackets, which stay in the word") {
    std::vector<std::string> w;
    std::string error;
    REQUIRE(split_words("  open 2  \"Bo \\\" Lee\"\ttags=[\"a b\", {\"c\": [1, 2]}] ", w, error));
    CHECK(w == std::vector<std::string>{"open", "2", "\"Bo \\\" Lee\"", "tags=[\"a b\", {\"c\": [1, 2]}]"});
    REQUIRE(split_words("", w, error));
    CHECK(w.empty());
    CHECK_FALSE(split_words("open 1 \"Bo", w, error));
    CHECK(error == "a quote is not closed");
    CHECK_FALSE(split_words("open 1 tags=[1, 2", w, error));
    CHECK(error == "a bracket is not closed");
  }

  TEST_CASE("a schema that is not one is refused") {
    Schema s;
    std::string error;
    CHECK_FALSE(parse_schema("[]", s, error));
    CHECK_FALSE(parse_schema(R"({"events":[{"name":"x"}],"queries":[]})", s, error));
    CHECK(error.starts_with("the server's schema answer is not one aup understands"));
  }
}

}  // namespace
}  // namespace aup::cli

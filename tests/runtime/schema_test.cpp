// runtime/schema.cpp: a module describes itself to clients, every kind of
// type spelt as the language writes it.
#include <doctest/doctest.h>

#include <string>

#include "runtime/schema.h"
#include "tests/runtime/harness.h"

namespace aup::runtime {
namespace {

const char* kSchemaModule = R"(
record Item { id: num, name: text, done: bool = false }
record Summary { count: num, names: [text] }
table items: Item key id
index by_name on items (name)
record Tag { item: num, tag: text }
table tags: Tag key (item, tag)
unique index by_tag on tags (tag, item)
event add { id: num, name: text, tags: [text], note: text = "" }
on add { items.add(Item { id: add.id, name: add.name }) }
event clear { }
on clear { return 0 }
query item(id: num) { return items[id] }
query all() { return items[0 .. 100] }
query pair(a: num) { return {x: a, names: ["n"]} }
query summary() {
  let s = Summary { count: items.count, names: ["n"] }
  return s
}
)";

TEST_SUITE("schema") {
  // A query's result is described as what its answer holds: a row as its
  // record, a view as the array of its rows (docs/protocol.md, Responses).
  TEST_CASE("events, queries, tables with their keys and indexes, and records, with every kind of type spelt out") {
    testing::Running r(kSchemaModule);
    CHECK(schema_json(r.module()) ==
          R"({"events":[)"
          R"({"name":"add","args":[{"name":"id","type":"num"},{"name":"name","type":"text"},)"
          R"({"name":"tags","type":"[text]"},{"name":"note","type":"text","default":""}]},)"
          R"({"name":"clear","args":[],"result":"num"}],)"
          R"("queries":[{"name":"item","args":[{"name":"id","type":"num"}],"result":"Item"},)"
          R"({"name":"all","args":[],"result":"[Item]"},)"
          R"({"name":"pair","args":[{"name":"a","type":"num"}],"result":"{x: num, names: [text]}"},)"
          R"({"name":"summary","args":[],"result":"Summary"}],)"
          R"("tables":[{"name":"items","record":"Item","key":["id"],)"
          R"("indexes":[{"name":"by_name","fields":["name"],"unique":false}]},)"
          R"({"name":"tags","record":"Tag","key":["item","tag"],)"
          R"("indexes":[{"name":"by_tag","fields":["tag","item"],"unique":true}]}],)"
          R"("records":[{"name":"Item","fields":[{"name":"id","type":"num"},{"name":"name","type":"text"},)"
          R"({"name":"done","type":"bool","default":false}]},)"
          R"({"name":"Summary","fields":[{"name":"count","type":"num"},{"name":"names","type":"[text]"}]},)"
          R"({"name":"Tag","fields":[{"name":"item","type":"num"},{"name":"tag","type":"text"}]}]})");
  }

  TEST_CASE("a schema request answers it; anything beside it is refused") {
    testing::Running r(kSchemaModule);
    CHECK(r.call(R"({"schema":{},"id":7})") == R"({"id":7,"ok":true,"result":)" + schema_json(r.module()) + "}");
    CHECK(r.reply(R"({"schema":{"tables":true}})").code() == "bad_request");
    CHECK(r.reply(R"({"schema":[]})").code() == "bad_request");
    CHECK(r.reply(R"({"schema":{},"query":"all"})").code() == "bad_request");
    CHECK(r.reply(R"({"schema":{},"args":{}})").code() == "bad_request");
  }
}

}  // namespace
}  // namespace aup::runtime

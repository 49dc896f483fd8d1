// The undo journal: each kind of change rolls back exactly, nested marks
// roll back only what came after them, and commit releases what the
// journal held (ASan/LSan runs of this suite catch leaked or doubly
// released texts).
#include <doctest/doctest.h>

#include "tests/runtime/harness.h"

namespace aup::vm {
namespace {

const char* kModule = R"(
record R { id: num, name: text, n: num }
record T { k: text, v: num }
table rs: R key id
table ts: T key k
var label: text = "start"
var count: num = 0
event add { id: num, name: text }
on add { rs.add(R { id: add.id, name: add.name, n: 0 }) }
event tadd { k: text }
on tadd { ts.add(T { k: tadd.k, v: 1 }) }
event tbump { k: text }
on tbump { ts[tbump.k].v = ts[tbump.k].v + 1 }
event churn { id: num, fail_it: bool }
on churn {
  let r = rs[churn.id]
  r.name = r.name + "+"
  r.name = r.name + "+"
  r.n = r.n + 1
  label = label + "!"
  count = count + 1
  rs.put(R { id: churn.id, name: "put", n: 50 })
  rs.remove(churn.id)
  rs.add(R { id: churn.id, name: "again", n: 7 })
  ts.put(T { k: "k" + r.name, v: 2 })  // r: the row with key 1, now "again"
  ts.remove("a")
  ts.add(T { k: "a", v: 3 })
  if churn.fail_it { fail "undo" }
}
query dump() {
  let out: [text] = []
  for r in rs { out.push(text(r.id) + ":" + r.name + ":" + text(r.n)) }
  for t in ts { out.push(t.k + "=" + text(t.v)) }
  out.push(label)
  out.push(text(count))
  return out
}
)";

TEST_SUITE("state") {
  TEST_CASE("a failed event restores every row, text and var exactly") {
    testing::Running run(kModule);
    CHECK(run.call(R"({"event":"add","args":{"id":1,"name":"one"}})") == R"({"ok":true})");
    CHECK(run.call(R"({"event":"add","args":{"id":2,"name":"two"}})") == R"({"ok":true})");
    CHECK(run.call(R"({"event":"tadd","args":{"k":"a"}})") == R"({"ok":true})");
    std::string before = run.call(R"({"query":"dump"})");
    for (int i = 0; i < 50; ++i) {
      CHECK(run.reply(R"({"event":"churn","args":{"id":1,"fail_it":true}})").code() == "failed");
      REQUIRE(run.call(R"({"query":"dump"})") == before);
    }
    CHECK(run.call(R"({"event":"churn","args":{"id":1,"fail_it":false}})") == R"({"ok":true})");
    CHECK(run.call(R"({"query":"dump"})") ==
          R"({"ok":true,"result":["1:again:7","2:two:0","a=3","kagain=2","start!","1"]})");
  }

  TEST_CASE("marks nest: rolling back to a mark keeps what came before it") {
    testing::Running run(kModule);
    State& s = run.state();
    run.call(R"({"event":"add","args":{"id":1,"name":"one"}})");
    // Apply two events without committing, as a batch would.
    size_t m0 = s.mark();
    CHECK(m0 == 0);
    std::string out;
    runtime::Service service(run.module(), s, runtime::ServiceOptions{});
    service.handle(R"({"event":"add","args":{"id":5,"name":"five"}})", 0, out);
    size_t m1 = s.mark();
    CHECK(m1 > m0);
    service.handle(R"({"event":"add","args":{"id":6,"name":"six"}})", 0, out);
    CHECK(s.table(0).size() == 3);
    s.rollback(m1);
    CHECK(s.table(0).size() == 2);
    CHECK(s.table(0).find(num_key(5)) != nullptr);
    CHECK(s.table(0).find(num_key(6)) == nullptr);
    s.rollback(m0);
    CHECK(s.table(0).size() == 1);
    s.commit();
    CHECK(s.changes().empty());
  }

  TEST_CASE("a batch's journal keeps text keys from events' arenas after the arenas are gone") {
    // The keys of `ts` come straight from event arguments, which live in an
    // event's arena; the journal must hold its own copies, since a batch
    // commits or rolls back after its events have finished.
    testing::Running run(kModule);
    State& s = run.state();
    std::string out;
    runtime::Service service(run.module(), s, runtime::ServiceOptions{});
    for (int i = 0; i < 40; ++i) {
      service.handle(R"({"event":"tadd","args":{"k":"key-)" + std::to_string(i) + R"("}})", 0, out);
    }
    for (int i = 0; i < 40; ++i) {
      service.handle(R"({"event":"tbump","args":{"k":"key-)" + std::to_string(i) + R"("}})", 0, out);
    }
    CHECK(s.table(1).size() == 40);
    size_t with_text_keys = 0;
    for (const Change& c : s.changes()) {
      if (c.key.text) {
        ++with_text_keys;
        CHECK_FALSE(c.key.text->in_arena);
        CHECK(c.key.text->view().substr(0, 4) == "key-");
      }
    }
    CHECK(with_text_keys == 80);
    s.rollback(0);
    CHECK(s.table(1).size() == 0);
  }
}

}  // namespace
}  // namespace aup::vm

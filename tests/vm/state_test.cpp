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

// Puts `from`'s rows of table 0 straight into `to`'s table (as recovery
// does), its indexes left empty.
void copy_rows(const State& from, State& to) {
  const BTree& rows = from.table(0);
  rows.for_each(rows.root(), [&](const Key& k, const uint64_t* row) {
    std::vector<uint64_t> copy(row, row + rows.layout().slots);
    for (uint32_t t : rows.layout().text_slots) copy[t] = ptr_value(to_heap(as_ptr<TextObj>(copy[t])));
    REQUIRE(to.table(0).insert(k, copy.data()));
  });
}

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
    runtime::Service service(run.module(), s, runtime::ServiceOptions{});
    testing::apply_line(service, R"({"event":"add","args":{"id":5,"name":"five"}})");
    size_t m1 = s.mark();
    CHECK(m1 > m0);
    testing::apply_line(service, R"({"event":"add","args":{"id":6,"name":"six"}})");
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
    runtime::Service service(run.module(), s, runtime::ServiceOptions{});
    for (int i = 0; i < 40; ++i) {
      testing::apply_line(service, R"({"event":"tadd","args":{"k":"key-)" + std::to_string(i) + R"("}})");
    }
    for (int i = 0; i < 40; ++i) {
      testing::apply_line(service, R"({"event":"tbump","args":{"k":"key-)" + std::to_string(i) + R"("}})");
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

const char* kIndexed = R"(
record P { w: num, id: num, name: text, email: text, n: num }
table ps: P key (w, id)
index by_name on ps (name)
unique index by_email on ps (email)
index by_n on ps (n, name)
event add { w: num, id: num, name: text, email: text }
on add { ps.add(P { w: add.w, id: add.id, name: add.name, email: add.email, n: 0 }) }
event churn { w: num, id: num, fail_it: bool }
on churn {
  let p = ps[churn.w, churn.id]
  p.name = p.name + "+"
  p.n = p.n + 1
  p.email = "moved@" + text(churn.id)
  ps.put(P { w: churn.w, id: churn.id, name: "put", email: "put@" + text(churn.id), n: 50 })
  ps.remove(churn.w, churn.id)
  ps.add(P { w: churn.w, id: churn.id, name: "again", email: "again@" + text(churn.id), n: 7 })
  if churn.fail_it { fail "undo" }
}
event take_email { w: num, id: num, email: text }
on take_email { ps[take_email.w, take_email.id].email = take_email.email }
query dump() {
  let out: [text] = []
  for p in ps.by_name { out.push(p.name + ":" + text(p.id)) }
  for p in ps.by_email { out.push(p.email) }
  for p in ps.by_n desc { out.push(text(p.n) + p.name) }
  return out
}
)";

// Every index holds exactly one entry per row, whose key is the row's
// values and whose slot finds the row: what the engines rely on.
void check_indexes(const State& s) {
  for (uint32_t i = 0; i < s.module().indexes.size(); ++i) {
    const BTree& tree = s.index(i);
    const BTree& table = s.table(s.module().indexes[i].table);
    REQUIRE(tree.size() == table.size());
    tree.for_each(tree.root(), [&](const Key& k, const uint64_t* entry) {
      const uint64_t* row = table.find(s.entry_row_key(i, entry));
      REQUIRE(row);
      Key want = s.entry_key(i, row);
      CHECK(key_cmp(want, k) == 0);
      release(want.text);
    });
  }
}

TEST_SUITE("state") {
  TEST_CASE("indexes follow every change, and a failed event leaves them exactly as before") {
    testing::Running run(kIndexed);
    for (int i = 0; i < 40; ++i) {
      std::string id = std::to_string(i);
      REQUIRE(run.call(R"({"event":"add","args":{"w":)" + std::to_string(i % 3) + R"(,"id":)" + id +
                       R"(,"name":"n)" + std::to_string(i % 5) + R"(","email":"e)" + id + R"("}})") ==
              R"({"ok":true})");
    }
    check_indexes(run.state());
    std::string before = run.call(R"({"query":"dump"})");
    for (int i = 0; i < 40; i += 3) {
      std::string args = R"({"w":)" + std::to_string(i % 3) + R"(,"id":)" + std::to_string(i);
      CHECK(run.reply(R"({"event":"churn","args":)" + args + R"(,"fail_it":true}})").code() == "failed");
      check_indexes(run.state());
      REQUIRE(run.call(R"({"query":"dump"})") == before);
    }
    // A unique index refuses a second row with one email, changing nothing.
    auto taken = run.reply(R"({"event":"take_email","args":{"w":1,"id":1,"email":"e2"}})");
    CHECK(taken.code() == "duplicate");
    CHECK(taken.text.find(R"(unique index `by_email` of `ps` already has (\"e2\") (the row with key (2, 2)))") !=
          std::string::npos);
    CHECK(run.call(R"({"query":"dump"})") == before);
    CHECK(run.call(R"({"event":"churn","args":{"w":1,"id":1,"fail_it":false}})") == R"({"ok":true})");
    check_indexes(run.state());
    CHECK(run.call(R"({"query":"dump"})") != before);
  }

  TEST_CASE("rebuilding the indexes from the tables gives the entries the changes made; a unique clash is named") {
    testing::Running run(kIndexed);
    for (int i = 0; i < 30; ++i) {
      std::string id = std::to_string(i);
      run.call(R"({"event":"add","args":{"w":0,"id":)" + id + R"(,"name":"x","email":"e)" + id + R"("}})");
    }
    run.call(R"({"event":"churn","args":{"w":0,"id":4,"fail_it":false}})");
    std::string before = run.call(R"({"query":"dump"})");
    // A second state with the same rows put straight into its tables (as
    // recovery does), then rebuilt.
    State fresh(run.module());
    copy_rows(run.state(), fresh);
    std::string error;
    REQUIRE_MESSAGE(fresh.rebuild_indexes(error), error);
    check_indexes(fresh);
    for (uint32_t i = 0; i < 3; ++i) CHECK(fresh.index(i).size() == run.state().index(i).size());
    // Two rows with one email: the open is refused, naming both.
    State clash(run.module());
    auto add = [&](double id, const char* email) {
      TextObj* name = heap_text("x");
      TextObj* mail = heap_text(email);
      uint64_t row[5] = {num_value(0), num_value(id), ptr_value(name), ptr_value(mail), num_value(0)};
      HeldKey key(clash.table(0).layout().key, row);
      REQUIRE(clash.table(0).insert(key.key(), row));
    };
    add(1, "same");
    add(2, "other");
    add(3, "same");
    CHECK_FALSE(clash.rebuild_indexes(error));
    CHECK(error == "unique index `by_email` of `ps`: the rows with keys (0, 1) and (0, 3) both have (\"same\")");
  }

  // The rebuild sorts on an entry's first 16 bytes and compares texts only
  // where those tie: names and emails here share 20-byte prefixes, in
  // rows added out of their order, and the unique clash sits between two
  // entries that tie on the prefix (the clash check reads the entry before).
  TEST_CASE("a rebuild orders entries whose first 16 bytes tie as inserts did, and finds a clash among them") {
    testing::Running run(kIndexed);
    const std::string shared = "a-prefix-of-twenty-b";
    const char* tails[] = {"q", "b", "", "zz", "b\u0000", "a", "m", "b-", "\u0000", "c"};
    for (int i = 0; i < 10; ++i) {
      std::string id = std::to_string(i);
      REQUIRE(run.call(R"({"event":"add","args":{"w":0,"id":)" + id + R"(,"name":")" + shared + tails[i] +
                       R"(","email":")" + shared + tails[9 - i] + id + R"("}})") == R"({"ok":true})");
    }
    State fresh(run.module());
    copy_rows(run.state(), fresh);
    std::string error;
    REQUIRE_MESSAGE(fresh.rebuild_indexes(error), error);
    for (uint32_t i = 0; i < 3; ++i) {
      std::vector<std::string> built, inserted;
      auto keys = [](const BTree& t, std::vector<std::string>& out) {
        t.for_each(t.root(), [&](const Key& k, const uint64_t*) { out.emplace_back(k.text->view()); });
      };
      keys(fresh.index(i), built);
      keys(run.state().index(i), inserted);
      CHECK(built == inserted);
    }
    State clash(run.module());
    auto add = [&](double id, const std::string& email) {
      uint64_t row[5] = {num_value(0), num_value(id), ptr_value(heap_text("x")), ptr_value(heap_text(email)),
                         num_value(0)};
      HeldKey key(clash.table(0).layout().key, row);
      REQUIRE(clash.table(0).insert(key.key(), row));
    };
    add(1, shared + "-same");
    add(2, shared + "-samf");
    add(3, shared + "-same");
    add(4, shared + "-sam");
    CHECK_FALSE(clash.rebuild_indexes(error));
    CHECK(error == "unique index `by_email` of `ps`: the rows with keys (0, 1) and (0, 3) both have (\"" + shared +
                       "-same\")");
  }
}

}  // namespace
}  // namespace aup::vm

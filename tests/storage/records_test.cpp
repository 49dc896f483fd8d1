// Change records (storage/records.cpp): the bytes a batch's puts, sets and
// removes are written as, and the same records applied back, for keys of
// one field (the bytes they always were) and composite keys (each row's
// key fields' values in key order: numbers, texts, both, a text holding a
// 0x00 byte); records refused, and a migration's layout.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <bit>
#include <string>
#include <vector>

#include "storage/codec.h"
#include "storage/memory_tables.h"
#include "storage/records.h"
#include "tests/storage/rows.h"

namespace aup::storage {
namespace {

using rows::Row;
using Op = BatchEncoder::Op;

// A batch made against tables: each change done to the trees, as the
// owner does it, and noted with the tree's key and where it left the row,
// as the journal notes it. Noted twice: once with the row's place (read
// there at encode time) and once without (every row found again, as
// before rows were read in place); payload() checks the two encode to the
// same bytes.
class Batch {
 public:
  Batch(const Schema& s, MemoryTables& tables) : schema_(s), tables_(tables), encoder_(s), by_find_(s) {}

  // A row there before the batch (not noted).
  void had(uint32_t t, const Row& r) { REQUIRE(rows::insert(tables_.table(t), schema_.tables[t], r)); }
  void add(uint32_t t, const Row& r) {
    vm::BTree& tree = tables_.table(t);
    std::vector<uint64_t> s = rows::slots(schema_.tables[t], r);
    vm::HeldKey key(tree.layout().key, s.data());
    vm::BTree::Pos at;
    REQUIRE(tree.insert(key.key(), s.data(), &at));  // the tree takes the texts
    encoder_.note(Op::Insert, t, key.key(), 0, {at, tree.node_epoch()});
    by_find_.note(Op::Insert, t, key.key());
  }
  // Field f of the row with `key_row`'s key set to `value`.
  void set(uint32_t t, const Row& key_row, uint32_t f, const std::string& value) {
    const TableSchema& ts = schema_.tables[t];
    vm::BTree& tree = tables_.table(t);
    std::vector<uint64_t> s = rows::slots(ts, key_row);
    {
      vm::HeldKey key(tree.layout().key, s.data());
      vm::BTree::Pos at;
      uint64_t* row = tree.find_mut(key.key(), &at);
      REQUIRE(row);
      Row changed = rows::strings(ts, row);
      changed[f] = value;
      std::vector<uint64_t> now = rows::slots(ts, changed);
      if (ts.fields[f].type == FieldType::Text) vm::release(reinterpret_cast<vm::TextObj*>(row[f]));
      row[f] = now[f];
      now[f] = 0;
      rows::release(ts, now.data());
      encoder_.note(Op::Set, t, key.key(), f, {at, tree.node_epoch()});
      by_find_.note(Op::Set, t, key.key(), f);
    }
    rows::release(ts, s.data());
  }
  void remove(uint32_t t, const Row& key_row) {
    const TableSchema& ts = schema_.tables[t];
    vm::BTree& tree = tables_.table(t);
    std::vector<uint64_t> s = rows::slots(ts, key_row);
    {
      vm::HeldKey key(tree.layout().key, s.data());
      std::vector<uint64_t> gone(ts.fields.size());
      REQUIRE(tree.erase(key.key(), gone.data()));
      rows::release(ts, gone.data());
      encoder_.note(Op::Remove, t, key.key());
      by_find_.note(Op::Remove, t, key.key());
    }
    rows::release(ts, s.data());
  }
  // The payload of the changes noted since the last one, the same bytes
  // whether rows were read where their changes left them or found again,
  // and the same when encoded after bytes already in the buffer (the
  // log's entry header).
  std::vector<uint8_t> payload() {
    std::vector<uint8_t> out, again = {9, 9, 9};
    std::vector<uint64_t> bytes(schema_.tables.size() + 1, 0), bytes_again = bytes;
    encoder_.encode(tables_, out, bytes);
    by_find_.encode(tables_, again, bytes_again);
    CHECK(encoder_.encoded());
    encoder_.clear();
    by_find_.clear();
    CHECK(std::vector<uint8_t>(again.begin() + 3, again.end()) == out);
    CHECK(bytes_again == bytes);
    CHECK(by_find_.rows_read_in_place() == 0);
    return out;
  }
  // Rows the last payloads read in place, and found again.
  uint64_t in_place() const { return encoder_.rows_read_in_place(); }
  uint64_t found_again() const { return encoder_.rows_found_again(); }

 private:
  const Schema& schema_;
  MemoryTables& tables_;
  BatchEncoder encoder_;
  BatchEncoder by_find_;
};

Status apply(const std::vector<uint8_t>& payload, const Schema& stored, const Schema& target, Tables& tables,
             uint64_t seq = 1) {
  std::vector<uint64_t> covered(target.tables.size() + 1, 0);
  return apply_payload(payload, stored, map_schema(stored, target), seq, covered, tables);
}

Schema one_table(const TableSchema& t) {
  Schema s;
  s.tables.push_back(t);
  return s;
}

std::vector<uint8_t> operator+(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST_SUITE("records") {
  TEST_CASE("one-field keys: a put, a set and a remove are the bytes they were before composite keys") {
    Schema s;
    s.tables.push_back(TableSchema{"items", "Item", {rows::num("id"), rows::num("qty"), rows::text("tag")}, {0}});
    s.tables.push_back(TableSchema{"words", "Word", {rows::num("n"), rows::text("w")}, {1}});
    MemoryTables tables(s);
    Batch b(s, tables);
    b.had(0, {"2", "1", "x"});
    b.had(0, {"3", "1", "y"});
    b.had(1, {"1", "w"});
    b.add(0, {"1", "5", "a"});
    b.set(0, {"2", "0", ""}, 1, "9");
    b.remove(0, {"3", "0", ""});
    b.remove(1, {"0", "w"});
    // items (target 1): put 1: key 1, qty 5, tag "a"; set 2: key 2, one
    // field, qty 9; remove 3: key 3. words (target 2): remove "w".
    CHECK(b.payload() == std::vector<uint8_t>{1, 3, 1, 4, 20, 1, 'a', 2, 8, 1, 1, 36, 3, 12, 2, 1, 3, 1, 'w'});
  }

  TEST_CASE("composite keys: each record's key is its key fields' values in key order") {
    using namespace std::string_literals;
    // events (qty, name, at, note) keyed (name, at).
    Schema s = one_table(rows::mixed_table());
    MemoryTables tables(s);
    Batch b(s, tables);
    b.had(0, {"2", "open", "5", "b"});
    b.had(0, {"3", "close", "5", "c"});
    b.had(0, {"4", "open\0"s, "1", "d"});
    b.add(0, {"1", "shut", "-5", "a"});
    b.set(0, {"0", "open", "5", ""}, 0, "9");
    b.remove(0, {"0", "close", "5", ""});
    b.remove(0, {"0", "open\0"s, "1", ""});
    std::vector<uint8_t> put = {1, 4, 's', 'h', 'u', 't', 18, 4, 1, 'a'};  // name, at -5, then qty 1, note "a"
    std::vector<uint8_t> set = {2, 4, 'o', 'p', 'e', 'n', 20, 1, 0, 36};  // name, at 5; qty (field 0) 9
    std::vector<uint8_t> close = {3, 5, 'c', 'l', 'o', 's', 'e', 20};
    // The removed row's key read back from the tree's encoding: its 0x00
    // written as it is, not as the key's escape.
    std::vector<uint8_t> open0 = {3, 5, 'o', 'p', 'e', 'n', 0, 4};
    CHECK(b.payload() == std::vector<uint8_t>{1, 4} + put + set + close + open0);
  }

  TEST_CASE("composite keys: batches of puts, sets and removes replay to the same rows (num, text, mixed keys)") {
    using namespace std::string_literals;
    struct Kind {
      TableSchema table;
      std::vector<Row> rows;
      uint32_t field;  // a field not in the key, set by the second batch
    };
    for (const Kind& k : {Kind{rows::nums_table(), rows::nums_rows(), 3}, Kind{rows::texts_table(), rows::texts_rows(), 2},
                          Kind{rows::mixed_table(), rows::mixed_rows(), 3}}) {
      CAPTURE(k.table.name);
      Schema s = one_table(k.table);
      MemoryTables source(s), replayed(s);
      Batch b(s, source);
      for (const Row& r : k.rows) b.add(0, r);
      std::vector<uint8_t> first = b.payload();
      // Second batch: remove every other row, set a field of the rest,
      // add back the first removed row with another value (a put), and
      // add and remove a new one (which writes nothing).
      for (size_t i = 0; i < k.rows.size(); ++i) {
        if (i % 2 == 0) {
          b.remove(0, k.rows[i]);
        } else {
          b.set(0, k.rows[i], k.field, k.table.fields[k.field].type == FieldType::Text ? "set\0"s : "-7.25");
        }
      }
      Row back = k.rows[0];
      back[k.field] = k.table.fields[k.field].type == FieldType::Text ? "again" : "8";
      b.add(0, back);
      Row fresh = k.rows[1];
      fresh[k.table.key_fields[0]] = k.table.fields[k.table.key_fields[0]].type == FieldType::Text ? "fresh" : "12345";
      b.add(0, fresh);
      b.remove(0, fresh);
      std::vector<uint8_t> second = b.payload();
      REQUIRE_MESSAGE(apply(first, s, s, replayed).ok(), "the first batch");
      CHECK(rows::all(k.table, replayed.table(0)) == rows::in_key_order(k.table, k.rows));
      Status st = apply(second, s, s, replayed, 2);
      REQUIRE_MESSAGE(st.ok(), st.message);
      CHECK(rows::all(k.table, replayed.table(0)) == rows::all(k.table, source.table(0)));
      CHECK(replayed.table(0).size() == k.rows.size() / 2 + 1);
      PayloadSummary summary;
      REQUIRE(summarize_payload(second, s, summary).ok());
      REQUIRE(summary.groups.size() == 1);
      CHECK(summary.groups[0].puts == 1);
      CHECK(summary.groups[0].sets == k.rows.size() / 2);
      CHECK(summary.groups[0].removes == (k.rows.size() + 1) / 2 - 1);
      CHECK(summary.groups[0].bytes == second.size());
    }
  }

  // Rows read where their changes left them are the rows a find gives,
  // however the tree moved them within the batch: leaves split by many
  // inserts (rows moved to new right siblings), leaves emptied and freed
  // by removes, nodes copied after a share() taken mid-batch (as a
  // checkpoint takes one), a row removed and added again. Batch::payload
  // compares the bytes with rows found again; replaying checks the rows.
  TEST_CASE("rows read in place encode the bytes of rows found again, through splits, frees and copies") {
    Schema s;
    s.tables.push_back(TableSchema{"items", "Item", {rows::num("id"), rows::num("qty"), rows::text("tag")}, {0}});
    MemoryTables source(s), replayed(s);
    Batch b(s, source);
    vm::BTree& tree = source.table(0);
    auto item = [](int id, int qty) { return Row{std::to_string(id), std::to_string(qty), fmt::format("t{}", id)}; };
    // One batch: 2000 inserts in a scattered order (splits everywhere),
    // each followed by sets of rows added earlier.
    const int n = 2000;
    for (int i = 0; i < n; ++i) {
      int id = (i * 7919) % n;
      b.add(0, item(id, i));
      if (i >= 3) b.set(0, item((i - 3) * 7919 % n, 0), 1, std::to_string(i));
    }
    std::vector<uint8_t> first = b.payload();
    CHECK(b.in_place() > 0);
    CHECK(b.found_again() > 0);  // rows moved to a split's new leaf
    // The next: a snapshot shared mid-batch, then sets and inserts (every
    // node on their paths copied), removes of a run of rows (their leaves
    // emptied and freed), a row removed and added again.
    for (int id = 0; id < 100; ++id) b.set(0, item(id, 0), 2, "before");
    uint64_t in_place = b.in_place(), found = b.found_again();
    vm::Node* snapshot = tree.share();
    for (int id = 100; id < 200; ++id) b.set(0, item(id, 0), 1, "-1");
    for (int id = n; id < n + 300; ++id) b.add(0, item(id, id));
    for (int id = 500; id < 1500; ++id) b.remove(0, item(id, 0));
    b.remove(0, item(1600, 0));
    b.add(0, item(1600, 7));
    for (int id = 1700; id < 1800; ++id) b.set(0, item(id, 0), 2, "after");
    std::vector<uint8_t> second = b.payload();
    CHECK(b.in_place() > in_place);      // the changes after the last copy and free
    CHECK(b.found_again() > found);      // the ones before
    tree.drop_root(snapshot);
    REQUIRE(apply(first, s, s, replayed).ok());
    Status st = apply(second, s, s, replayed, 2);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CHECK(rows::all(s.tables[0], replayed.table(0)) == rows::all(s.tables[0], tree));
    CHECK(tree.size() == static_cast<size_t>(n + 300 - 1000));
  }

  TEST_CASE("the encoder is cleared after each batch and encodes a batch once") {
    Schema s;
    s.tables.push_back(TableSchema{"items", "Item", {rows::num("id"), rows::num("qty"), rows::text("tag")}, {0}});
    MemoryTables tables(s);
    Batch b(s, tables);
    b.add(0, {"1", "2", "a"});
    CHECK_FALSE(b.payload().empty());
    CHECK(b.payload().empty());  // cleared: nothing noted since
    b.set(0, {"1", "0", ""}, 1, "3");
    CHECK(b.payload() == std::vector<uint8_t>{1, 1, 2, 4, 1, 1, 12});  // items: set 1: qty 3
  }

  TEST_CASE("composite keys: a set of a key field is refused, naming the component") {
    Schema s = one_table(rows::mixed_table());
    MemoryTables source(s), tables(s);
    Batch b(s, source);
    b.add(0, {"1", "open", "5", "a"});
    REQUIRE(apply(b.payload(), s, s, tables).ok());
    std::vector<uint8_t> set_at;
    Encoder e(set_at);  // events: set ("open", 5)'s field 2 (at, component 2 of the key) to 6
    e.varint(1);
    e.varint(1);
    e.u8(2);
    e.text("open");
    e.num(5);
    e.varint(1);
    e.varint(2);
    e.num(6);
    Status st = apply(set_at, s, s, tables, 2);
    REQUIRE_FALSE(st.ok());
    CHECK(st.message == fmt::format("a log entry does not decode: set of the key field `at`, component 2 of the key "
                                    "`(name, at)` at payload byte {}",
                                    set_at.size() - 1));
    CHECK(rows::find(tables.table(0), s.tables[0], {"0", "open", "5", ""}) == Row{"1", "open", "5", "a"});
  }

  TEST_CASE("composite keys: records cut short inside their key are refused, and nothing is applied") {
    Schema s = one_table(rows::mixed_table());
    MemoryTables tables(s);
    Batch b(s, tables);
    b.had(0, {"1", "open", "5", "a"});
    b.set(0, {"0", "open", "5", ""}, 3, "b");
    std::vector<uint8_t> set = b.payload();
    b.remove(0, {"0", "open", "5", ""});
    std::vector<uint8_t> remove = b.payload();
    MemoryTables other(s);
    Batch c(s, other);
    c.add(0, {"1", "open", "5", "a"});
    std::vector<uint8_t> put = c.payload();
    struct Cut {
      const std::vector<uint8_t>* payload;
      const char* why;
    };
    for (const Cut& cut : {Cut{&put, "truncated put"}, Cut{&set, "truncated set"}, Cut{&remove, "truncated remove"}}) {
      CAPTURE(cut.why);
      // Group header (2 bytes), the op, then the key: "open" (5 bytes), 5 (1).
      for (size_t n = 3; n < 9; ++n) {
        CAPTURE(n);
        MemoryTables into(s);
        std::vector<uint8_t> p(cut.payload->begin(), cut.payload->begin() + static_cast<long>(n));
        Status st = apply(p, s, s, into);
        REQUIRE_FALSE(st.ok());
        CHECK(st.message.find(cut.why) != std::string::npos);
        CHECK(into.table(0).size() == 0);
      }
    }
  }

  TEST_CASE("composite keys: a remove or set of a row that is not there is refused") {
    using namespace std::string_literals;
    Schema s = one_table(rows::texts_table());
    MemoryTables tables(s), empty(s);
    Batch b(s, tables);
    b.had(0, {"x\0"s, "a", "1"});
    b.had(0, {"y", "a", "2"});
    b.set(0, {"x\0"s, "a", "0"}, 2, "3");
    std::vector<uint8_t> set = b.payload();
    b.remove(0, {"y", "a", "0"});
    std::vector<uint8_t> remove = b.payload();
    CHECK(apply(set, s, s, empty).message.find("set of a row that does not exist") != std::string::npos);
    CHECK(apply(remove, s, s, empty).message.find("remove of a row that does not exist") != std::string::npos);
  }

  TEST_CASE("composite keys: records land in a migrated layout, its key fields moved, under the same keys") {
    const TableSchema stored = rows::mixed_table();  // (qty, name, at, note) keyed (name, at)
    FieldSchema tag = rows::text("tag");
    tag.has_default = true;
    tag.default_value = Scalar{FieldType::Text, 0, false, "new"};
    TableSchema moved{"events", "Event", {rows::num("at"), rows::text("note"), tag, rows::text("name"), rows::num("qty")},
                      {3, 0}};
    Schema from = one_table(stored), to = one_table(moved);
    MemoryTables source(from), target(to);
    Batch b(from, source);
    for (const Row& r : rows::mixed_rows()) b.add(0, r);
    std::vector<uint8_t> adds = b.payload();
    b.set(0, rows::mixed_rows()[0], 3, "changed");
    b.remove(0, rows::mixed_rows()[1]);
    std::vector<uint8_t> changes = b.payload();
    REQUIRE(apply(adds, from, to, target).ok());
    Status st = apply(changes, from, to, target, 2);
    REQUIRE_MESSAGE(st.ok(), st.message);
    std::vector<Row> want;
    for (const Row& r : rows::all(stored, source.table(0))) want.push_back({r[2], r[3], "new", r[1], r[0]});
    CHECK(rows::all(moved, target.table(0)) == want);
  }
}

}  // namespace
}  // namespace aup::storage

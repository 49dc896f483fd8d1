// Rows of tables of num and text fields written as strings (a number as
// fmt prints it), for the storage tests of composite keys: images
// (image_test.cpp), change records (records_test.cpp) and recovery
// (recovery_test.cpp). Trees are keyed as the store keys them
// (storage/key_values.h's key_spec, vm/key.h's HeldKey).
#pragma once

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <string>
#include <tuple>
#include <vector>

#include "storage/key_values.h"
#include "storage/schema.h"
#include "vm/btree.h"
#include "vm/key.h"
#include "vm/text.h"

namespace aup::storage::rows {

using Row = std::vector<std::string>;

inline FieldSchema num(const char* name) { return FieldSchema{name, FieldType::Num, false, {}}; }
inline FieldSchema text(const char* name) { return FieldSchema{name, FieldType::Text, false, {}}; }

// `row` as slots of `t` (texts new heap texts, the caller's).
inline std::vector<uint64_t> slots(const TableSchema& t, const Row& row) {
  REQUIRE(row.size() == t.fields.size());
  std::vector<uint64_t> out;
  for (uint32_t f = 0; f < t.fields.size(); ++f) {
    out.push_back(t.fields[f].type == FieldType::Text ? reinterpret_cast<uint64_t>(vm::heap_text(row[f]))
                                                      : std::bit_cast<uint64_t>(std::stod(row[f])));
  }
  return out;
}

inline Row strings(const TableSchema& t, const uint64_t* slots) {
  Row out;
  for (uint32_t f = 0; f < t.fields.size(); ++f) {
    out.push_back(t.fields[f].type == FieldType::Text
                      ? std::string(reinterpret_cast<const vm::TextObj*>(slots[f])->view())
                      : fmt::format("{}", std::bit_cast<double>(slots[f])));
  }
  return out;
}

inline void release(const TableSchema& t, const uint64_t* slots) {
  for (uint32_t f = 0; f < t.fields.size(); ++f) {
    if (t.fields[f].type == FieldType::Text) vm::release(reinterpret_cast<vm::TextObj*>(slots[f]));
  }
}

// Inserts `row` under its key; false (and nothing kept) if the key is there.
inline bool insert(vm::BTree& tree, const TableSchema& t, const Row& row) {
  std::vector<uint64_t> s = slots(t, row);
  vm::HeldKey key(tree.layout().key, s.data());
  if (tree.insert(key.key(), s.data())) return true;
  release(t, s.data());
  return false;
}

// The row under `row`'s key, as strings; empty if there is none.
inline Row find(const vm::BTree& tree, const TableSchema& t, const Row& row) {
  std::vector<uint64_t> s = slots(t, row);
  const uint64_t* found = nullptr;
  {
    vm::HeldKey key(tree.layout().key, s.data());
    found = tree.find(key.key());
  }
  release(t, s.data());
  return found ? strings(t, found) : Row{};
}

// Every row, in the tree's order; each must be under its own key.
inline std::vector<Row> all(const TableSchema& t, const vm::BTree& tree) {
  std::vector<Row> out;
  tree.for_each(tree.root(), [&](const vm::Key& k, const uint64_t* row) {
    vm::HeldKey own(tree.layout().key, row);
    CHECK(vm::key_cmp(k, own.key()) == 0);
    out.push_back(strings(t, row));
  });
  return out;
}

// `rows` sorted by their keys as tuples, component by component (numbers
// by value, texts by their bytes, a text before its extensions): the order
// a composite key's encoding must give them.
inline std::vector<Row> in_key_order(const TableSchema& t, std::vector<Row> rows) {
  auto less = [&](const Row& a, const Row& b) {
    for (uint32_t f : t.key_fields) {
      if (t.fields[f].type == FieldType::Text) {
        if (a[f] != b[f]) return a[f] < b[f];
      } else if (std::stod(a[f]) != std::stod(b[f])) {
        return std::stod(a[f]) < std::stod(b[f]);
      }
    }
    return false;
  };
  std::sort(rows.begin(), rows.end(), less);
  return rows;
}

// A tree of `t` holding `rows`.
struct Tree {
  TableSchema table;
  vm::BTree tree;
  Tree(const TableSchema& t, const std::vector<Row>& rows) : table(t), tree(row_layout(t)) {
    for (const Row& r : rows) REQUIRE(insert(tree, t, r));
  }
};

// Tables of composite keys, one per kind of component: numbers only,
// texts only (key order not field order), and mixed; their rows include
// texts that are prefixes of others and texts holding a 0x00 byte.
inline TableSchema nums_table() {
  return TableSchema{"lines", "Line", {num("w"), num("d"), num("o"), num("qty")}, {0, 1, 2}};
}
inline std::vector<Row> nums_rows() {
  return {{"1", "2", "3", "10"}, {"1", "2", "-3", "11"}, {"1", "-2", "3", "12"}, {"-1", "2", "3", "13"},
          {"0", "0", "0", "14"}, {"1", "2", "3.5", "15"}, {"1e+300", "0", "0", "16"}, {"1", "10", "0", "17"}};
}
inline TableSchema texts_table() { return TableSchema{"pairs", "Pair", {text("a"), text("b"), num("n")}, {1, 0}}; }
inline std::vector<Row> texts_rows() {
  using namespace std::string_literals;
  return {{"x", "a", "1"},        {"x", "ab", "2"},          {"x", "a\0"s, "3"},      {"", "a", "4"},
          {"y", "", "5"},         {"x\0y"s, "a", "6"},       {"x\0"s, "a", "7"},      {"\0"s, "\0\0"s, "8"},
          {"z", "a\0b"s, "9"}};
}
inline TableSchema mixed_table() {
  return TableSchema{"events", "Event", {num("qty"), text("name"), num("at"), text("note")}, {1, 2}};
}
inline std::vector<Row> mixed_rows() {
  using namespace std::string_literals;
  return {{"1", "open", "5", "a"},     {"2", "open", "-5", "b"},  {"3", "close", "5", "c"},
          {"4", "op", "7", "d"},       {"5", "open\0"s, "1", "e"}, {"6", "", "0", "f\0g"s}};
}

}  // namespace aup::storage::rows

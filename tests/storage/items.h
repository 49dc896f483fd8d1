// For the storage tests: a store written through Store itself, without a
// module: one table, items (id, qty) keyed by id, taking batches of puts
// as the owner commits them.
#pragma once

#include <doctest/doctest.h>

#include <fmt/format.h>

#include <bit>
#include <memory>
#include <string>

#include "storage/memory_tables.h"
#include "storage/records.h"
#include "storage/store.h"
#include "vm/key.h"

namespace aup::storage {

inline Schema items_schema() {
  Schema s;
  s.tables.push_back(TableSchema{"items", "Item",
                                 {FieldSchema{"id", FieldType::Num, false, {}},
                                  FieldSchema{"qty", FieldType::Num, false, {}}},
                                 {0}});
  return s;
}

class Writer {
 public:
  // Opens (or creates) the store; REQUIREs that it opens.
  Writer(Io& io, const std::string& dir, StoreOptions o) : tables_(schema_), batch_(schema_) {
    status_ = Store::open(io, dir, schema_, o, tables_, store_, report_, nullptr);
    REQUIRE_MESSAGE(status_.ok(), status_.message);
  }
  // Row `id` gets `qty` (added, or its qty set).
  void put(double id, double qty) {
    vm::BTree& tree = tables_.table(0);
    uint64_t row[2] = {std::bit_cast<uint64_t>(id), std::bit_cast<uint64_t>(qty)};
    vm::HeldKey key(tree.layout().key, row);
    if (uint64_t* found = tree.find_mut(key.key())) {
      found[1] = row[1];
      batch_.note(BatchEncoder::Op::Set, 0, key.key(), 1);
    } else {
      REQUIRE(tree.insert(key.key(), row));
      batch_.note(BatchEncoder::Op::Insert, 0, key.key());
    }
  }
  void commit() {
    Fate fate = Fate::NotWritten;
    Status st = store_->commit(batch_, fate);
    REQUIRE_MESSAGE(st.ok(), st.message);
    batch_.clear();
    store_->tick();
  }
  Store& store() { return *store_; }
  const StoreOpenReport& report() const { return report_; }
  // Every row, as "id=qty;" in key order.
  std::string rows() {
    std::string s;
    vm::BTree& tree = tables_.table(0);
    tree.for_each(tree.root(), [&](const vm::Key&, const uint64_t* row) {
      s += fmt::format("{}={};", std::bit_cast<double>(row[0]), std::bit_cast<double>(row[1]));
    });
    return s;
  }

 private:
  Schema schema_ = items_schema();
  MemoryTables tables_;
  BatchEncoder batch_;
  Status status_;
  StoreOpenReport report_;
  std::unique_ptr<Store> store_;
};

}  // namespace aup::storage

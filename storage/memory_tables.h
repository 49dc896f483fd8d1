// Tables and vars built from a stored schema alone (no module): what
// `aup replay` and the storage tests read a store into.
#pragma once

#include <memory>
#include <vector>

#include "storage/records.h"
#include "storage/schema.h"

namespace aup::storage {

class MemoryTables : public Tables {
 public:
  explicit MemoryTables(const Schema& s);
  ~MemoryTables() override;
  MemoryTables(const MemoryTables&) = delete;
  MemoryTables& operator=(const MemoryTables&) = delete;

  vm::BTree& table(uint32_t t) override { return *tables_[t]; }
  uint64_t var(uint32_t v) const override { return vars_[v]; }
  void set_var(uint32_t v, uint64_t value) override;

 private:
  const Schema& schema_;
  std::vector<std::unique_ptr<vm::BTree>> tables_;
  std::vector<uint64_t> vars_;
};

}  // namespace aup::storage

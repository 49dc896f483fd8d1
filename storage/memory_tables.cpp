#include "storage/memory_tables.h"

#include <bit>

#include "storage/key_values.h"

namespace aup::storage {

MemoryTables::MemoryTables(const Schema& s) : schema_(s) {
  for (const TableSchema& t : s.tables) {
    tables_.push_back(std::make_unique<vm::BTree>(row_layout(t)));
  }
  for (const VarSchema& v : s.vars) {
    switch (v.type) {
      case FieldType::Num: vars_.push_back(std::bit_cast<uint64_t>(v.init.num)); break;
      case FieldType::Bool: vars_.push_back(v.init.boolean ? 1 : 0); break;
      case FieldType::Text: vars_.push_back(reinterpret_cast<uint64_t>(vm::heap_text(v.init.text))); break;
    }
  }
}

MemoryTables::~MemoryTables() {
  for (size_t v = 0; v < vars_.size(); ++v) {
    if (schema_.vars[v].type == FieldType::Text) vm::release(reinterpret_cast<vm::TextObj*>(vars_[v]));
  }
}

void MemoryTables::set_var(uint32_t v, uint64_t value) {
  if (schema_.vars[v].type == FieldType::Text) vm::release(reinterpret_cast<vm::TextObj*>(vars_[v]));
  vars_[v] = value;
}

}  // namespace aup::storage

#include "storage/key_tables.h"

#include <cassert>

namespace aup::storage {

TableSchema key_table_schema(KeyTableNumber t) {
  const KeyTableDef& d = kKeyTables[t];
  TableSchema ts;
  ts.name = std::string(d.name);
  ts.record = std::string(d.record);
  for (const KeyTableField& f : d.fields) ts.fields.push_back(FieldSchema{std::string(f.name), f.type, false, {}});
  ts.key_fields = {d.key_field};
  return ts;
}

bool is_key_table(std::string_view name) {
  for (const KeyTableDef& d : kKeyTables) {
    if (d.name == name) return true;
  }
  return false;
}

bool has_key_tables(const Schema& s) { return s.table_index(std::string(kKeyTables[kKeysTable].name)) >= 0; }

void add_key_tables(Schema& s) {
  assert(!has_key_tables(s));
  for (uint32_t t = 0; t < kKeyTableCount; ++t) s.tables.push_back(key_table_schema(static_cast<KeyTableNumber>(t)));
}

}  // namespace aup::storage

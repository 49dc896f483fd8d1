// The store's own tables: the idempotency keys (docs/protocol.md, "Retries
// that never apply twice"; runtime/keys.h keeps them), defined here once.
//
//   $keys       record $Key       {key: text, digest: text, answer: text, n: num, at: num}  key (key)
//   $key_order  record $KeyOrder  {n: num, key: text}                                       key (n)
//
// A store that keeps keys holds them after the module's tables, in this
// order, as SQLite holds sqlite_sequence: Store::open adds them when asked
// (StoreOptions::keep_keys) and keeps them once its schema file names them.
// The module never holds them and never names them: no name in a module
// can hold a `$`. Every vm::State has their trees after the module's
// tables (vm/state.h's kSystemTables, checked against these at compile
// time in runtime/keys.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "storage/schema.h"

namespace aup::storage {

// The fields of the two tables' rows, in record order.
enum KeysField : uint32_t { kKeysKey, kKeysDigest, kKeysAnswer, kKeysN, kKeysAt, kKeysFields };
enum KeyOrderField : uint32_t { kOrderN, kOrderKey, kOrderFields };

struct KeyTableField {
  std::string_view name;
  FieldType type;
};

struct KeyTableDef {
  std::string_view name;
  std::string_view record;
  std::span<const KeyTableField> fields;
  uint32_t key_field;
};

inline constexpr KeyTableField kKeysFieldDefs[kKeysFields] = {
    {"key", FieldType::Text}, {"digest", FieldType::Text}, {"answer", FieldType::Text},
    {"n", FieldType::Num},    {"at", FieldType::Num}};
inline constexpr KeyTableField kOrderFieldDefs[kOrderFields] = {{"n", FieldType::Num}, {"key", FieldType::Text}};

// The key tables in the order they follow the module's; kKeysTable and
// kKeyOrderTable are their places among them.
enum KeyTableNumber : uint32_t { kKeysTable, kKeyOrderTable, kKeyTableCount };
inline constexpr std::array<KeyTableDef, kKeyTableCount> kKeyTables = {{
    {"$keys", "$Key", kKeysFieldDefs, kKeysKey},
    {"$key_order", "$KeyOrder", kOrderFieldDefs, kOrderN},
}};

// As the schema file holds it.
TableSchema key_table_schema(KeyTableNumber t);
bool is_key_table(std::string_view name);
// Whether `s` holds the key tables (a store that keeps keys).
bool has_key_tables(const Schema& s);
// Appends them to `s` (which has none), after its tables.
void add_key_tables(Schema& s);

}  // namespace aup::storage

// The store's own tables (storage/key_tables.h): defined as the stores that
// keep keys already hold them, added after a schema's tables.
#include "storage/key_tables.h"

#include <doctest/doctest.h>

namespace aup::storage {
namespace {

FieldSchema field(const char* name, FieldType type) { return FieldSchema{name, type, false, {}}; }

TEST_SUITE("key_tables") {
  TEST_CASE("the key tables are as stores that kept keys before hold them in their schema files") {
    // Written out in full here, as `aup run --keys` has written them since
    // keys were first kept: a store's schema file must compare equal.
    TableSchema keys{"$keys", "$Key",
                     {field("key", FieldType::Text), field("digest", FieldType::Text),
                      field("answer", FieldType::Text), field("n", FieldType::Num), field("at", FieldType::Num)},
                     {0}};
    TableSchema order{"$key_order", "$KeyOrder", {field("n", FieldType::Num), field("key", FieldType::Text)}, {0}};
    CHECK(key_table_schema(kKeysTable) == keys);
    CHECK(key_table_schema(kKeyOrderTable) == order);
  }

  TEST_CASE("added after a schema's own tables; a schema has them or it does not") {
    Schema s;
    s.tables.push_back(TableSchema{"accounts", "Account", {field("id", FieldType::Num)}, {0}});
    CHECK_FALSE(has_key_tables(s));
    add_key_tables(s);
    REQUIRE(s.tables.size() == 3);
    CHECK(s.tables[0].name == "accounts");
    CHECK(s.tables[1].name == "$keys");
    CHECK(s.tables[2].name == "$key_order");
    CHECK(has_key_tables(s));
    CHECK(is_key_table("$keys"));
    CHECK(is_key_table("$key_order"));
    CHECK_FALSE(is_key_table("accounts"));
    CHECK_FALSE(is_key_table("keys"));
  }
}

}  // namespace
}  // namespace aup::storage

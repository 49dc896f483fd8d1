// The store's schema file (storage/schema_file.cpp): a round trip, and the
// refusals of a body the checksum passes (the header's are walked by
// tests/fault/corruption_test.py), each naming the file's byte.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "storage/codec.h"
#include "storage/schema_codec.h"
#include "storage/schema_file.h"
#include "tests/storage/files.h"

namespace aup::storage {
namespace {

namespace fs = std::filesystem;

using files::TempDir;

// The file schema_file.h lays out around `body`, sealed, of `version`.
std::vector<uint8_t> sealed(const std::vector<uint8_t>& body, uint8_t version = 1) {
  std::vector<uint8_t> file = {'A', 'U', 'P', 'S', 'C', 'H', 'E', 'M', version, 0, 0, 0, 0, 0, 0, 0};
  bytes::Writer w(file);
  w.fixed64(body.size());
  w.raw(body.data(), body.size());
  w.fixed64(XXH3_64bits(body.data(), body.size()));
  return file;
}
std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}
// Writes `dir`/schema around `body` as schema_file.h lays it out, sealed.
void write_sealed(const std::string& dir, const std::vector<uint8_t>& body, uint8_t version = 1) {
  std::vector<uint8_t> file = {'A', 'U', 'P', 'S', 'C', 'H', 'E', 'M', version, 0, 0, 0, 0, 0, 0, 0};
  bytes::Writer w(file);
  w.fixed64(body.size());
  w.raw(body.data(), body.size());
  w.fixed64(XXH3_64bits(body.data(), body.size()));
  std::ofstream out(dir + "/schema", std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
}

std::string refusal(const std::string& dir) {
  SystemIo io;
  Schema s;
  Status st = read_schema_file(io, dir, s);
  REQUIRE_FALSE(st.ok());
  return st.message;
}

Scalar num_scalar(double v) {
  Scalar s;
  s.num = v;
  return s;
}

const TableSchema kItems{"items",
                         "Item",
                         {FieldSchema{"id", FieldType::Num, false, {}},
                          FieldSchema{"label", FieldType::Text, false, {}}},
                         {0}};

TEST_SUITE("schema_file") {
  TEST_CASE("a schema round trips") {
    TempDir dir;
    SystemIo io;
    Schema s;
    s.tables.push_back(kItems);
    Scalar hello;
    hello.type = FieldType::Text;
    hello.text = "hello";
    s.vars.push_back(VarSchema{"count", FieldType::Num, num_scalar(3)});
    s.vars.push_back(VarSchema{"greeting", FieldType::Text, hello});
    REQUIRE(write_schema_file(io, dir.path, s).ok());
    Schema back;
    Status st = read_schema_file(io, dir.path, back);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CHECK(back == s);
  }

  TEST_CASE("refused: a var whose initial value is of another type") {
    TempDir dir;
    std::vector<uint8_t> body;
    Encoder e(body);
    e.varint(0);  // no tables
    e.varint(1);
    encode_var_schema(e, VarSchema{"v", FieldType::Bool, {}});
    e.scalar(num_scalar(1));  // at byte 24 + 5
    write_sealed(dir.path, body);
    CHECK(refusal(dir.path) ==
          dir.path + "/schema is damaged: it does not decode (byte 29): var `v` of type bool has an initial value of "
                     "type num");
  }

  TEST_CASE("refused: more tables than the body could hold, or more than 65536") {
    TempDir dir;
    std::vector<uint8_t> body;
    Encoder e(body);
    e.varint(5);  // five tables in six bytes: each takes at least 7
    e.raw(std::vector<uint8_t>(5, 0).data(), 5);
    e.varint(0);
    write_sealed(dir.path, body);
    CHECK(refusal(dir.path) == dir.path +
                                   "/schema is damaged: it does not decode (byte 24): a count of 5, more than the "
                                   "bytes left hold");
    body.clear();
    Encoder big(body);
    big.varint(65537);
    body.resize(body.size() + 65537 * 7);
    write_sealed(dir.path, body);
    CHECK(refusal(dir.path) ==
          dir.path + "/schema is damaged: it does not decode (byte 24): 65537 tables (at most 65536)");
  }

  TEST_CASE("refused: a table the shared codec refuses, at the file's byte") {
    TempDir dir;
    std::vector<uint8_t> body;
    Encoder e(body);
    e.varint(1);
    TableSchema keyless = kItems;
    keyless.key_fields = {2};
    encode_table_schema(e, keyless, kOneKeyFormat);
    e.varint(0);
    write_sealed(dir.path, body);
    // The key is the table's last byte, before the var count.
    CHECK(refusal(dir.path) == fmt::format("{}/schema is damaged: it does not decode (byte {}): table `items`: key "
                                           "field 2 of 2 fields",
                                           dir.path, 24 + body.size() - 2));
  }

  TEST_CASE("without a composite key the file is format 1, the bytes aup wrote before composite keys") {
    TempDir dir;
    SystemIo io;
    Schema s;
    s.tables.push_back(kItems);
    s.vars.push_back(VarSchema{"count", FieldType::Num, num_scalar(3)});
    REQUIRE(write_schema_file(io, dir.path, s).ok());
    // The body by hand: 1 table (items, Item, 2 fields, key field 0), 1 var.
    const std::vector<uint8_t> body = {1, 5, 'i', 't', 'e', 'm', 's', 4, 'I', 't', 'e', 'm', 2, 2, 'i', 'd', 1, 0,
                                       5, 'l', 'a', 'b', 'e', 'l', 2, 0, 0,
                                       1, 5, 'c', 'o', 'u', 'n', 't', 1, 1, 12};
    CHECK(read_bytes(dir.path + "/schema") == sealed(body, 1));
  }

  TEST_CASE("with a composite key the file is format 2, every table's key a list; both formats read") {
    TempDir dir;
    SystemIo io;
    Schema s;
    s.tables.push_back(kItems);
    s.tables.push_back(TableSchema{"lines", "Line",
                                   {FieldSchema{"w", FieldType::Num, false, {}},
                                    FieldSchema{"d", FieldType::Text, false, {}}},
                                   {1, 0}});
    REQUIRE(write_schema_file(io, dir.path, s).ok());
    std::vector<uint8_t> file = read_bytes(dir.path + "/schema");
    REQUIRE(file.size() > 32);
    CHECK(bytes::get_u32(file.data() + 8) == 2);
    // items' key: a count of 1, field 0 (its last two bytes, before lines).
    std::vector<uint8_t> body(file.begin() + 24, file.end() - 8);
    std::vector<uint8_t> items(body.begin() + 1, body.begin() + 28);
    CHECK(std::vector<uint8_t>(items.end() - 2, items.end()) == std::vector<uint8_t>{1, 0});
    CHECK(std::vector<uint8_t>(body.end() - 4, body.end()) == std::vector<uint8_t>{2, 1, 0, 0});  // key; no vars
    Schema back;
    Status st = read_schema_file(io, dir.path, back);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CHECK(back == s);

    // A store of before composite keys (format 1) still reads, each key one field.
    std::vector<uint8_t> old;
    Encoder e(old);
    e.varint(1);
    encode_table_schema(e, kItems, kOneKeyFormat);
    e.varint(0);
    write_sealed(dir.path, old, 1);
    Schema before;
    st = read_schema_file(io, dir.path, before);
    REQUIRE_MESSAGE(st.ok(), st.message);
    REQUIRE(before.tables.size() == 1);
    CHECK(before.tables[0] == kItems);
  }

  TEST_CASE("refused: a schema format this aup does not read, and a format 1 body read as format 2") {
    TempDir dir;
    std::vector<uint8_t> body;
    Encoder e(body);
    e.varint(1);
    encode_table_schema(e, kItems, kOneKeyFormat);
    e.varint(0);
    for (uint8_t v : {uint8_t{0}, uint8_t{3}}) {
      write_sealed(dir.path, body, v);
      CHECK(refusal(dir.path) ==
            fmt::format("{}/schema has schema format {} at byte 8; this aup reads 1 and 2", dir.path, v));
    }
    // items' key field 0 read as a key of 0 fields (the byte before the
    // var count).
    write_sealed(dir.path, body, 2);
    CHECK(refusal(dir.path) == fmt::format("{}/schema is damaged: it does not decode (byte {}): table `items`: a key "
                                           "of 0 fields (1 to 8)",
                                           dir.path, 24 + body.size() - 2));
  }

  // ---- compare_schemas: a key that is not the store's, one case per kind ----------

  TEST_CASE("refused: the key is another field") {
    Schema stored, module;
    stored.tables.push_back(kItems);
    module.tables.push_back(kItems);
    module.tables[0].key_fields = {1};
    SchemaDiff diff = compare_schemas(stored, module);
    CHECK(diff.refusals == std::vector<std::string>{"table `items`: the key was `id`, the module's is `label`"});
  }

  // lines (w, d, o) as the store holds it, keyed `key`.
  Schema lines_keyed(std::vector<uint32_t> key) {
    Schema s;
    s.tables.push_back(TableSchema{"lines", "Line",
                                   {FieldSchema{"w", FieldType::Num, false, {}},
                                    FieldSchema{"d", FieldType::Text, false, {}},
                                    FieldSchema{"o", FieldType::Num, false, {}}},
                                   std::move(key)});
    return s;
  }

  TEST_CASE("refused: a composite key of other fields") {
    SchemaDiff diff = compare_schemas(lines_keyed({0, 1}), lines_keyed({0, 2}));
    CHECK(diff.refusals == std::vector<std::string>{"table `lines`: the key was `(w, d)`, the module's is `(w, o)`"});
    CHECK(diff.additions.empty());
  }

  TEST_CASE("refused: the same key fields in another order (rows in another order)") {
    SchemaDiff diff = compare_schemas(lines_keyed({0, 1, 2}), lines_keyed({1, 0, 2}));
    CHECK(diff.refusals ==
          std::vector<std::string>{"table `lines`: the key was `(w, d, o)`, the module's is `(d, w, o)`"});
  }

  TEST_CASE("refused: one key field where the store has several, and several where it has one") {
    SchemaDiff fewer = compare_schemas(lines_keyed({0, 1}), lines_keyed({0}));
    CHECK(fewer.refusals == std::vector<std::string>{"table `lines`: the key was `(w, d)`, the module's is `w`"});
    SchemaDiff more = compare_schemas(lines_keyed({0}), lines_keyed({0, 1}));
    CHECK(more.refusals == std::vector<std::string>{"table `lines`: the key was `w`, the module's is `(w, d)`"});
  }

  TEST_CASE("the same composite key is no difference; with its fields moved it migrates") {
    CHECK(compare_schemas(lines_keyed({2, 0}), lines_keyed({2, 0})).same());
    // The module declares o first: the same key by names, another layout.
    Schema moved;
    moved.tables.push_back(TableSchema{"lines", "Line",
                                       {FieldSchema{"o", FieldType::Num, false, {}},
                                        FieldSchema{"w", FieldType::Num, false, {}},
                                        FieldSchema{"d", FieldType::Text, false, {}}},
                                       {0, 1}});
    SchemaDiff diff = compare_schemas(lines_keyed({2, 0}), moved);
    CHECK(diff.refusals.empty());
    CHECK(diff.additions == std::vector<std::string>{"the same tables and fields in another order or with other defaults"});
  }

  TEST_CASE("refused: bytes after the last var") {
    TempDir dir;
    std::vector<uint8_t> body;
    Encoder e(body);
    e.varint(0);
    e.varint(0);
    e.u8(7);
    write_sealed(dir.path, body);
    CHECK(refusal(dir.path) == dir.path + "/schema is damaged: it does not decode (byte 26): bytes after the last var");
  }
}

}  // namespace
}  // namespace aup::storage

// The store's schema file (storage/schema_file.cpp): a round trip, and the
// refusals of a body the checksum passes (the header's are walked by
// tests/fault/corruption_test.py), each naming the file's byte.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "storage/codec.h"
#include "storage/schema_codec.h"
#include "storage/schema_file.h"

namespace aup::storage {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/aup-schema-file-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

// Writes `dir`/schema around `body` as schema_file.h lays it out, sealed.
void write_sealed(const std::string& dir, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> file = {'A', 'U', 'P', 'S', 'C', 'H', 'E', 'M', 1, 0, 0, 0, 0, 0, 0, 0};
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

Scalar num(double v) {
  Scalar s;
  s.num = v;
  return s;
}

const TableSchema kItems{"items",
                         "Item",
                         {FieldSchema{"id", FieldType::Num, false, {}},
                          FieldSchema{"label", FieldType::Text, false, {}}},
                         0};

TEST_SUITE("schema_file") {
  TEST_CASE("a schema round trips") {
    TempDir dir;
    SystemIo io;
    Schema s;
    s.tables.push_back(kItems);
    Scalar hello;
    hello.type = FieldType::Text;
    hello.text = "hello";
    s.vars.push_back(VarSchema{"count", FieldType::Num, num(3)});
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
    e.scalar(num(1));  // at byte 24 + 5
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
    keyless.key_field = 2;
    encode_table_schema(e, keyless);
    e.varint(0);
    write_sealed(dir.path, body);
    // The key is the table's last byte, before the var count.
    CHECK(refusal(dir.path) == fmt::format("{}/schema is damaged: it does not decode (byte {}): table `items`: key "
                                           "field 2 of 2 fields",
                                           dir.path, 24 + body.size() - 2));
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

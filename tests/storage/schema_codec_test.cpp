// The one encoding of a table's and a var's schema (storage/schema_codec.h):
// round trips, every refusal named at its byte, and the same refusals from
// both files that hold a schema (an image, the schema file).
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "storage/codec.h"
#include "storage/image.h"
#include "storage/image_format.h"
#include "storage/schema_codec.h"
#include "storage/schema_file.h"
#include "tests/storage/files.h"

namespace aup::storage {
namespace {

namespace fs = std::filesystem;

using files::TempDir;

Scalar num(double v) {
  Scalar s;
  s.num = v;
  return s;
}
Scalar text(const char* v) {
  Scalar s;
  s.type = FieldType::Text;
  s.text = v;
  return s;
}
Scalar boolean(bool v) {
  Scalar s;
  s.type = FieldType::Bool;
  s.boolean = v;
  return s;
}

const TableSchema kAccounts{"accounts",
                            "Account",
                            {FieldSchema{"id", FieldType::Num, false, {}},
                             FieldSchema{"owner", FieldType::Text, true, text("nobody")},
                             FieldSchema{"balance", FieldType::Num, true, num(-2.5)},
                             FieldSchema{"closed", FieldType::Bool, true, boolean(false)}},
                            {0}};

// A table schema in the form of `format`, by default the one it is written
// in (table_format).
std::vector<uint8_t> encoded(const TableSchema& t, uint32_t format = 0) {
  std::vector<uint8_t> out;
  Encoder e(out);
  encode_table_schema(e, t, format ? format : table_format(t));
  return out;
}

// The decoder's refusal of `bytes` as a table schema ("" if it decodes).
std::string table_refusal(const std::vector<uint8_t>& bytes, uint32_t format = kOneKeyFormat) {
  Decoder d(bytes.data(), bytes.size());
  TableSchema t;
  bool ok = decode_table_schema(d, t, format);
  CHECK(ok == d.ok());
  return d.error();
}

// A table `t` (record `T`) whose field list the test writes itself: the
// count, then `fields` as given, then the key.
// In format 2 the key is a count, then the fields in key order
// (raw_table_keys); in format 1 one field number (raw_table).
std::vector<uint8_t> raw_table_with(uint64_t count, const std::vector<uint8_t>& fields,
                                    const std::vector<uint64_t>& key_varints) {
  std::vector<uint8_t> out;
  Encoder e(out);
  e.text("t");
  e.text("T");
  e.varint(count);
  e.raw(fields.data(), fields.size());
  for (uint64_t v : key_varints) e.varint(v);
  return out;
}
std::vector<uint8_t> raw_table(uint64_t count, const std::vector<uint8_t>& fields, uint64_t key) {
  return raw_table_with(count, fields, {key});
}
std::vector<uint8_t> raw_table_keys(uint64_t count, const std::vector<uint8_t>& fields,
                                    const std::vector<uint64_t>& keys) {
  std::vector<uint64_t> varints{keys.size()};
  varints.insert(varints.end(), keys.begin(), keys.end());
  return raw_table_with(count, fields, varints);
}
// One field's bytes: name, type byte, has-default byte (no default).
std::vector<uint8_t> raw_field(const char* name, uint8_t type, uint8_t has_default = 0) {
  std::vector<uint8_t> out;
  Encoder e(out);
  e.text(name);
  e.u8(type);
  e.u8(has_default);
  return out;
}
std::vector<uint8_t> operator+(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST_SUITE("schema_codec") {
  TEST_CASE("a table schema round trips, defaults of every type included") {
    std::vector<uint8_t> bytes = encoded(kAccounts);
    Decoder d(bytes.data(), bytes.size());
    TableSchema back;
    REQUIRE(decode_table_schema(d, back, kOneKeyFormat));
    CHECK(d.done());
    CHECK(back == kAccounts);
    TableSchema text_key{"words", "Word", {FieldSchema{"n", FieldType::Num, false, {}},
                                           FieldSchema{"w", FieldType::Text, false, {}}}, {1}};
    bytes = encoded(text_key);
    Decoder d2(bytes.data(), bytes.size());
    TableSchema back2;
    REQUIRE(decode_table_schema(d2, back2, kOneKeyFormat));
    CHECK(back2 == text_key);
  }

  TEST_CASE("the bytes of a table schema") {
    TableSchema t{"t", "T", {FieldSchema{"k", FieldType::Text, false, {}},
                             FieldSchema{"n", FieldType::Num, true, num(1)}}, {0}};
    CHECK(encoded(t) == std::vector<uint8_t>{1, 't', 1, 'T', 2, 1, 'k', 2, 0, 1, 'n', 1, 1, 1, 4, 0});
  }

  TEST_CASE("refused: no fields, or more than 255") {
    // The count is at byte 4 (after "t" and "T").
    CHECK(table_refusal(raw_table(0, {}, 0)) == "table `t` has 0 fields (1 to 255) at byte 4");
    CHECK(table_refusal(raw_table(256, {}, 0)) == "table `t` has 256 fields (1 to 255) at byte 4");
  }

  TEST_CASE("refused: an unknown type byte") {
    // The first field's type byte is at byte 7 (count at 4, name "a" at 5).
    CHECK(table_refusal(raw_table(1, raw_field("a", 0), 0)) == "an unknown type byte 0 at byte 7");
    CHECK(table_refusal(raw_table(1, raw_field("a", 4), 0)) == "an unknown type byte 4 at byte 7");
  }

  TEST_CASE("refused: a field named twice") {
    std::vector<uint8_t> fields = raw_field("a", 1) + raw_field("b", 2) + raw_field("a", 3);
    // The second `a` starts at byte 13 (count at 4, each field 4 bytes from 5).
    CHECK(table_refusal(raw_table(3, fields, 0)) == "field `a` named twice at byte 13");
  }

  TEST_CASE("refused: a has-default byte other than 0 or 1") {
    CHECK(table_refusal(raw_table(1, raw_field("a", 1, 2), 0)) == "a has-default byte 2 (0 or 1) at byte 8");
  }

  TEST_CASE("refused: a default of another type than its field") {
    std::vector<uint8_t> field = raw_field("a", 1, 1);
    Encoder(field).scalar(text("x"));
    CHECK(table_refusal(raw_table(1, field, 0)) == "field `a` of type num has a default of type text at byte 9");
    std::vector<uint8_t> unknown = raw_field("a", 1, 1) + std::vector<uint8_t>{9};
    CHECK(table_refusal(raw_table(1, unknown, 0)) == "an unknown value type at byte 9");
  }

  TEST_CASE("refused: a key field out of range, or of a bool") {
    std::vector<uint8_t> fields = raw_field("a", 1) + raw_field("b", 3);
    // The key is at byte 13, after the two fields.
    CHECK(table_refusal(raw_table(2, fields, 2)) == "table `t`: key field 2 of 2 fields at byte 13");
    CHECK(table_refusal(raw_table(2, fields, 1)) ==
          "table `t`: key field `b` is a bool (a key is num or text) at byte 13");
    CHECK(table_refusal(raw_table(2, fields, 0)).empty());
  }

  TEST_CASE("composite keys: format 2 writes the key's fields in key order, and they round trip") {
    // lines (w, d, o, qty) keyed (o, w, d): key order is not field order.
    TableSchema lines{"lines", "Line",
                      {FieldSchema{"w", FieldType::Num, false, {}}, FieldSchema{"d", FieldType::Text, false, {}},
                       FieldSchema{"o", FieldType::Num, false, {}}, FieldSchema{"qty", FieldType::Num, false, {}}},
                      {2, 0, 1}};
    CHECK(table_format(lines) == kKeyListFormat);
    CHECK(table_format(kAccounts) == kOneKeyFormat);
    CHECK(tables_format({kAccounts}) == kOneKeyFormat);
    CHECK(tables_format({kAccounts, lines}) == kKeyListFormat);
    std::vector<uint8_t> bytes = encoded(lines);
    // ... the fields, then the key: 3 fields, 2, 0, 1.
    REQUIRE(bytes.size() > 4);
    CHECK(std::vector<uint8_t>(bytes.end() - 4, bytes.end()) == std::vector<uint8_t>{3, 2, 0, 1});
    Decoder d(bytes.data(), bytes.size());
    TableSchema back;
    REQUIRE(decode_table_schema(d, back, kKeyListFormat));
    CHECK(d.done());
    CHECK(back == lines);
    // A one-field key in format 2 (a file that also holds a composite key):
    // a count of 1, then the field.
    std::vector<uint8_t> one = encoded(kAccounts, kKeyListFormat);
    std::vector<uint8_t> old = encoded(kAccounts, kOneKeyFormat);
    CHECK(std::vector<uint8_t>(one.end() - 2, one.end()) == std::vector<uint8_t>{1, 0});
    CHECK(std::vector<uint8_t>(one.begin(), one.end() - 2) == std::vector<uint8_t>(old.begin(), old.end() - 1));
    Decoder d2(one.data(), one.size());
    REQUIRE(decode_table_schema(d2, back, kKeyListFormat));
    CHECK(back == kAccounts);
  }

  TEST_CASE("refused: a composite key no table could have, named by component at its byte") {
    std::vector<uint8_t> fields = raw_field("a", 1) + raw_field("b", 3) + raw_field("c", 2);
    // The key's count is at byte 17, after three fields of 4 bytes from 5;
    // component i at byte 17 + i.
    CHECK(table_refusal(raw_table_keys(3, fields, {}), kKeyListFormat) ==
          "table `t`: a key of 0 fields (1 to 8) at byte 17");
    CHECK(table_refusal(raw_table_keys(3, fields, std::vector<uint64_t>(9, 0)), kKeyListFormat) ==
          "table `t`: a key of 9 fields (1 to 8) at byte 17");
    CHECK(table_refusal(raw_table_keys(3, fields, {0, 3}), kKeyListFormat) ==
          "table `t`: key component 2: field 3 of 3 fields at byte 19");
    CHECK(table_refusal(raw_table_keys(3, fields, {2, 1}), kKeyListFormat) ==
          "table `t`: key component 2: field `b` is a bool (a key is num or text) at byte 19");
    CHECK(table_refusal(raw_table_keys(3, fields, {2, 0, 2}), kKeyListFormat) ==
          "table `t`: key component 3: field `c` is component 1 too at byte 20");
    // A one-field key in format 2 reads as it did in format 1.
    CHECK(table_refusal(raw_table_keys(3, fields, {1}), kKeyListFormat) ==
          "table `t`: key field `b` is a bool (a key is num or text) at byte 18");
    CHECK(table_refusal(raw_table_keys(3, fields, {2, 0}), kKeyListFormat).empty());
    // Cut short inside the key.
    std::vector<uint8_t> whole = raw_table_keys(3, fields, {2, 0});
    for (size_t n = 17; n < whole.size(); ++n) {
      CAPTURE(n);
      CHECK(!table_refusal(std::vector<uint8_t>(whole.begin(), whole.begin() + static_cast<long>(n)), kKeyListFormat)
                 .empty());
    }
  }

  TEST_CASE("refused: a table cut short anywhere") {
    std::vector<uint8_t> bytes = encoded(kAccounts);
    for (size_t n = 0; n < bytes.size(); ++n) {
      CAPTURE(n);
      std::string error = table_refusal(std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(n)));
      CHECK(!error.empty());
    }
  }

  TEST_CASE("a var's name and type round trip; an unknown type is refused at its byte") {
    std::vector<uint8_t> out;
    Encoder e(out);
    encode_var_schema(e, VarSchema{"total", FieldType::Bool, boolean(true)});
    CHECK(out == std::vector<uint8_t>{5, 't', 'o', 't', 'a', 'l', 3});
    Decoder d(out.data(), out.size());
    VarSchema v;
    REQUIRE(decode_var_schema(d, v));
    CHECK(v.name == "total");
    CHECK(v.type == FieldType::Bool);
    out.back() = 4;
    Decoder bad(out.data(), out.size(), 100);
    CHECK_FALSE(decode_var_schema(bad, v));
    CHECK(bad.error() == "an unknown type byte 4 at byte 106");
  }

  TEST_CASE("both files refuse a table schema with the same check, naming their own byte") {
    // Writers never write these (the checker refuses such modules), so the
    // test makes them: a bool key, and a field named twice. The schema
    // file did not check either before the codec was shared.
    TableSchema bool_key{"t", "T", {FieldSchema{"a", FieldType::Num, false, {}},
                                    FieldSchema{"b", FieldType::Bool, false, {}}}, {1}};
    TableSchema twice{"t", "T", {FieldSchema{"a", FieldType::Num, false, {}},
                                 FieldSchema{"a", FieldType::Text, false, {}}}, {0}};
    TableSchema key_twice{"t", "T", {FieldSchema{"a", FieldType::Num, false, {}},
                                     FieldSchema{"b", FieldType::Text, false, {}}}, {1, 1}};
    struct Case {
      const TableSchema* table;
      size_t at;  // the refused byte, from the table schema's start
      std::string problem;
    };
    const Case cases[] = {
        {&bool_key, encoded(bool_key).size() - 1, "table `t`: key field `b` is a bool (a key is num or text)"},
        {&twice, 9, "field `a` named twice"},
        {&key_twice, encoded(key_twice).size() - 1, "table `t`: key component 2: field `b` is component 1 too"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.problem);
      TempDir dir;
      SystemIo io;
      vm::RowLayout layout;
      layout.slots = 2;
      vm::BTree empty(layout);
      ImageWritten written;
      REQUIRE(write_table_image(io, dir.path, *c.table, empty, empty.root(), 1, written).ok());
      ImageRead info;
      std::string path = table_image_path(dir.path, "t");
      Status st = read_table_image(io, path, info, [](uint64_t*) { return Status::good(); });
      // The image's table schema starts its body, at byte 64.
      CHECK(st.message == fmt::format("{} is damaged: its column list does not decode (byte {}): {}", path,
                                      image_format::kHeaderBytes + c.at, c.problem));

      // write_schema_file writes only a schema that reads back (it asserts
      // so), so the file is framed here around the codec's bytes, as
      // schema_file.h lays it out: one table, no vars.
      std::vector<uint8_t> body;
      Encoder e(body);
      e.varint(1);
      encode_table_schema(e, *c.table, table_format(*c.table));
      e.varint(0);
      std::vector<uint8_t> file = {'A', 'U', 'P', 'S', 'C', 'H', 'E', 'M'};
      bytes::Writer w(file);
      w.fixed32(table_format(*c.table));
      w.fixed32(0);
      w.fixed64(body.size());
      w.raw(body.data(), body.size());
      w.fixed64(XXH3_64bits(body.data(), body.size()));
      std::ofstream(dir.path + "/schema", std::ios::binary)
          .write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
      Schema back;
      st = read_schema_file(io, dir.path, back);
      // The schema file's starts after its 24-byte header and a one-byte
      // table count.
      CHECK(st.message == fmt::format("{}/schema is damaged: it does not decode (byte {}): {}", dir.path, 25 + c.at,
                                      c.problem));
    }
  }
}

}  // namespace
}  // namespace aup::storage

#include "storage/schema_codec.h"

#include <fmt/format.h>

namespace aup::storage {

namespace {

// Fails the decoder at `at`, the first byte of the value found wrong.
bool refuse(Decoder& d, size_t at, std::string what) {
  d.fail_at(at, std::move(what));
  return false;
}

void encode_field(Encoder& e, const FieldSchema& f) {
  e.text(f.name);
  e.u8(static_cast<uint8_t>(f.type));
  e.u8(f.has_default ? 1 : 0);
  if (f.has_default) e.scalar(f.default_value);
}

// One field of `t`, checked against the fields before it: rows are loaded
// into a table's fields by column name (image.cpp), so a name twice would
// load two columns into one field.
bool decode_field(Decoder& d, const TableSchema& t, FieldSchema& f) {
  size_t at = d.offset();
  f.name = std::string(d.text());
  for (const FieldSchema& g : t.fields) {
    if (d.ok() && g.name == f.name) return refuse(d, at, fmt::format("field `{}` named twice", f.name));
  }
  if (!decode_field_type(d, f.type)) return false;
  at = d.offset();
  uint8_t has = d.u8();
  if (has > 1) return refuse(d, at, fmt::format("a has-default byte {} (0 or 1)", has));
  f.has_default = has == 1;
  if (f.has_default) {
    at = d.offset();
    f.default_value = d.scalar();
    // A migration fills stored rows with it as a value of the field's type.
    if (d.ok() && f.default_value.type != f.type) {
      return refuse(d, at, fmt::format("field `{}` of type {} has a default of type {}", f.name,
                                       field_type_name(f.type), field_type_name(f.default_value.type)));
    }
  }
  return d.ok();
}

}  // namespace

bool decode_field_type(Decoder& d, FieldType& t) {
  size_t at = d.offset();
  uint8_t b = d.u8();
  if (!d.ok()) return false;
  if (b < 1 || b > 3) return refuse(d, at, fmt::format("an unknown type byte {}", b));
  t = static_cast<FieldType>(b);
  return true;
}

void encode_table_schema(Encoder& e, const TableSchema& t) {
  e.text(t.name);
  e.text(t.record);
  e.varint(t.fields.size());
  for (const FieldSchema& f : t.fields) encode_field(e, f);
  e.varint(t.key_field);
}

bool decode_table_schema(Decoder& d, TableSchema& t) {
  t = TableSchema{};
  t.name = std::string(d.text());
  t.record = std::string(d.text());
  size_t at = d.offset();
  uint64_t n = d.varint();
  if (d.ok() && (n == 0 || n > kMaxFields)) {
    return refuse(d, at, fmt::format("table `{}` has {} fields (1 to {})", t.name, n, kMaxFields));
  }
  for (uint64_t i = 0; i < n && d.ok(); ++i) {
    FieldSchema f;
    if (!decode_field(d, t, f)) return false;
    t.fields.push_back(std::move(f));
  }
  at = d.offset();
  uint64_t key = d.varint();
  if (!d.ok()) return false;
  if (key >= t.fields.size()) {
    return refuse(d, at, fmt::format("table `{}`: key field {} of {} fields", t.name, key, t.fields.size()));
  }
  t.key_field = static_cast<uint32_t>(key);
  const FieldSchema& k = t.fields[key];
  if (k.type != FieldType::Num && k.type != FieldType::Text) {
    return refuse(d, at, fmt::format("table `{}`: key field `{}` is a {} (a key is num or text)", t.name, k.name,
                                     field_type_name(k.type)));
  }
  return true;
}

void encode_var_schema(Encoder& e, const VarSchema& v) {
  e.text(v.name);
  e.u8(static_cast<uint8_t>(v.type));
}

bool decode_var_schema(Decoder& d, VarSchema& v) {
  v.name = std::string(d.text());
  return decode_field_type(d, v.type);
}

}  // namespace aup::storage

#include "storage/schema_codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "vm/key.h"

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

uint32_t table_format(const TableSchema& t) { return t.composite_key() ? kKeyListFormat : kOneKeyFormat; }

uint32_t tables_format(const std::vector<TableSchema>& tables) {
  uint32_t format = kOneKeyFormat;
  for (const TableSchema& t : tables) format = std::max(format, table_format(t));
  return format;
}

void encode_table_schema(Encoder& e, const TableSchema& t, uint32_t format) {
  e.text(t.name);
  e.text(t.record);
  e.varint(t.fields.size());
  for (const FieldSchema& f : t.fields) encode_field(e, f);
  if (format == kOneKeyFormat) {
    assert(t.key_fields.size() == 1 && "a composite key written in the one-key format");
    e.varint(t.key_fields[0]);
    return;
  }
  e.varint(t.key_fields.size());
  for (uint32_t k : t.key_fields) e.varint(k);
}

namespace {

// Key field `key` (read at `at`) as component `i` of `t`'s key: a field of
// the table, num or text, not in the key already. A one-field key's
// problems read as they did before composite keys ("key field 2 of 2
// fields"); a composite key's name the component ("key component 2: field
// 5 of 3 fields").
bool decode_key_field(Decoder& d, TableSchema& t, size_t at, uint64_t key, size_t i, size_t count) {
  auto which = [&] { return count == 1 ? std::string("key field") : fmt::format("key component {}: field", i + 1); };
  if (key >= t.fields.size()) {
    return refuse(d, at, fmt::format("table `{}`: {} {} of {} fields", t.name, which(), key, t.fields.size()));
  }
  const FieldSchema& k = t.fields[key];
  if (k.type != FieldType::Num && k.type != FieldType::Text) {
    return refuse(d, at, fmt::format("table `{}`: {} `{}` is a {} (a key is num or text)", t.name, which(), k.name,
                                     field_type_name(k.type)));
  }
  for (size_t j = 0; j < i; ++j) {
    if (t.key_fields[j] == key) {
      return refuse(d, at, fmt::format("table `{}`: {} `{}` is component {} too", t.name, which(), k.name, j + 1));
    }
  }
  t.key_fields.push_back(static_cast<uint32_t>(key));
  return true;
}

// The key, in the form of `format` (schema_codec.h).
bool decode_key(Decoder& d, TableSchema& t, uint32_t format) {
  t.key_fields.clear();
  size_t at = d.offset();
  uint64_t count = format == kOneKeyFormat ? 1 : d.varint();
  if (!d.ok()) return false;
  if (count == 0 || count > vm::kMaxKeyFields) {
    return refuse(d, at, fmt::format("table `{}`: a key of {} fields (1 to {})", t.name, count, vm::kMaxKeyFields));
  }
  for (uint64_t i = 0; i < count; ++i) {
    at = d.offset();
    uint64_t key = d.varint();
    if (!d.ok()) return false;
    if (!decode_key_field(d, t, at, key, i, count)) return false;
  }
  return true;
}

}  // namespace

bool decode_table_schema(Decoder& d, TableSchema& t, uint32_t format) {
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
  if (!d.ok()) return false;
  return decode_key(d, t, format);
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

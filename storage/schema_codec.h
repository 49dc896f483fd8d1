// The bytes of a table's and a var's schema, written the same way in an
// image's body (image_format.h) and in the store's schema file
// (schema_file.h), and read back with the same checks in both:
//
//   table  name (text), record name (text), field count (varint, 1..255),
//          each field: name (text, no two alike), type byte (1 num, 2 text,
//          3 bool), has-default byte (0 or 1), [default: a scalar of the
//          field's type]; then the key, in the form of the file's format:
//            format 1: the key field (varint: a field, num or text)
//            format 2: the key's field count (varint, 1 to vm::kMaxKeyFields),
//                      then each key field in key order (varint: a field,
//                      num or text, none twice)
//   var    name (text), type byte; then the file's value for it (the
//          schema file: the initial value as a scalar of that type; an
//          image: the value, codec.h's encoding for the type)
//
// Apart from schema.h, which codec.h includes: these need the codec.
#pragma once

#include "storage/codec.h"
#include "storage/schema.h"

namespace aup::storage {

inline constexpr uint64_t kMaxFields = 255;

// The forms of a table schema, numbered as the format versions of the
// files that hold them (an image, the schema file): 1 names one key field,
// 2 a list of them (composite keys, `key (w, d, o)`).
inline constexpr uint32_t kOneKeyFormat = 1;
inline constexpr uint32_t kKeyListFormat = 2;
// The format a file holding these tables is written in: the first that can
// hold their keys. A store without a composite key is then written byte for
// byte as before composite keys, and an aup of before still reads it; one
// with a composite key is refused by such an aup by its format version.
uint32_t table_format(const TableSchema& t);
uint32_t tables_format(const std::vector<TableSchema>& tables);

// `format` is table_format's (or more) when writing; when reading, the
// file's version, which the file has checked is 1 or 2.
void encode_table_schema(Encoder& e, const TableSchema& t, uint32_t format);
// False, with the decoder failed at the byte that is wrong ("a field type
// byte 7 at byte 31"), on a schema no table could have.
bool decode_table_schema(Decoder& d, TableSchema& t, uint32_t format);

// A var's name and type (what follows them is the file's own).
void encode_var_schema(Encoder& e, const VarSchema& v);
bool decode_var_schema(Decoder& d, VarSchema& v);

// A type byte; an unknown one fails the decoder at that byte.
bool decode_field_type(Decoder& d, FieldType& t);

}  // namespace aup::storage

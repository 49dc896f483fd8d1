// The `schema` file of a store: the tables and vars it was written with.
//
//   0   8  magic "AUPSCHEM"
//   8   4  format version, little-endian: 1 when every table's key is one
//          field (as before composite keys), 2 when any is composite (the
//          tables' key form, schema_codec.h); both are read
//   12  4  reserved (0)
//   16  8  body length, little-endian
//   24  .. body: varint tables, each as in an image (image_format.h); varint
//          vars, each: name, type byte, initial scalar
//   end 8  XXH3-64 of the body
//
// Written beside (`schema.new`), synced, renamed, directory synced.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/io.h"
#include "storage/schema.h"
#include "storage/status.h"

namespace aup::storage {

Status write_schema_file(Io& io, const std::string& dir, const Schema& s);
// err == ENOENT when there is none.
Status read_schema_file(Io& io, const std::string& dir, Schema& s);

// A schema file's bytes for `s`, and a schema read back from such bytes
// (`name` says where they came from in a refusal): what a replica's
// handshake carries (runtime/replication_stream.h).
std::vector<uint8_t> schema_file_bytes(const Schema& s);
Status parse_schema_file_bytes(const std::string& name, const std::vector<uint8_t>& bytes, Schema& s);

// How a module's schema differs from a store's. Additions (a table, a var,
// a field with a default) migrate; anything else is a refusal, one line
// per difference (a table's key: other fields, another order, one field
// or several, is one).
struct SchemaDiff {
  std::vector<std::string> additions;
  std::vector<std::string> refusals;
  bool same() const { return additions.empty() && refusals.empty(); }
};
SchemaDiff compare_schemas(const Schema& stored, const Schema& module);

}  // namespace aup::storage

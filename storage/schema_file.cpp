#include "storage/schema_file.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cassert>
#include <cstring>

#include "storage/codec.h"
#include "storage/file_io.h"
#include "storage/key_values.h"
#include "storage/schema_codec.h"
#include "vm/bytes.h"

namespace aup::storage {

namespace {
// The header (schema_file.h): magic, version, reserved, body length.
constexpr char kMagic[8] = {'A', 'U', 'P', 'S', 'C', 'H', 'E', 'M'};
// The versions read: 1, every key one field; 2, composite keys too
// (schema_codec.h's table formats). Written: the first that holds the
// tables (tables_format).
constexpr uint32_t kFirstVersion = kOneKeyFormat;
constexpr uint32_t kLastVersion = kKeyListFormat;
constexpr size_t kHeaderBytes = 24;
constexpr size_t kDigestBytes = 8;
constexpr uint64_t kMaxTables = 65536;
constexpr uint64_t kMaxVars = 65536;

// The body: the tables and vars (schema_codec.h), each var followed by its
// initial value.
void encode_schema(Encoder& e, const Schema& s, uint32_t version) {
  e.varint(s.tables.size());
  for (const TableSchema& t : s.tables) encode_table_schema(e, t, version);
  e.varint(s.vars.size());
  for (const VarSchema& v : s.vars) {
    encode_var_schema(e, v);
    e.scalar(v.init);
  }
}

// A count (of tables or vars) of at most `most`, each item at least
// `min_bytes` long.
uint64_t decode_count(Decoder& d, size_t min_bytes, uint64_t most, const char* what) {
  size_t at = d.offset();
  uint64_t n = d.count(min_bytes);
  if (n > most) d.fail_at(at, fmt::format("{} {} (at most {})", n, what, most));
  return d.ok() ? n : 0;
}

bool decode_var(Decoder& d, VarSchema& v) {
  if (!decode_var_schema(d, v)) return false;
  size_t at = d.offset();
  v.init = d.scalar();
  // The var starts with it as a value of its type.
  if (d.ok() && v.init.type != v.type) {
    d.fail_at(at, fmt::format("var `{}` of type {} has an initial value of type {}", v.name,
                              field_type_name(v.type), field_type_name(v.init.type)));
  }
  return d.ok();
}

bool decode_schema(Decoder& d, Schema& s, uint32_t version) {
  // A table takes at least 7 bytes (names, one field, the key), a var 4.
  uint64_t nt = decode_count(d, 7, kMaxTables, "tables");
  for (uint64_t i = 0; i < nt && d.ok(); ++i) {
    TableSchema t;
    if (!decode_table_schema(d, t, version)) return false;
    s.tables.push_back(std::move(t));
  }
  uint64_t nv = decode_count(d, 4, kMaxVars, "vars");
  for (uint64_t i = 0; i < nv && d.ok(); ++i) {
    VarSchema v;
    if (!decode_var(d, v)) return false;
    s.vars.push_back(std::move(v));
  }
  if (d.ok() && !d.done()) d.fail("bytes after the last var");
  return d.ok();
}

// Checks the header and the digest; the body is bytes 24..24+len, in
// format `version`.
Status check_frame(const std::string& path, const std::vector<uint8_t>& bytes, uint64_t& len, uint32_t& version) {
  if (bytes.size() < kHeaderBytes + kDigestBytes) {
    return Status::error(fmt::format("{} is damaged: it ends at byte {}, shorter than an empty schema file ({} bytes)",
                                     path, bytes.size(), kHeaderBytes + kDigestBytes));
  }
  const uint8_t* h = bytes.data();
  if (std::memcmp(h, kMagic, 8) != 0) {
    return Status::error(fmt::format("{} is damaged or not an aup schema file: no schema magic at byte 0", path));
  }
  version = bytes::get_u32(h + 8);
  if (version < kFirstVersion || version > kLastVersion) {
    return Status::error(fmt::format("{} has schema format {} at byte 8; this aup reads {} and {}", path, version,
                                     kFirstVersion, kLastVersion));
  }
  // Not covered by the digest: checked, so a damaged or future file is not
  // read as this format.
  if (bytes::get_u32(h + 12) != 0) {
    return Status::error(fmt::format("{} is damaged: the reserved bytes 12..15 are not zero", path));
  }
  len = bytes::get_u64(h + 16);
  uint64_t holds = bytes.size() - kHeaderBytes - kDigestBytes;
  if (len != holds) {
    return Status::error(fmt::format("{} is damaged: the length at byte 16 says {} bytes, the file holds {} "
                                     "(it ends at byte {})",
                                     path, len, holds, bytes.size()));
  }
  const uint8_t* body = h + kHeaderBytes;
  if (XXH3_64bits(body, len) != bytes::get_u64(body + len)) {
    return Status::error(fmt::format("{} is damaged: the digest at byte {} does not match bytes {}..{}", path,
                                     kHeaderBytes + len, kHeaderBytes, kHeaderBytes + len - 1));
  }
  return Status::good();
}

// The file's bytes for `s`: the header, the body and its digest.
std::vector<uint8_t> frame_schema(const Schema& s) {
  uint32_t version = tables_format(s.tables);
  std::vector<uint8_t> body;
  Encoder b(body);
  encode_schema(b, s, version);
  std::vector<uint8_t> file;
  bytes::Writer e(file);
  e.raw(reinterpret_cast<const uint8_t*>(kMagic), sizeof kMagic);
  e.fixed32(version);
  e.fixed32(0);
  e.fixed64(body.size());
  e.raw(body.data(), body.size());
  e.fixed64(XXH3_64bits(body.data(), body.size()));
  return file;
}

// A schema file's bytes, checked and decoded (`path` names it in a refusal).
Status parse_schema(const std::string& path, const std::vector<uint8_t>& bytes, Schema& s) {
  uint64_t len = 0;
  uint32_t version = 0;
  Status st = check_frame(path, bytes, len, version);
  if (!st.ok()) return st;
  Decoder d(bytes.data() + kHeaderBytes, len, kHeaderBytes);
  if (!decode_schema(d, s, version)) {
    return Status::error(
        fmt::format("{} is damaged: it does not decode (byte {}): {}", path, d.error_offset(), d.problem()));
  }
  return Status::good();
}

// Whether `file` reads back as `s`: the same tables, fields, types, keys
// and vars, which every row and log record is read by (a schema that read
// back otherwise would misread them all), and, written again from what was
// read, the same bytes (so the defaults too: compared as bytes, since a
// NaN is not equal to itself).
[[maybe_unused]] bool reads_back_as(const std::vector<uint8_t>& file, const Schema& s) {
  Schema back;
  if (!parse_schema("the schema being written", file, back).ok() || frame_schema(back) != file) return false;
  auto same_field = [](const FieldSchema& a, const FieldSchema& b) {
    return a.name == b.name && a.type == b.type && a.has_default == b.has_default;
  };
  auto same_table = [&](const TableSchema& a, const TableSchema& b) {
    return a.name == b.name && a.key_fields == b.key_fields &&
           std::equal(a.fields.begin(), a.fields.end(), b.fields.begin(), b.fields.end(), same_field);
  };
  auto same_var = [](const VarSchema& a, const VarSchema& b) { return a.name == b.name && a.type == b.type; };
  return std::equal(back.tables.begin(), back.tables.end(), s.tables.begin(), s.tables.end(), same_table) &&
         std::equal(back.vars.begin(), back.vars.end(), s.vars.begin(), s.vars.end(), same_var);
}

constexpr DurablePoints kSchemaPoints{"schema.before_fsync", "schema.before_rename", "schema.after_rename",
                                      "schema.after_dir_sync"};

}  // namespace

std::vector<uint8_t> schema_file_bytes(const Schema& s) { return frame_schema(s); }

Status parse_schema_file_bytes(const std::string& name, const std::vector<uint8_t>& bytes, Schema& s) {
  return parse_schema(name, bytes, s);
}

Status write_schema_file(Io& io, const std::string& dir, const Schema& s) {
  std::vector<uint8_t> file = frame_schema(s);
  assert(reads_back_as(file, s));  // checked right before it goes to disk
  return write_file_durably(io, dir, "schema", file, DurableWrite{kSchemaPoints, {}});
}

Status read_schema_file(Io& io, const std::string& dir, Schema& s) {
  std::string path = dir + "/schema";
  std::vector<uint8_t> bytes;
  Status st = read_file(io, path, bytes);
  if (!st.ok()) return st;
  return parse_schema(path, bytes, s);
}

SchemaDiff compare_schemas(const Schema& stored, const Schema& module) {
  SchemaDiff diff;
  for (const TableSchema& st : stored.tables) {
    int mi = module.table_index(st.name);
    if (mi < 0) {
      diff.refusals.push_back(fmt::format("table `{}` is in the store but not in the module", st.name));
      continue;
    }
    const TableSchema& mt = module.tables[static_cast<size_t>(mi)];
    // Keys are compared by their fields' names: another field, another
    // order or another number of fields is another key, rows in another
    // order, so not a migration.
    std::string skey = key_names(st), mkey = key_names(mt);
    if (skey != mkey) {
      diff.refusals.push_back(fmt::format("table `{}`: the key was `{}`, the module's is `{}`", st.name, skey, mkey));
    }
    for (const FieldSchema& sf : st.fields) {
      auto it = std::find_if(mt.fields.begin(), mt.fields.end(), [&](const FieldSchema& f) { return f.name == sf.name; });
      if (it == mt.fields.end()) {
        diff.refusals.push_back(fmt::format("table `{}`: field `{}` is in the store but not in the module", st.name, sf.name));
      } else if (it->type != sf.type) {
        diff.refusals.push_back(fmt::format("table `{}`: field `{}` was `{}`, the module's is `{}`", st.name, sf.name,
                                            field_type_name(sf.type), field_type_name(it->type)));
      }
    }
    for (const FieldSchema& mf : mt.fields) {
      bool known = std::any_of(st.fields.begin(), st.fields.end(), [&](const FieldSchema& f) { return f.name == mf.name; });
      if (known) continue;
      if (mf.has_default) {
        diff.additions.push_back(fmt::format("table `{}`: new field `{}`", mt.name, mf.name));
      } else {
        diff.refusals.push_back(fmt::format("table `{}`: new field `{}` has no default; stored rows need one "
                                            "(`{}: {} = ...`)",
                                            mt.name, mf.name, mf.name, field_type_name(mf.type)));
      }
    }
  }
  for (const TableSchema& mt : module.tables) {
    if (stored.table_index(mt.name) < 0) diff.additions.push_back(fmt::format("new table `{}`", mt.name));
  }
  for (const VarSchema& sv : stored.vars) {
    int mi = module.var_index(sv.name);
    if (mi < 0) {
      diff.refusals.push_back(fmt::format("var `{}` is in the store but not in the module", sv.name));
    } else if (module.vars[static_cast<size_t>(mi)].type != sv.type) {
      diff.refusals.push_back(fmt::format("var `{}` was `{}`, the module's is `{}`", sv.name, field_type_name(sv.type),
                                          field_type_name(module.vars[static_cast<size_t>(mi)].type)));
    }
  }
  for (const VarSchema& mv : module.vars) {
    if (stored.var_index(mv.name) < 0) diff.additions.push_back(fmt::format("new var `{}`", mv.name));
  }
  // Same names and types but another order of tables, vars or fields is
  // still a change of layout: migrate (rewrite) rather than misread.
  if (diff.refusals.empty() && diff.additions.empty() && !(stored == module)) {
    diff.additions.push_back("the same tables and fields in another order or with other defaults");
  }
  return diff;
}

}  // namespace aup::storage

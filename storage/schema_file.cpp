#include "storage/schema_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "storage/codec.h"

namespace aup::storage {

namespace {
constexpr char kMagic[8] = {'A', 'U', 'P', 'S', 'C', 'H', 'E', 'M'};
constexpr uint32_t kVersion = 1;

void encode_schema(Encoder& e, const Schema& s) {
  e.varint(s.tables.size());
  for (const TableSchema& t : s.tables) {
    e.text(t.name);
    e.text(t.record);
    e.varint(t.fields.size());
    for (const FieldSchema& f : t.fields) {
      e.text(f.name);
      e.u8(static_cast<uint8_t>(f.type));
      e.u8(f.has_default ? 1 : 0);
      if (f.has_default) e.scalar(f.default_value);
    }
    e.varint(t.key_field);
  }
  e.varint(s.vars.size());
  for (const VarSchema& v : s.vars) {
    e.text(v.name);
    e.u8(static_cast<uint8_t>(v.type));
    e.scalar(v.init);
  }
}

bool decode_schema(Decoder& d, Schema& s) {
  uint64_t nt = d.varint();
  if (nt > 65536) return false;
  for (uint64_t i = 0; i < nt && d.ok(); ++i) {
    TableSchema t;
    t.name = std::string(d.text());
    t.record = std::string(d.text());
    uint64_t nf = d.varint();
    if (nf == 0 || nf > 255) return false;
    for (uint64_t j = 0; j < nf && d.ok(); ++j) {
      FieldSchema f;
      f.name = std::string(d.text());
      uint8_t ty = d.u8();
      if (ty < 1 || ty > 3) return false;
      f.type = static_cast<FieldType>(ty);
      f.has_default = d.u8() != 0;
      if (f.has_default) f.default_value = d.scalar();
      t.fields.push_back(std::move(f));
    }
    uint64_t key = d.varint();
    if (key >= t.fields.size()) return false;
    t.key_field = static_cast<uint32_t>(key);
    s.tables.push_back(std::move(t));
  }
  uint64_t nv = d.varint();
  if (nv > 65536) return false;
  for (uint64_t i = 0; i < nv && d.ok(); ++i) {
    VarSchema v;
    v.name = std::string(d.text());
    uint8_t ty = d.u8();
    if (ty < 1 || ty > 3) return false;
    v.type = static_cast<FieldType>(ty);
    v.init = d.scalar();
    s.vars.push_back(std::move(v));
  }
  return d.ok() && d.done();
}

uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}
}  // namespace

Status write_schema_file(Io& io, const std::string& dir, const Schema& s) {
  std::vector<uint8_t> body;
  Encoder b(body);
  encode_schema(b, s);
  std::vector<uint8_t> file;
  Encoder e(file);
  for (char c : kMagic) e.u8(static_cast<uint8_t>(c));
  for (int i = 0; i < 4; ++i) e.u8(static_cast<uint8_t>(kVersion >> (8 * i)));
  for (int i = 0; i < 4; ++i) e.u8(0);
  e.fixed64(body.size());
  file.insert(file.end(), body.begin(), body.end());
  e.fixed64(XXH3_64bits(body.data(), body.size()));
  std::string path = dir + "/schema", tmp = path + ".new";
  int fd = io.open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return Status::error(fmt::format("cannot create {}: {}", tmp, std::strerror(-fd)), -fd);
  size_t done = 0;
  while (done < file.size()) {
    ssize_t w = io.pwrite(fd, file.data() + done, file.size() - done, static_cast<off_t>(done));
    if (w <= 0) {
      io.close(fd);
      int err = w < 0 ? static_cast<int>(-w) : EIO;
      return Status::error(fmt::format("cannot write {}: {}", tmp, std::strerror(err)), err);
    }
    done += static_cast<size_t>(w);
  }
  int rc = io.fsync(fd);
  io.close(fd);
  if (rc < 0) return Status::error(fmt::format("cannot sync {}: {}", tmp, std::strerror(-rc)), -rc);
  io.point("schema.before_rename");
  if (int r = io.rename(tmp, path); r < 0) {
    return Status::error(fmt::format("cannot rename {}: {}", tmp, std::strerror(-r)), -r);
  }
  int dfd = io.open(dir, O_RDONLY | O_DIRECTORY, 0);
  rc = dfd < 0 ? dfd : io.fsync(dfd);
  if (dfd >= 0) io.close(dfd);
  if (rc < 0) return Status::error(fmt::format("cannot sync the directory {}: {}", dir, std::strerror(-rc)), -rc);
  return Status::good();
}

Status read_schema_file(Io& io, const std::string& dir, Schema& s) {
  std::string path = dir + "/schema";
  int fd = io.open(path, O_RDONLY, 0);
  if (fd < 0) return Status::error(fmt::format("cannot open {}: {}", path, std::strerror(-fd)), -fd);
  int64_t size = io.file_size(fd);
  std::vector<uint8_t> bytes(static_cast<size_t>(std::max<int64_t>(size, 0)));
  ssize_t n = size > 0 ? io.pread(fd, bytes.data(), bytes.size(), 0) : 0;
  io.close(fd);
  if (n < 0) {  // an I/O error, not damage: the open exits 2, not 1
    int e = static_cast<int>(-n);
    return Status::error(fmt::format("cannot read {}: {}", path, std::strerror(e)), e);
  }
  if (n != static_cast<ssize_t>(bytes.size())) return Status::error(fmt::format("cannot read {}", path));
  if (bytes.size() < 32) {
    return Status::error(
        fmt::format("{} is damaged: it ends at byte {}, shorter than an empty schema file (32 bytes)", path, size));
  }
  if (std::memcmp(bytes.data(), kMagic, 8) != 0) {
    return Status::error(fmt::format("{} is damaged or not an aup schema file: no schema magic at byte 0", path));
  }
  uint32_t version = bytes[8] | bytes[9] << 8 | bytes[10] << 16 | static_cast<uint32_t>(bytes[11]) << 24;
  if (version != kVersion) {
    return Status::error(fmt::format("{} has schema format {} at byte 8; this aup reads {}", path, version, kVersion));
  }
  // Not covered by the digest: checked, so a damaged or future file is not
  // read as this format.
  if (bytes[12] | bytes[13] | bytes[14] | bytes[15]) {
    return Status::error(fmt::format("{} is damaged: the reserved bytes 12..15 are not zero", path));
  }
  uint64_t len = get64(bytes.data() + 16);
  if (len != bytes.size() - 32) {
    return Status::error(fmt::format("{} is damaged: the length at byte 16 says {} bytes, the file holds {} "
                                     "(it ends at byte {})",
                                     path, len, bytes.size() - 32, bytes.size()));
  }
  const uint8_t* body = bytes.data() + 24;
  if (XXH3_64bits(body, len) != get64(body + len)) {
    return Status::error(fmt::format("{} is damaged: the digest at byte {} does not match bytes 24..{}", path,
                                     24 + len, 24 + len - 1));
  }
  Decoder d(body, len);
  if (!decode_schema(d, s)) {
    return Status::error(fmt::format("{} is damaged: it does not decode (byte {})", path, 24 + d.offset()));
  }
  return Status::good();
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
    const std::string& skey = st.fields[st.key_field].name;
    const std::string& mkey = mt.fields[mt.key_field].name;
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

#include "vm/module_file.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "stdlib/builtins.h"
#include "vm/bytes.h"
#include "vm/key.h"
#include "vm/module_format.h"

namespace aup::vm {

namespace mf = module_format;

namespace {

// ---- the module file's values, over the byte codec (vm/bytes.h) -------------------
//
// string: bytes (a varint length, then the bytes); index: a varint that
// fits 32 bits; constant: a kind byte, then the value (module_format.h).

class ModuleWriter : public bytes::Writer {
 public:
  explicit ModuleWriter(std::vector<uint8_t>& out) : Writer(out) {}
  void str(std::string_view s) { bytes(s); }
  void constant(const Constant& c) {
    switch (c.kind) {
      case Constant::Kind::Num: u8(0); fixed64(std::bit_cast<uint64_t>(c.num)); break;
      case Constant::Kind::Text: u8(1); str(c.text); break;
      case Constant::Kind::Bool: u8(2); u8(c.boolean ? 1 : 0); break;
    }
  }
};

class ModuleReader : public bytes::Reader {
 public:
  explicit ModuleReader(const bytes::Reader& r) : Reader(r) {}
  ModuleReader(const uint8_t* p, size_t n, size_t base) : Reader(p, n, base) {}
  std::string str() { return std::string(bytes()); }
  // A count of items of at least `min_bytes` each; the bytes left bound it
  // (and a module file's size, kMaxFileBytes, bounds them).
  uint32_t count(size_t min_bytes) { return static_cast<uint32_t>(Reader::count(min_bytes)); }
  uint32_t index() {
    size_t at = offset();
    uint64_t n = varint();
    if (n > UINT32_MAX) fail_at(at, fmt::format("index {} out of range", n));
    return static_cast<uint32_t>(n);
  }
  // A one-byte code of at most `last` (a type code, a function kind).
  uint8_t code(uint8_t last, const char* what) {
    size_t at = offset();
    uint8_t c = u8();
    if (c > last) fail_at(at, fmt::format("unknown {} {}", what, c));
    return c;
  }
  Constant constant() {
    Constant c;
    size_t at = offset();
    switch (u8()) {
      case 0: c.num = std::bit_cast<double>(fixed64()); break;
      case 1: c.kind = Constant::Kind::Text; c.text = str(); break;
      case 2: c.kind = Constant::Kind::Bool; c.boolean = u8() != 0; break;
      default: fail_at(at, "unknown constant kind");
    }
    return c;
  }
};

// ---- the sections: each one's encoder beside its decoder ---------------------------
//
// A decoder reads its section's payload only; decode_module checks that it
// read all of it. Reading stops at the first problem (the reader then
// returns zeros), so the loops test ok() and need no other exit.

void encode_source(ModuleWriter& w, const Module& m) { w.str(m.source_name); }
void decode_source(ModuleReader& r, Module& m) { m.source_name = r.str(); }

void encode_types(ModuleWriter& w, const Module& m) {
  w.varint(m.types.size());
  for (const TypeDesc& t : m.types) {
    w.u8(static_cast<uint8_t>(t.code));
    w.varint(t.index);
  }
}
void decode_types(ModuleReader& r, Module& m) {
  uint32_t n = r.count(2);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    auto code = static_cast<TypeCode>(r.code(static_cast<uint8_t>(TypeCode::View), "type code"));
    m.types.push_back(TypeDesc{code, r.index()});
  }
}

void encode_records(ModuleWriter& w, const Module& m) {
  w.varint(m.records.size());
  for (const RecordDesc& rec : m.records) {
    w.str(rec.name);
    w.u8(rec.event_args ? 1 : 0);
    w.varint(rec.fields.size());
    for (const FieldDesc& f : rec.fields) {
      w.str(f.name);
      w.varint(f.type);
      w.u8(f.has_default ? 1 : 0);
      if (f.has_default) w.constant(f.default_value);
    }
  }
}
void decode_records(ModuleReader& r, Module& m) {
  uint32_t n = r.count(3);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    RecordDesc rec;
    rec.name = r.str();
    rec.event_args = r.u8() != 0;
    uint32_t fields = r.count(3);
    for (uint32_t j = 0; j < fields && r.ok(); ++j) {
      FieldDesc f;
      f.name = r.str();
      f.type = r.index();
      f.has_default = r.u8() != 0;
      if (f.has_default) f.default_value = r.constant();
      rec.fields.push_back(std::move(f));
    }
    m.records.push_back(std::move(rec));
  }
}

void encode_shapes(ModuleWriter& w, const Module& m) {
  w.varint(m.shapes.size());
  for (const ShapeDesc& sh : m.shapes) {
    w.varint(sh.names.size());
    for (size_t i = 0; i < sh.names.size(); ++i) {
      w.str(sh.names[i]);
      w.varint(sh.types[i]);
    }
  }
}
void decode_shapes(ModuleReader& r, Module& m) {
  uint32_t n = r.count(1);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    ShapeDesc sh;
    uint32_t fields = r.count(2);
    for (uint32_t j = 0; j < fields && r.ok(); ++j) {
      sh.names.push_back(r.str());
      sh.types.push_back(r.index());
    }
    m.shapes.push_back(std::move(sh));
  }
}

void encode_tables(ModuleWriter& w, const Module& m) {
  w.varint(m.tables.size());
  for (const TableDesc& t : m.tables) {
    w.str(t.name);
    w.varint(t.record);
    w.varint(t.key_fields.size());
    for (uint32_t f : t.key_fields) w.varint(f);
  }
}
void decode_tables(ModuleReader& r, Module& m) {
  uint32_t n = r.count(3);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    TableDesc t;
    t.name = r.str();
    t.record = r.index();
    uint32_t keys = r.count(1);  // how many the verifier checks (1 to kMaxKeyFields)
    for (uint32_t k = 0; k < keys && r.ok(); ++k) t.key_fields.push_back(r.index());
    m.tables.push_back(std::move(t));
  }
}

void encode_vars(ModuleWriter& w, const Module& m) {
  w.varint(m.vars.size());
  for (const VarDesc& v : m.vars) {
    w.str(v.name);
    w.varint(v.type);
    w.constant(v.init);
  }
}
void decode_vars(ModuleReader& r, Module& m) {
  uint32_t n = r.count(3);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    VarDesc v;
    v.name = r.str();
    v.type = r.index();
    v.init = r.constant();
    m.vars.push_back(std::move(v));
  }
}

void encode_events(ModuleWriter& w, const Module& m) {
  w.varint(m.events.size());
  for (const EventDesc& e : m.events) {
    w.str(e.name);
    w.varint(e.record);
    w.varint(e.handler);
  }
}
void decode_events(ModuleReader& r, Module& m) {
  uint32_t n = r.count(3);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    EventDesc e;
    e.name = r.str();
    e.record = r.index();
    e.handler = r.index();
    m.events.push_back(std::move(e));
  }
}

// A function's line table: each entry's pc as the step from the one before
// (small, so one byte), then its line and column.
void encode_lines(ModuleWriter& w, const Function& f) {
  w.varint(f.lines.size());
  uint32_t pc = 0;
  for (const LineEntry& e : f.lines) {
    w.varint(e.pc - pc);
    w.varint(e.line);
    w.varint(e.col);
    pc = e.pc;
  }
}
void decode_lines(ModuleReader& r, Function& f) {
  uint32_t n = r.count(3);
  uint32_t pc = 0;
  for (uint32_t j = 0; j < n && r.ok(); ++j) {
    uint64_t delta = r.varint();
    LineEntry e;
    e.pc = pc + static_cast<uint32_t>(std::min<uint64_t>(delta, UINT32_MAX));
    e.line = r.index();
    e.col = r.index();
    pc = e.pc;
    f.lines.push_back(e);
  }
}

void encode_function(ModuleWriter& w, const Function& f) {
  w.str(f.name);
  w.u8(static_cast<uint8_t>(f.kind));
  w.varint(f.event);
  w.varint(f.param_names.size());
  for (size_t i = 0; i < f.param_names.size(); ++i) {
    w.str(f.param_names[i]);
    w.varint(f.param_types[i]);
  }
  w.varint(f.result_type);
  w.varint(f.frame_size);
  w.varint(f.constants.size());
  for (const Constant& c : f.constants) w.constant(c);
  w.varint(f.code.size());
  for (Instr i : f.code) w.fixed32(i);
  encode_lines(w, f);
}
void decode_function(ModuleReader& r, Function& f) {
  f.name = r.str();
  f.kind = static_cast<FnKind>(r.code(static_cast<uint8_t>(FnKind::Helper), "function kind"));
  f.event = r.index();
  uint32_t params = r.count(2);
  for (uint32_t j = 0; j < params && r.ok(); ++j) {
    f.param_names.push_back(r.str());
    f.param_types.push_back(r.index());
  }
  f.result_type = r.index();
  f.frame_size = r.index();
  uint32_t nk = r.count(2);
  for (uint32_t j = 0; j < nk && r.ok(); ++j) f.constants.push_back(r.constant());
  uint32_t ncode = r.count(4);
  f.code.reserve(ncode);
  for (uint32_t j = 0; j < ncode && r.ok(); ++j) f.code.push_back(r.fixed32());
  decode_lines(r, f);
}

void encode_functions(ModuleWriter& w, const Module& m) {
  w.varint(m.functions.size());
  for (const Function& f : m.functions) encode_function(w, f);
}
void decode_functions(ModuleReader& r, Module& m) {
  uint32_t n = r.count(8);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    Function f;
    decode_function(r, f);
    m.functions.push_back(std::move(f));
  }
}

void encode_indexes(ModuleWriter& w, const Module& m) {
  w.varint(m.indexes.size());
  for (const IndexDesc& x : m.indexes) {
    w.str(x.name);
    w.varint(x.table);
    w.u8(x.unique ? 1 : 0);
    w.varint(x.fields.size());
    for (uint32_t f : x.fields) w.varint(f);
  }
}
void decode_indexes(ModuleReader& r, Module& m) {
  uint32_t n = r.count(4);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    IndexDesc x;
    x.name = r.str();
    x.table = r.index();
    uint8_t unique = r.u8();
    if (r.ok() && unique > 1) r.fail(fmt::format("index `{}`: unique flag {} (0 or 1)", x.name, unique));
    x.unique = unique == 1;
    uint32_t fields = r.count(1);  // how many the verifier checks (1 to kMaxKeyFields)
    for (uint32_t k = 0; k < fields && r.ok(); ++k) x.fields.push_back(r.index());
    m.indexes.push_back(std::move(x));
  }
}

// The body's sections in the order they are written and must be read
// (module_format.h's tags, ascending). Adding a section is one line here,
// its tag and its two functions.
struct Section {
  mf::Tag tag;
  const char* name;
  void (*encode)(ModuleWriter&, const Module&);
  void (*decode)(ModuleReader&, Module&);
};
constexpr Section kSections[] = {
    {mf::kSource, "SOURCE", encode_source, decode_source},
    {mf::kTypes, "TYPES", encode_types, decode_types},
    {mf::kRecords, "RECORDS", encode_records, decode_records},
    {mf::kShapes, "SHAPES", encode_shapes, decode_shapes},
    {mf::kTables, "TABLES", encode_tables, decode_tables},
    {mf::kVars, "VARS", encode_vars, decode_vars},
    {mf::kEvents, "EVENTS", encode_events, decode_events},
    {mf::kFunctions, "FUNCTIONS", encode_functions, decode_functions},
    {mf::kIndexes, "INDEXES", encode_indexes, decode_indexes},
};
constexpr bool tags_ascend_from_one() {
  for (size_t i = 0; i < std::size(kSections); ++i) {
    if (kSections[i].tag != i + 1) return false;
  }
  return true;
}
static_assert(tags_ascend_from_one(), "module sections are listed by tag, 1, 2, 3, ...");

// The name of a tag, for messages ("section 9" when it is no section).
std::string section_name(uint8_t tag) {
  if (tag >= 1 && tag <= std::size(kSections)) return fmt::format("{} ({})", tag, kSections[tag - 1].name);
  return std::to_string(tag);
}

// The next section's payload, which must be `want`'s.
ModuleReader next_section(ModuleReader& file, const Section& want) {
  size_t at = file.offset();
  uint8_t tag = file.u8();
  if (file.ok() && tag != want.tag) {
    file.fail_at(at, fmt::format("expected section {}, found {}", section_name(want.tag), section_name(tag)));
  }
  at = file.offset();
  uint64_t n = file.varint();
  if (file.ok() && n > file.left()) file.fail_at(at, "section longer than the file");
  if (!file.ok()) return ModuleReader(file.position(), 0, file.offset());
  return ModuleReader(file.sub(n));
}

// The 24-byte header (module_format.h) against the file and its body's
// checksum: an empty string, or what is wrong.
std::string check_header(std::span<const uint8_t> bytes) {
  // The magic first: a text file of 8 bytes is no module, not a short one
  // (an empty file is a short one).
  if (!bytes.empty() && std::memcmp(bytes.data(), mf::kMagic, std::min(bytes.size(), sizeof mf::kMagic)) != 0) {
    return fmt::format("{} (the file does not start with AUPM)", kNotAModule);
  }
  if (bytes.size() < mf::kHeaderBytes) {
    return fmt::format("truncated: {} bytes, shorter than the {}-byte header", bytes.size(), mf::kHeaderBytes);
  }
  const uint8_t* h = bytes.data();
  uint16_t version = bytes::get_u16(h + 4);
  if (version > mf::kVersion) {
    return fmt::format("built by a newer aup: module format {}, this aup reads format {} (rebuild it with `aup build`)",
                       version, mf::kVersion);
  }
  if (version == 0) return "damaged: module format 0 does not exist";
  // Each format is one instruction set and one layout (module_format.h's
  // history): an older module's opcodes would mean other instructions.
  if (version < mf::kOldestReadVersion) {
    return fmt::format("built by an older aup: module format {}, this aup reads format {} (rebuild it from its "
                       ".aup source with this aup's `aup build`)",
                       version, mf::kVersion);
  }
  if (bytes::get_u16(h + 6) != 0) return "damaged: unknown flags in the header";
  uint64_t length = bytes::get_u64(h + 8);
  uint64_t have = bytes.size() - mf::kHeaderBytes;
  if (length > have) return fmt::format("truncated: the header promises {} bytes of body, the file has {}", length, have);
  if (length < have) {
    return fmt::format("damaged: {} {} the {}-byte body", have - length, have - length == 1 ? "byte follows" : "bytes follow",
                       length);
  }
  if (XXH3_64bits(h + mf::kHeaderBytes, length) != bytes::get_u64(h + 16)) {
    return "damaged: the checksum does not match the contents";
  }
  return {};
}

}  // namespace

// ---- encode and decode: the header, then the sections in order ----------------------

std::vector<uint8_t> encode_module(const Module& m) {
  std::vector<uint8_t> body, payload;
  ModuleWriter b(body);
  for (const Section& s : kSections) {
    payload.clear();
    ModuleWriter p(payload);
    s.encode(p, m);
    b.u8(s.tag);
    b.varint(payload.size());
    b.raw(payload.data(), payload.size());
  }
  std::vector<uint8_t> out;
  out.reserve(mf::kHeaderBytes + body.size());
  bytes::Writer w(out);
  w.raw(reinterpret_cast<const uint8_t*>(mf::kMagic), sizeof mf::kMagic);
  w.fixed16(mf::kVersion);
  w.fixed16(0);  // flags
  w.fixed64(body.size());
  w.fixed64(XXH3_64bits(body.data(), body.size()));
  w.raw(body.data(), body.size());
  return out;
}

bool decode_module(std::span<const uint8_t> bytes, Module& m, std::string& error) {
  error = check_header(bytes);
  if (!error.empty()) return false;
  ModuleReader file(bytes.data() + mf::kHeaderBytes, bytes.size() - mf::kHeaderBytes, mf::kHeaderBytes);
  uint16_t version = bytes::get_u16(bytes.data() + 4);
  for (const Section& s : kSections) {
    if (s.tag == mf::kIndexes && version < 3) break;  // format 2: no indexes
    ModuleReader r = next_section(file, s);
    if (!file.ok()) break;
    s.decode(r, m);
    if (r.ok() && !r.done()) r.fail(fmt::format("unread bytes in section {}", section_name(s.tag)));
    file.adopt(r);
  }
  if (file.ok() && !file.done()) file.fail("unknown bytes after the last section");
  if (!file.ok()) {
    error = "damaged: " + file.error();
    return false;
  }
  if (!verify_module(m, error)) {
    error = "damaged: " + error;
    return false;
  }
  return true;
}

// ---- verify -----------------------------------------------------------------------

namespace {

class Verifier {
 public:
  explicit Verifier(const Module& m) : m_(m) {}
  bool run(std::string& error);

 private:
  bool bad(std::string what) {
    if (error_.empty()) error_ = std::move(what);
    return false;
  }
  bool type(uint32_t t, std::string_view where) {
    if (t >= m_.types.size()) return bad(fmt::format("{}: type {} out of range", where, t));
    return true;
  }
  bool scalar(uint32_t t) const { return t == kTypeNum || t == kTypeText || t == kTypeBool; }
  void types();
  void records_and_shapes();
  void tables();
  void table_key(const TableDesc& t, const RecordDesc& r);
  void indexes();
  void vars_and_events();
  bool function(const Function& f, uint32_t index);
  bool instruction(const Function& f, uint32_t pc);
  bool call(const Function& f, uint32_t pc, Instr i);
  bool key_instruction(const Function& f, uint32_t pc, Instr i);
  bool index_instruction(const Function& f, uint32_t pc, Instr i);
  bool sort_instruction(const Function& f, uint32_t pc, Instr i);
  bool jump_ok(const Function& f, uint32_t pc, Instr i);

  const Module& m_;
  std::string error_;
};

bool Verifier::run(std::string& error) {
  types();
  records_and_shapes();
  tables();
  indexes();
  vars_and_events();
  for (uint32_t i = 0; i < m_.functions.size() && error_.empty(); ++i) function(m_.functions[i], i);
  error = error_;
  return error_.empty();
}

// The built-in types first; every type's index in range, and array items
// and object fields before the type that holds them.
void Verifier::types() {
  const Module& m = m_;
  if (m.types.size() < 4 || m.types[kTypeVoid].code != TypeCode::Void ||
      m.types[kTypeNum].code != TypeCode::Num || m.types[kTypeText].code != TypeCode::Text ||
      m.types[kTypeBool].code != TypeCode::Bool) {
    bad("the first types are not void, num, text, bool");
  }
  for (uint32_t i = 0; i < m.types.size() && error_.empty(); ++i) {
    const TypeDesc& t = m.types[i];
    switch (t.code) {
      case TypeCode::Record:
        if (t.index >= m.records.size()) bad(fmt::format("type {}: record out of range", i));
        break;
      case TypeCode::Row:
      case TypeCode::View:
        if (t.index >= m.tables.size()) bad(fmt::format("type {}: table out of range", i));
        break;
      case TypeCode::Array:
        // Items come first: this also rules out cycles.
        if (t.index >= i) bad(fmt::format("type {}: item type {} not before it", i, t.index));
        break;
      case TypeCode::Object:
        if (t.index >= m.shapes.size()) {
          bad(fmt::format("type {}: shape out of range", i));
          break;
        }
        // Field types come first too (the compiler adds them before the
        // object): an object can then never hold itself.
        for (uint32_t f : m.shapes[t.index].types) {
          if (f >= i) {
            bad(fmt::format("type {}: field type {} not before it", i, f));
            break;
          }
        }
        break;
      default: break;
    }
  }
}

void Verifier::records_and_shapes() {
  const Module& m = m_;
  for (const RecordDesc& r : m.records) {
    if (r.fields.size() > 255) bad(fmt::format("record `{}` has more than 255 fields", r.name));
    for (const FieldDesc& f : r.fields) type(f.type, fmt::format("record `{}`", r.name));
  }
  for (const ShapeDesc& s : m.shapes) {
    if (s.names.size() > 255) bad("an object shape has more than 255 fields");
    for (uint32_t t : s.types) type(t, "object shape");
  }
}

// A table holds rows of num, text and bool, keyed by num or text.
void Verifier::tables() {
  const Module& m = m_;
  for (const TableDesc& t : m.tables) {
    if (t.record >= m.records.size()) {
      bad(fmt::format("table `{}`: record out of range", t.name));
      continue;
    }
    const RecordDesc& r = m.records[t.record];
    for (const FieldDesc& f : r.fields) {
      if (!scalar(f.type)) bad(fmt::format("table `{}`: field `{}` is not num, text or bool", t.name, f.name));
    }
    table_key(t, r);
  }
}

// A table's key: 1 to kMaxKeyFields fields of its record (vm/key.h), each
// num or text, none twice (the order-preserving encoding and the engines'
// KEY instruction take at most that many, and a field twice would be a
// component that never varies).
void Verifier::table_key(const TableDesc& t, const RecordDesc& r) {
  if (t.key_fields.empty() || t.key_fields.size() > kMaxKeyFields) {
    bad(fmt::format("table `{}`: a key of {} fields (1 to {})", t.name, t.key_fields.size(), kMaxKeyFields));
    return;
  }
  for (size_t i = 0; i < t.key_fields.size(); ++i) {
    uint32_t f = t.key_fields[i];
    if (f >= r.fields.size()) {
      bad(fmt::format("table `{}`: key field {} (component {} of the key) out of range", t.name, f, i + 1));
      return;
    }
    uint32_t kt = r.fields[f].type;
    if (kt != kTypeNum && kt != kTypeText) {
      bad(fmt::format("table `{}`: key field `{}` is not num or text", t.name, r.fields[f].name));
    }
    for (size_t j = 0; j < i; ++j) {
      if (t.key_fields[j] == f) bad(fmt::format("table `{}`: key field `{}` is in the key twice", t.name, r.fields[f].name));
    }
  }
}

// An index: of a table, 1 to kMaxKeyFields num or text fields of its
// record, none twice, its name unique among the indexes (as a table's
// key, and for the same reasons).
void Verifier::indexes() {
  const Module& m = m_;
  for (size_t i = 0; i < m.indexes.size(); ++i) {
    const IndexDesc& x = m.indexes[i];
    if (x.table >= m.tables.size() || m.tables[x.table].record >= m.records.size()) {
      bad(fmt::format("index `{}`: table out of range", x.name));
      continue;
    }
    for (size_t j = 0; j < i; ++j) {
      if (m.indexes[j].name == x.name && m.indexes[j].table == x.table) bad(fmt::format("index `{}` declared twice", x.name));
    }
    const RecordDesc& r = m.records[m.tables[x.table].record];
    if (x.fields.empty() || x.fields.size() > kMaxKeyFields) {
      bad(fmt::format("index `{}`: {} fields (1 to {})", x.name, x.fields.size(), kMaxKeyFields));
      continue;
    }
    for (size_t k = 0; k < x.fields.size(); ++k) {
      uint32_t f = x.fields[k];
      if (f >= r.fields.size()) {
        bad(fmt::format("index `{}`: field {} out of range", x.name, f));
        break;
      }
      if (r.fields[f].type != kTypeNum && r.fields[f].type != kTypeText) {
        bad(fmt::format("index `{}`: field `{}` is not num or text", x.name, r.fields[f].name));
      }
      for (size_t j = 0; j < k; ++j) {
        if (x.fields[j] == f) bad(fmt::format("index `{}`: field `{}` twice", x.name, r.fields[f].name));
      }
    }
  }
}

void Verifier::vars_and_events() {
  const Module& m = m_;
  for (const VarDesc& v : m.vars) {
    if (!scalar(v.type)) bad(fmt::format("var `{}` is not num, text or bool", v.name));
    Constant::Kind want = v.type == kTypeText ? Constant::Kind::Text
                          : v.type == kTypeBool ? Constant::Kind::Bool
                                                : Constant::Kind::Num;
    if (v.init.kind != want) bad(fmt::format("var `{}`: initial value of the wrong kind", v.name));
  }
  for (const EventDesc& e : m.events) {
    if (e.record >= m.records.size() || !m.records[e.record].event_args) {
      bad(fmt::format("event `{}`: argument record out of range", e.name));
    }
    if (e.handler >= m.functions.size() || m.functions[e.handler].kind != FnKind::Handler) {
      bad(fmt::format("event `{}`: handler out of range", e.name));
    }
  }
}

bool Verifier::function(const Function& f, uint32_t index) {
  std::string where = fmt::format("function {} (`{}`)", index, f.name);
  if (f.frame_size == 0 || f.frame_size > kMaxRegisters) return bad(where + ": bad frame size");
  if (f.param_names.size() > f.frame_size) return bad(where + ": more parameters than registers");
  if (f.kind == FnKind::Handler && f.event >= m_.events.size()) return bad(where + ": event out of range");
  for (uint32_t t : f.param_types) {
    if (!type(t, where)) return false;
  }
  if (!type(f.result_type, where)) return false;
  if (f.code.empty()) return bad(where + ": no code");
  if (f.constants.size() > kMaxBx + 1) return bad(where + ": too many constants");
  // The last instruction must leave the function, so execution cannot run
  // past the end.
  Op last = op_of(f.code.back());
  if (last != Op::RET && last != Op::RET0 && last != Op::JMP && last != Op::FAIL) {
    return bad(where + ": code does not end in a return or jump");
  }
  for (uint32_t pc = 0; pc < f.code.size(); ++pc) {
    if (!instruction(f, pc)) return false;
  }
  uint32_t prev = 0;
  for (const LineEntry& e : f.lines) {
    if (e.pc < prev || e.pc >= f.code.size()) return bad(where + ": line table out of order");
    prev = e.pc;
  }
  return true;
}

// Every operand in range for its meaning (registers within the frame,
// jumps within the code, indices within their tables).
bool Verifier::instruction(const Function& f, uint32_t pc) {
  Instr i = f.code[pc];
  if ((i & 0xFF) >= kOpCount) return bad(fmt::format("`{}` pc {}: unknown opcode {}", f.name, pc, i & 0xFF));
  Op op = op_of(i);
  uint32_t a = a_of(i), b = b_of(i), c = c_of(i), bx = bx_of(i);
  auto where = [&] { return fmt::format("`{}` pc {} ({})", f.name, pc, op_name(op)); };
  auto reg = [&](uint32_t r) { return r < f.frame_size || bad(where() + ": register out of the frame"); };
  auto below = [&](uint32_t x, size_t n, std::string_view what) {
    return x < n || bad(fmt::format("{}: {} out of range", where(), what));
  };
  auto jump = [&] { return jump_ok(f, pc, i); };
  switch (op) {
    case Op::RET0: return true;
    case Op::JMP: return jump();
    case Op::JT:
    case Op::JF: return reg(a) && jump();
    case Op::NEXT: return reg(a) && reg(a + 1) && jump();
    case Op::RNEXT: return reg(a) && reg(a + 2) && jump();
    case Op::LOADK: return reg(a) && below(bx, f.constants.size(), "constant");
    case Op::LOADI:
    case Op::LOADB:
    case Op::NEWARR:
    case Op::SHARE:
    case Op::UNSHARE:
    case Op::NOW:
    case Op::RET:
    case Op::FAIL: return reg(a);
    case Op::CALL:
    case Op::CALLB: return call(f, pc, i);
    case Op::GETV:
    case Op::SETV: return reg(a) && below(bx, m_.vars.size(), "var");
    case Op::TGET:
    case Op::TFIND:
    case Op::THAS:
    case Op::TADD:
    case Op::TPUT:
    case Op::TDEL:
    case Op::TAT:
    case Op::TCOUNT:
    case Op::TFIRST:
    case Op::TLAST:
    case Op::TITER:
    case Op::TITERD: return reg(a) && below(bx, m_.tables.size(), "table");
    case Op::TVIEW: return reg(a) && reg(a + 1) && below(bx, m_.tables.size(), "table");
    case Op::IALL:
    case Op::IVIEW:
    case Op::IGET:
    case Op::IFIND: return index_instruction(f, pc, i);
    case Op::SORT: return sort_instruction(f, pc, i);
    case Op::KEY:
    case Op::KEYPFX: return key_instruction(f, pc, i);
    case Op::NEWREC: return reg(a) && below(bx, m_.records.size(), "record");
    case Op::NEWOBJ: return reg(a) && below(bx, m_.shapes.size(), "shape");
    case Op::RGET:
    case Op::GETF: return reg(a) && reg(b);
    case Op::RSET:
    case Op::SETF: return reg(a) && reg(c);
    case Op::DISTINCT: return reg(a) && reg(b) && below(c, 4, "item kind");
    case Op::MOVE:
    case Op::NEG:
    case Op::NOT:
    case Op::ROWVAL:
    case Op::VCOUNT:
    case Op::VFIRST:
    case Op::VLAST:
    case Op::VEMPTY:
    case Op::VITER:
    case Op::VITERD:
    case Op::VARR:
    case Op::APUSH:
    case Op::APOP:
    case Op::ALEN:
    case Op::AITER: return reg(a) && reg(b);
    default:  // three registers
      return reg(a) && reg(b) && reg(c);
  }
}

bool Verifier::jump_ok(const Function& f, uint32_t pc, Instr i) {
  int64_t target = int64_t{pc} + 1 + sbx_of(i);
  if (target >= 0 && target < static_cast<int64_t>(f.code.size())) return true;
  return bad(fmt::format("`{}` pc {} ({}): jump out of the code", f.name, pc, op_name(op_of(i))));
}

// IALL, IVIEW and IGET: an index in range (IVIEW, IGET: bounds in R[A],
// R[A+1]); IGET's unique, since it answers one row.
bool Verifier::index_instruction(const Function& f, uint32_t pc, Instr i) {
  Op op = op_of(i);
  uint32_t a = a_of(i), bx = bx_of(i);
  auto where = [&] { return fmt::format("`{}` pc {} ({})", f.name, pc, op_name(op)); };
  if (a >= f.frame_size || (op != Op::IALL && a + 1 >= f.frame_size)) return bad(where() + ": register out of the frame");
  if (bx >= m_.indexes.size()) return bad(where() + ": index out of range");
  return (op != Op::IGET && op != Op::IFIND) || m_.indexes[bx].unique || bad(where() + ": index is not unique");
}

// SORT: its keys a text constant of (field, kind and direction) pairs.
bool Verifier::sort_instruction(const Function& f, uint32_t pc, Instr i) {
  uint32_t a = a_of(i), bx = bx_of(i);
  auto where = [&] { return fmt::format("`{}` pc {} (SORT)", f.name, pc); };
  if (a >= f.frame_size) return bad(where() + ": register out of the frame");
  if (bx >= f.constants.size() || f.constants[bx].kind != Constant::Kind::Text) {
    return bad(where() + ": keys are not a text constant");
  }
  const std::string& keys = f.constants[bx].text;
  if (keys.empty() || keys.size() % 2 != 0 || keys.size() > 2 * size_t{kSortItself}) return bad(where() + ": malformed keys");
  for (size_t k = 0; k < keys.size(); k += 2) {
    auto flags = static_cast<uint8_t>(keys[k + 1]);
    if ((flags & ~(kSortKindMask | kSortDescending)) != 0 || (flags & kSortKindMask) > 2) {
      return bad(where() + ": malformed keys");
    }
  }
  return true;
}

// KEY and KEYPFX: C key components R[A..A+C-1] (KEYPFX writes R[A+1]
// too), B a text mask over them; vm/key.h's encoding takes 1 to
// kMaxKeyFields.
bool Verifier::key_instruction(const Function& f, uint32_t pc, Instr i) {
  Op op = op_of(i);
  uint32_t a = a_of(i), b = b_of(i), c = c_of(i);
  auto where = [&] { return fmt::format("`{}` pc {} ({})", f.name, pc, op_name(op)); };
  auto reg = [&](uint32_t r) { return r < f.frame_size || bad(where() + ": register out of the frame"); };
  if (c < 1 || c > kMaxKeyFields) return bad(fmt::format("{}: {} key components (1 to {})", where(), c, kMaxKeyFields));
  if (b >= (1u << c)) return bad(fmt::format("{}: text mask {:#x} beyond {} components", where(), b, c));
  return reg(a) && reg(a + c - 1) && (op == Op::KEY || reg(a + 1));
}

// A call's callee in range, and its arguments (registers a, a+1, ...)
// inside the frame: a function's parameters, a built-in's argument count.
bool Verifier::call(const Function& f, uint32_t pc, Instr i) {
  Op op = op_of(i);
  uint32_t a = a_of(i), b = b_of(i), c = c_of(i), bx = bx_of(i);
  auto where = [&] { return fmt::format("`{}` pc {} ({})", f.name, pc, op_name(op)); };
  auto reg = [&](uint32_t r) { return r < f.frame_size || bad(where() + ": register out of the frame"); };
  if (op == Op::CALL) {
    if (bx >= m_.functions.size()) return bad(where() + ": function out of range");
    const Function& callee = m_.functions[bx];
    if (callee.kind == FnKind::Handler) return bad(where() + ": calls a handler");
    return reg(a) && reg(a + std::max<uint32_t>(static_cast<uint32_t>(callee.param_names.size()), 1) - 1);
  }
  if (b >= stdlib::builtins().size()) return bad(where() + ": built-in out of range");
  const stdlib::Builtin& bi = stdlib::builtins()[b];
  if (!bi.impl) return bad(where() + ": built-in without an implementation");
  if (c < bi.values(bi.min_args) || (bi.max_args != stdlib::kVariadic && c > bi.values(bi.max_args))) {
    return bad(where() + ": wrong argument count");
  }
  return reg(a) && (c == 0 || reg(a + c - 1));
}

}  // namespace

bool verify_module(const Module& m, std::string& error) {
  Verifier v(m);
  return v.run(error);
}

// ---- files ------------------------------------------------------------------------

bool write_module_file(const std::string& path, const Module& m, std::string& error) {
  std::vector<uint8_t> bytes = encode_module(m);
  std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    int e = errno;
    size_t slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    error = e == ENOENT ? fmt::format("cannot write {}: the directory {} does not exist", path, dir)
                        : fmt::format("cannot write {}: {}", path, std::strerror(e));
    return false;
  }
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = (std::fflush(f) == 0) && ok;
  int saved = errno;
  std::fclose(f);
  if (!ok) {
    error = fmt::format("cannot write {}: {}", path, std::strerror(saved));
    std::remove(tmp.c_str());
    return false;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = fmt::format("cannot write {}: {}", path, std::strerror(errno));
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

bool read_module_file(const std::string& path, Module& out, std::string& error) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = fmt::format("cannot open {}: {}", path, std::strerror(errno));
    return false;
  }
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  bool ok = true;
  for (;;) {
    size_t n = std::fread(buf, 1, sizeof buf, f);
    bytes.insert(bytes.end(), buf, buf + n);
    if (bytes.size() > mf::kMaxFileBytes) {
      error = fmt::format("{} is larger than {} MiB, the limit for a module", path, mf::kMaxFileBytes >> 20);
      ok = false;
      break;
    }
    if (n < sizeof buf) {
      if (std::ferror(f)) {
        error = fmt::format("cannot read {}: {}", path, std::strerror(errno));
        ok = false;
      }
      break;
    }
  }
  std::fclose(f);
  if (!ok) return false;
  if (!decode_module(bytes, out, error)) {
    error = fmt::format("{}: {}", path, error);
    return false;
  }
  return true;
}

}  // namespace aup::vm

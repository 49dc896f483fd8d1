#include "vm/module_file.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "stdlib/builtins.h"
#include "vm/module_format.h"

namespace aup::vm {

namespace mf = module_format;

namespace {

// ---- writing -----------------------------------------------------------------

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<uint8_t>(v));
  }
  void fixed(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void str(std::string_view s) {
    varint(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void constant(const Constant& c) {
    switch (c.kind) {
      case Constant::Kind::Num: u8(0); fixed(std::bit_cast<uint64_t>(c.num), 8); break;
      case Constant::Kind::Text: u8(1); str(c.text); break;
      case Constant::Kind::Bool: u8(2); u8(c.boolean ? 1 : 0); break;
    }
  }
  // A section: tag, then its payload's length, then the payload.
  void section(uint8_t tag, const Writer& payload) {
    u8(tag);
    varint(payload.out_.size());
    out_.insert(out_.end(), payload.out_.begin(), payload.out_.end());
  }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

// ---- reading -------------------------------------------------------------------

// Bounds-checked reads. The first problem is kept (with the byte offset
// in the file); later reads return zeros, so parsing code stays linear.
class Reader {
 public:
  Reader(const uint8_t* p, const uint8_t* end, size_t base) : begin_(p), p_(p), end_(end), base_(base) {}

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  size_t offset() const { return base_ + static_cast<size_t>(p_ - begin_); }
  bool at_end() const { return p_ == end_; }
  void bad(std::string what) {
    if (error_.empty()) error_ = fmt::format("{} at byte {}", what, offset());
    p_ = end_;
  }

  uint8_t u8() {
    if (p_ >= end_) {
      bad("truncated");
      return 0;
    }
    return *p_++;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      uint8_t b = u8();
      if (!ok()) return 0;
      if (shift == 63 && b > 1) break;
      v |= uint64_t{b & 0x7Fu} << shift;
      if (!(b & 0x80)) return v;
    }
    bad("malformed varint");
    return 0;
  }
  // A count of items each taking at least `min_bytes`: bounded by the bytes
  // left, so a damaged count cannot make us reserve gigabytes.
  uint32_t count(size_t min_bytes) {
    uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_) / std::max<size_t>(min_bytes, 1)) {
      bad(fmt::format("count {} larger than the bytes left", n));
      return 0;
    }
    return static_cast<uint32_t>(n);
  }
  uint32_t index() {
    uint64_t n = varint();
    if (n > UINT32_MAX) bad("index out of range");
    return static_cast<uint32_t>(n);
  }
  uint64_t fixed(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t{u8()} << (8 * i);
    return v;
  }
  std::string str() {
    uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_)) {
      bad("string longer than the bytes left");
      return {};
    }
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  Constant constant() {
    Constant c;
    switch (u8()) {
      case 0: c.num = std::bit_cast<double>(fixed(8)); break;
      case 1: c.kind = Constant::Kind::Text; c.text = str(); break;
      case 2: c.kind = Constant::Kind::Bool; c.boolean = u8() != 0; break;
      default: bad("unknown constant kind");
    }
    return c;
  }
  // The payload of the next section, which must have tag `want`.
  Reader section(uint8_t want) {
    uint8_t tag = u8();
    if (ok() && tag != want) bad(fmt::format("expected section {}, found {}", want, tag));
    uint64_t n = varint();
    if (ok() && n > static_cast<uint64_t>(end_ - p_)) bad("section longer than the file");
    if (!ok()) return Reader(p_, p_, offset());
    Reader r(p_, p_ + n, offset());
    p_ += n;
    return r;
  }
  // Carries a section's problem up to the file's reader.
  void take(const Reader& inner) {
    if (!inner.ok() && ok()) error_ = inner.error_;
    if (inner.ok() && !inner.at_end() && ok()) error_ = fmt::format("unread bytes at byte {}", inner.offset());
  }

 private:
  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
  size_t base_;
  std::string error_;
};

void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

}  // namespace

// ---- encode ---------------------------------------------------------------------

std::vector<uint8_t> encode_module(const Module& m) {
  Writer body;
  {
    Writer s;
    s.str(m.source_name);
    body.section(mf::kSource, s);
  }
  {
    Writer s;
    s.varint(m.types.size());
    for (const TypeDesc& t : m.types) {
      s.u8(static_cast<uint8_t>(t.code));
      s.varint(t.index);
    }
    body.section(mf::kTypes, s);
  }
  {
    Writer s;
    s.varint(m.records.size());
    for (const RecordDesc& r : m.records) {
      s.str(r.name);
      s.u8(r.event_args ? 1 : 0);
      s.varint(r.fields.size());
      for (const FieldDesc& f : r.fields) {
        s.str(f.name);
        s.varint(f.type);
        s.u8(f.has_default ? 1 : 0);
        if (f.has_default) s.constant(f.default_value);
      }
    }
    body.section(mf::kRecords, s);
  }
  {
    Writer s;
    s.varint(m.shapes.size());
    for (const ShapeDesc& sh : m.shapes) {
      s.varint(sh.names.size());
      for (size_t i = 0; i < sh.names.size(); ++i) {
        s.str(sh.names[i]);
        s.varint(sh.types[i]);
      }
    }
    body.section(mf::kShapes, s);
  }
  {
    Writer s;
    s.varint(m.tables.size());
    for (const TableDesc& t : m.tables) {
      s.str(t.name);
      s.varint(t.record);
      s.varint(t.key_field);
    }
    body.section(mf::kTables, s);
  }
  {
    Writer s;
    s.varint(m.vars.size());
    for (const VarDesc& v : m.vars) {
      s.str(v.name);
      s.varint(v.type);
      s.constant(v.init);
    }
    body.section(mf::kVars, s);
  }
  {
    Writer s;
    s.varint(m.events.size());
    for (const EventDesc& e : m.events) {
      s.str(e.name);
      s.varint(e.record);
      s.varint(e.handler);
    }
    body.section(mf::kEvents, s);
  }
  {
    Writer s;
    s.varint(m.functions.size());
    for (const Function& f : m.functions) {
      s.str(f.name);
      s.u8(static_cast<uint8_t>(f.kind));
      s.varint(f.event);
      s.varint(f.param_names.size());
      for (size_t i = 0; i < f.param_names.size(); ++i) {
        s.str(f.param_names[i]);
        s.varint(f.param_types[i]);
      }
      s.varint(f.result_type);
      s.varint(f.frame_size);
      s.varint(f.constants.size());
      for (const Constant& c : f.constants) s.constant(c);
      s.varint(f.code.size());
      for (Instr i : f.code) s.fixed(i, 4);
      s.varint(f.lines.size());
      uint32_t pc = 0;
      for (const LineEntry& e : f.lines) {
        s.varint(e.pc - pc);
        s.varint(e.line);
        s.varint(e.col);
        pc = e.pc;
      }
    }
    body.section(mf::kFunctions, s);
  }
  std::vector<uint8_t> out(mf::kHeaderBytes);
  std::memcpy(out.data(), mf::kMagic, 4);
  out[4] = static_cast<uint8_t>(mf::kVersion);
  out[5] = static_cast<uint8_t>(mf::kVersion >> 8);
  out[6] = out[7] = 0;
  put_u64(out.data() + 8, body.bytes().size());
  put_u64(out.data() + 16, XXH3_64bits(body.bytes().data(), body.bytes().size()));
  out.insert(out.end(), body.bytes().begin(), body.bytes().end());
  return out;
}

// ---- decode ---------------------------------------------------------------------

bool decode_module(std::span<const uint8_t> bytes, Module& m, std::string& error) {
  if (bytes.size() < mf::kHeaderBytes) {
    error = fmt::format("truncated: {} bytes, shorter than the {}-byte header", bytes.size(),
                        mf::kHeaderBytes);
    return false;
  }
  if (std::memcmp(bytes.data(), mf::kMagic, 4) != 0) {
    error = "not an aup module (the file does not start with AUPM)";
    return false;
  }
  uint16_t version = static_cast<uint16_t>(bytes[4] | bytes[5] << 8);
  if (version > mf::kVersion) {
    error = fmt::format("built by a newer aup: module format {}, this aup reads format {} (rebuild it "
                        "with `aup build`)",
                        version, mf::kVersion);
    return false;
  }
  if (version == 0) {
    error = "damaged: module format 0 does not exist";
    return false;
  }
  if (bytes[6] != 0 || bytes[7] != 0) {
    error = "damaged: unknown flags in the header";
    return false;
  }
  uint64_t length = get_u64(bytes.data() + 8);
  uint64_t have = bytes.size() - mf::kHeaderBytes;
  if (length != have) {
    error = length > have ? fmt::format("truncated: the header promises {} bytes of body, the file has {}",
                                        length, have)
                          : fmt::format("damaged: {} bytes follow the {}-byte body", have - length, length);
    return false;
  }
  const uint8_t* body = bytes.data() + mf::kHeaderBytes;
  if (XXH3_64bits(body, length) != get_u64(bytes.data() + 16)) {
    error = "damaged: the checksum does not match the contents";
    return false;
  }

  Reader file(body, body + length, mf::kHeaderBytes);
  {
    Reader s = file.section(mf::kSource);
    m.source_name = s.str();
    file.take(s);
  }
  {
    Reader s = file.section(mf::kTypes);
    uint32_t n = s.count(2);
    for (uint32_t i = 0; i < n && s.ok(); ++i) {
      uint8_t code = s.u8();
      uint32_t index = s.index();
      if (code > static_cast<uint8_t>(TypeCode::View)) s.bad("unknown type code");
      m.types.push_back(TypeDesc{static_cast<TypeCode>(code), index});
    }
    file.take(s);
  }
  {
    Reader s = file.section(mf::kRecords);
    uint32_t n = s.count(3);
    for (uint32_t i = 0; i < n && s.ok(); ++i) {
      RecordDesc r;
      r.name = s.str();
      r.event_args = s.u8() != 0;
      uint32_t fields = s.count(3);
      for (uint32_t j = 0; j < fields && s.ok(); ++j) {
        FieldDesc f;
        f.name = s.str();
        f.type = s.index();
        f.has_default = s.u8() != 0;
        if (f.has_default) f.default_value = s.constant();
        r.fields.push_back(std::move(f));
      }
      m.records.push_back(std::move(r));
    }
    file.take(s);
  }
  {
    Reader s = file.section(mf::kShapes);
    uint32_t n = s.count(1);
    for (uint32_t i = 0; i < n && s.ok(); ++i) {
      ShapeDesc sh;
      uint32_t fields = s.count(2);
      for (uint32_t j = 0; j < fields && s.ok(); ++j) {
        sh.names.push_back(s.str());
        sh.types.push_back(s.index());
      }
      m.shapes.push_back(std::move(sh));
    }
    file.take(s);
  }
  {
    Reader s = file.section(mf::kTables);
    uint32_t n = s.count(3);
    for (uint32_t i = 0; i < n && s.ok(); ++i) {
      TableDesc t;
      t.name = s.str();
      t.record = s.index();
      t.key_field = s.index();
      m.tables.push_back(std::move(t));
    }
    file.take(s);
  }
  {
    Reader s = file.section(mf::kVars);
    uint32_t n = s.count(3);
    for (uint32_t i = 0; i < n && s.ok(); ++i) {
      VarDesc v;
      v.name = s.str();
      v.type = s.index();
      v.init = s.constant();
      m.vars.push_back(std::move(v));
    }
    file.take(s);
  }
  {
    Reader s = file.section(mf::kEvents);
    uint32_t n = s.count(3);
    for (uint32_t i = 0; i < n && s.ok(); ++i) {
      EventDesc e;
      e.name = s.str();
      e.record = s.index();
      e.handler = s.index();
      m.events.push_back(std::move(e));
    }
    file.take(s);
  }
  {
    Reader s = file.section(mf::kFunctions);
    uint32_t n = s.count(8);
    for (uint32_t i = 0; i < n && s.ok(); ++i) {
      Function f;
      f.name = s.str();
      uint8_t kind = s.u8();
      if (kind > static_cast<uint8_t>(FnKind::Helper)) s.bad("unknown function kind");
      f.kind = static_cast<FnKind>(kind);
      f.event = s.index();
      uint32_t params = s.count(2);
      for (uint32_t j = 0; j < params && s.ok(); ++j) {
        f.param_names.push_back(s.str());
        f.param_types.push_back(s.index());
      }
      f.result_type = s.index();
      f.frame_size = s.index();
      uint32_t nk = s.count(2);
      for (uint32_t j = 0; j < nk && s.ok(); ++j) f.constants.push_back(s.constant());
      uint32_t ncode = s.count(4);
      f.code.reserve(ncode);
      for (uint32_t j = 0; j < ncode && s.ok(); ++j) f.code.push_back(static_cast<Instr>(s.fixed(4)));
      uint32_t nlines = s.count(3);
      uint32_t pc = 0;
      for (uint32_t j = 0; j < nlines && s.ok(); ++j) {
        uint64_t delta = s.varint();
        LineEntry e;
        e.pc = pc + static_cast<uint32_t>(std::min<uint64_t>(delta, UINT32_MAX));
        e.line = s.index();
        e.col = s.index();
        pc = e.pc;
        f.lines.push_back(e);
      }
      m.functions.push_back(std::move(f));
    }
    file.take(s);
  }
  if (file.ok() && !file.at_end()) file.bad("unknown bytes after the last section");
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
  bool function(const Function& f, uint32_t index);
  bool instruction(const Function& f, uint32_t pc);

  const Module& m_;
  std::string error_;
};

bool Verifier::run(std::string& error) {
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
  for (const RecordDesc& r : m.records) {
    if (r.fields.size() > 255) bad(fmt::format("record `{}` has more than 255 fields", r.name));
    for (const FieldDesc& f : r.fields) type(f.type, fmt::format("record `{}`", r.name));
  }
  for (const ShapeDesc& s : m.shapes) {
    if (s.names.size() > 255) bad("an object shape has more than 255 fields");
    for (uint32_t t : s.types) type(t, "object shape");
  }
  for (const TableDesc& t : m.tables) {
    if (t.record >= m.records.size()) {
      bad(fmt::format("table `{}`: record out of range", t.name));
      continue;
    }
    const RecordDesc& r = m.records[t.record];
    if (t.key_field >= r.fields.size()) {
      bad(fmt::format("table `{}`: key field out of range", t.name));
      continue;
    }
    for (const FieldDesc& f : r.fields) {
      if (!scalar(f.type)) bad(fmt::format("table `{}`: field `{}` is not num, text or bool", t.name, f.name));
    }
    uint32_t kt = r.fields[t.key_field].type;
    if (kt != kTypeNum && kt != kTypeText) bad(fmt::format("table `{}`: key is not num or text", t.name));
  }
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
  for (uint32_t i = 0; i < m.functions.size() && error_.empty(); ++i) function(m.functions[i], i);
  error = error_;
  return error_.empty();
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
  auto jump = [&] {
    int64_t target = int64_t{pc} + 1 + sbx_of(i);
    return (target >= 0 && target < static_cast<int64_t>(f.code.size())) || bad(where() + ": jump out of the code");
  };
  switch (op) {
    case Op::RET0: return true;
    case Op::JMP: return jump();
    case Op::JT:
    case Op::JF: return reg(a) && jump();
    case Op::NEXT: return reg(a) && reg(a + 1) && jump();
    case Op::RNEXT: return reg(a) && reg(a + 2) && jump();
    case Op::LOADK: return reg(a) && below(bx, f.constants.size(), "constant");
    case Op::LOADI: return reg(a);
    case Op::LOADB:
    case Op::NEWARR: return reg(a);
    case Op::SHARE:
    case Op::UNSHARE:
    case Op::NOW:
    case Op::RET:
    case Op::FAIL: return reg(a);
    case Op::CALL: {
      if (!below(bx, m_.functions.size(), "function")) return false;
      const Function& callee = m_.functions[bx];
      if (callee.kind == FnKind::Handler) return bad(where() + ": calls a handler");
      return reg(a) && reg(a + std::max<uint32_t>(static_cast<uint32_t>(callee.param_names.size()), 1) - 1);
    }
    case Op::CALLB: {
      if (!below(b, stdlib::builtins().size(), "built-in")) return false;
      const stdlib::Builtin& bi = stdlib::builtins()[b];
      if (!bi.impl) return bad(where() + ": built-in without an implementation");
      if (c < bi.min_args || c > bi.max_args) return bad(where() + ": wrong argument count");
      return reg(a) && (c == 0 || reg(a + c - 1));
    }
    case Op::GETV:
    case Op::SETV: return reg(a) && below(bx, m_.vars.size(), "var");
    case Op::TGET:
    case Op::THAS:
    case Op::TADD:
    case Op::TPUT:
    case Op::TDEL:
    case Op::TAT:
    case Op::TCOUNT:
    case Op::TFIRST:
    case Op::TLAST:
    case Op::TITER: return reg(a) && below(bx, m_.tables.size(), "table");
    case Op::TVIEW: return reg(a) && reg(a + 1) && below(bx, m_.tables.size(), "table");
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
    case Op::VARR:
    case Op::APUSH:
    case Op::APOP:
    case Op::ALEN:
    case Op::AITER: return reg(a) && reg(b);
    default:  // three registers
      return reg(a) && reg(b) && reg(c);
  }
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
    error = fmt::format("cannot create {}: {}", tmp, std::strerror(errno));
    return false;
  }
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = (std::fflush(f) == 0) && ok;
  int saved = errno;
  std::fclose(f);
  if (!ok) {
    error = fmt::format("cannot write {}: {}", tmp, std::strerror(saved));
    std::remove(tmp.c_str());
    return false;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = fmt::format("cannot rename {} to {}: {}", tmp, path, std::strerror(errno));
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

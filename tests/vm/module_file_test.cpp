// The module file codec: round trips, and every kind of damage refused
// with a message (never a crash): truncation at every length, flipped
// bytes, a newer format, a foreign file, and structurally bad contents.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "compiler/codegen.h"
#include "compiler/compiler.h"
#include "stdlib/builtins.h"
#include "vm/bytecode.h"
#include "vm/bytes.h"
#include "vm/module_file.h"
#include "vm/module_format.h"

namespace aup::vm {
namespace {

std::unique_ptr<Module> compile(const char* path) {
  std::string text, error;
  REQUIRE_MESSAGE(read_source_file(path, text, error), error);
  auto checked = check_source(path, std::move(text));
  REQUIRE(checked->ok());
  Diagnostics d;
  auto m = generate(*checked, d);
  REQUIRE(m);
  return m;
}

// A module file's body as its sections (module_format.h), written by the
// test's own reading of the layout, so a test can damage one section and
// put the file back together with a right length and checksum.
struct Part {
  uint8_t tag = 0;
  size_t at = 0;  // the payload's first byte in the file
  std::vector<uint8_t> payload;
};
std::vector<Part> sections_of(const std::vector<uint8_t>& file) {
  bytes::Reader r(file.data() + module_format::kHeaderBytes, file.size() - module_format::kHeaderBytes,
                  module_format::kHeaderBytes);
  std::vector<Part> out;
  while (r.ok() && !r.done()) {
    Part p;
    p.tag = r.u8();
    uint64_t n = r.varint();
    p.at = r.offset();
    bytes::Reader payload = r.sub(n);
    p.payload.assign(payload.position(), payload.position() + payload.left());
    out.push_back(std::move(p));
  }
  REQUIRE_MESSAGE(r.ok(), r.error());
  return out;
}
std::vector<uint8_t> file_of(const std::vector<Part>& parts) {
  std::vector<uint8_t> body;
  bytes::Writer b(body);
  for (const Part& p : parts) {
    b.u8(p.tag);
    b.varint(p.payload.size());
    b.raw(p.payload.data(), p.payload.size());
  }
  std::vector<uint8_t> file = {'A', 'U', 'P', 'M', module_format::kVersion, 0, 0, 0};
  bytes::Writer f(file);
  f.fixed64(body.size());
  f.fixed64(XXH3_64bits(body.data(), body.size()));
  f.raw(body.data(), body.size());
  return file;
}
std::vector<uint8_t> bank_file() { return encode_module(*compile(AUP_SOURCE_DIR "/examples/bank/bank.aup")); }
// The message decoding `file` is refused with (the test fails if it is not).
std::string refusal(const std::vector<uint8_t>& file) {
  Module back;
  std::string error;
  REQUIRE_FALSE(decode_module(file, back, error));
  return error;
}
std::vector<uint8_t> varint_of(uint64_t v) {
  std::vector<uint8_t> out;
  bytes::Writer(out).varint(v);
  return out;
}

// Re-seals a body whose bytes a test changed on purpose.
void reseal(std::vector<uint8_t>& bytes) {
  uint64_t h = XXH3_64bits(bytes.data() + module_format::kHeaderBytes,
                           bytes.size() - module_format::kHeaderBytes);
  for (int i = 0; i < 8; ++i) bytes[16 + i] = static_cast<uint8_t>(h >> (8 * i));
}

TEST_SUITE("module_file") {
  TEST_CASE("round trip: decode(encode(m)) encodes to the same bytes") {
    for (const char* path : {AUP_SOURCE_DIR "/examples/bank/bank.aup", AUP_SOURCE_DIR "/examples/tpcc/tpcc.aup"}) {
      auto m = compile(path);
      std::string error;
      REQUIRE_MESSAGE(verify_module(*m, error), error);
      std::vector<uint8_t> bytes = encode_module(*m);
      Module back;
      REQUIRE_MESSAGE(decode_module(bytes, back, error), error);
      CHECK(encode_module(back) == bytes);
      CHECK(back.functions.size() == m->functions.size());
      CHECK(back.source_name == m->source_name);
    }
  }

  TEST_CASE("every truncation is refused") {
    auto m = compile(AUP_SOURCE_DIR "/examples/bank/bank.aup");
    std::vector<uint8_t> bytes = encode_module(*m);
    for (size_t n = 0; n < bytes.size(); ++n) {
      Module back;
      std::string error;
      REQUIRE_FALSE(decode_module(std::span(bytes.data(), n), back, error));
      CHECK(error.find("truncated") != std::string::npos);
    }
  }

  TEST_CASE("every flipped byte is refused") {
    auto m = compile(AUP_SOURCE_DIR "/examples/bank/bank.aup");
    std::vector<uint8_t> bytes = encode_module(*m);
    for (size_t i = 0; i < bytes.size(); ++i) {
      std::vector<uint8_t> bad = bytes;
      bad[i] ^= 0x20;
      Module back;
      std::string error;
      CAPTURE(i);
      REQUIRE_FALSE(decode_module(bad, back, error));
      CHECK(!error.empty());
    }
  }

  TEST_CASE("a newer format is refused by name; a foreign file too") {
    auto m = compile(AUP_SOURCE_DIR "/examples/bank/bank.aup");
    std::vector<uint8_t> bytes = encode_module(*m);
    bytes[4] = module_format::kVersion + 1;
    Module back;
    std::string error;
    REQUIRE_FALSE(decode_module(bytes, back, error));
    CHECK(error.find("built by a newer aup: module format 5, this aup reads format 4") != std::string::npos);
    std::string elf = "\x7f" "ELF................................";
    REQUIRE_FALSE(decode_module(std::span(reinterpret_cast<const uint8_t*>(elf.data()), elf.size()), back, error));
    CHECK(error.find("not an aup module") != std::string::npos);
  }

  TEST_CASE("resealed garbage in the body: refused by the structural checks, never a crash") {
    auto m = compile(AUP_SOURCE_DIR "/examples/tpcc/tpcc.aup");
    std::vector<uint8_t> bytes = encode_module(*m);
    uint64_t state = 12345;
    size_t refused = 0;
    for (int round = 0; round < 3000; ++round) {
      std::vector<uint8_t> bad = bytes;
      for (int k = 0; k < 4; ++k) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        size_t at = module_format::kHeaderBytes + (state >> 33) % (bad.size() - module_format::kHeaderBytes);
        bad[at] = static_cast<uint8_t>(state >> 17);
      }
      reseal(bad);
      Module back;
      std::string error;
      if (!decode_module(bad, back, error)) {
        ++refused;
        CHECK(error.rfind("damaged: ", 0) == 0);
      }
    }
    CHECK(refused > 0);
  }

  TEST_CASE("an object type holding itself is refused (a cycle of types)") {
    // module_fuzz: a resealed module whose object shape had a field of that
    // very object type passed the verifier, and `aup disasm` recursed on its
    // type until the stack overflowed.
    auto m = compile(AUP_SOURCE_DIR "/tests/programs/protocol.aup");
    uint32_t object = 0;
    for (uint32_t t = 0; t < m->types.size(); ++t) {
      if (m->types[t].code == TypeCode::Object) object = t;
    }
    REQUIRE(object != 0);
    std::string error;
    REQUIRE(verify_module(*m, error));
    m->shapes[m->types[object].index].types[0] = object;
    CHECK_FALSE(verify_module(*m, error));
    CHECK(error.find("not before it") != std::string::npos);
    std::vector<uint8_t> bytes = encode_module(*m);
    Module back;
    CHECK_FALSE(decode_module(bytes, back, error));
  }

  TEST_CASE("the verifier names what is out of range") {
    auto m = compile(AUP_SOURCE_DIR "/examples/bank/bank.aup");
    std::string error;
    Function& f = m->functions[0];
    Instr saved = f.code[0];
    f.code[0] = make_asbx(Op::JMP, 0, 30000);
    CHECK_FALSE(verify_module(*m, error));
    CHECK(error.find("jump out of the code") != std::string::npos);
    f.code[0] = make_abc(Op::MOVE, f.frame_size, 0);
    CHECK_FALSE(verify_module(*m, error));
    CHECK(error.find("register out of the frame") != std::string::npos);
    f.code[0] = 0xFF;
    CHECK_FALSE(verify_module(*m, error));
    CHECK(error.find("unknown opcode") != std::string::npos);
    f.code[0] = saved;
    Instr last = f.code.back();
    f.code.back() = make_abc(Op::MOVE, 0, 0);
    CHECK_FALSE(verify_module(*m, error));
    CHECK(error.find("does not end in a return") != std::string::npos);
    f.code.back() = last;
    CHECK(verify_module(*m, error));
  }
  TEST_CASE("the bank module's bytes are unchanged (format 4; the JIT cache keys on them)") {
    // Format 1's were first written by the encoder before its sections
    // became a table (commit 25adfb9's vm/module_file.cpp): 1968 bytes.
    // Format 2 (composite keys) adds a key field count to each of the two
    // tables and renumbers the opcodes after TITER (KEY, KEYPFX); format 3
    // (indexes) appends an empty INDEXES section (3 bytes); format 4 (text
    // and array methods, TFIND, IFIND, SORT) changes only the version. If
    // bank.aup or the compiler's output changes on purpose, this changes
    // with it; the format must not.
    std::vector<uint8_t> bytes = bank_file();
    CHECK(bytes.size() == 1973);
    CHECK(XXH3_64bits(bytes.data(), bytes.size()) == 0xab3cc7a2df2a4bd5ull);
  }

  TEST_CASE("a small module's every section is the bytes docs/module-format.md describes") {
    Module m;
    m.source_name = "m.aup";
    m.types = {{TypeCode::Void, 0}, {TypeCode::Num, 0}, {TypeCode::Text, 0}, {TypeCode::Bool, 0},
               {TypeCode::Record, 0}};
    Constant two;
    two.num = 2;
    m.records.push_back(RecordDesc{"R", true, {FieldDesc{"a", kTypeNum, true, two}}});
    m.shapes.push_back(ShapeDesc{{"s"}, {kTypeText}});
    m.tables.push_back(TableDesc{"t", 0, {0}});
    Constant yes;
    yes.kind = Constant::Kind::Bool;
    yes.boolean = true;
    m.vars.push_back(VarDesc{"v", kTypeBool, yes});
    m.events.push_back(EventDesc{"e", 0, 0});
    Function f;
    f.name = "e";
    f.kind = FnKind::Handler;
    f.param_names = {"x"};
    f.param_types = {4};
    f.frame_size = 2;
    Constant hi;
    hi.kind = Constant::Kind::Text;
    hi.text = "hi";
    f.constants = {hi};
    f.code = {0x04030201};
    f.lines = {{0, 7, 3}, {1, 8, 1}};
    m.functions.push_back(std::move(f));
    m.indexes.push_back(IndexDesc{"i", 0, {0}, true});
    const std::vector<uint8_t> body = {
        1, 6, 5, 'm', '.', 'a', 'u', 'p',                                 // SOURCE
        2, 11, 5, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0,                           // TYPES: code, index
        3, 18, 1, 1, 'R', 1, 1, 1, 'a', 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x40,  // RECORDS: a = 2.0
        4, 5, 1, 1, 1, 's', 2,                                            // SHAPES
        5, 6, 1, 1, 't', 0, 1, 0,                                         // TABLES: record, key fields
        6, 6, 1, 1, 'v', 3, 2, 1,                                         // VARS: bool true
        7, 5, 1, 1, 'e', 0, 0,                                            // EVENTS: record, handler
        8, 28, 1, 1, 'e', 0, 0, 1, 1, 'x', 4, 0, 2, 1, 1, 2, 'h', 'i',    // FUNCTIONS: ..., constants
        1, 1, 2, 3, 4, 2, 0, 7, 3, 1, 8, 1,                               // code, lines (pc delta, line, col)
        9, 7, 1, 1, 'i', 0, 1, 1, 0,                                      // INDEXES: table, unique, fields
    };
    std::vector<uint8_t> bytes = encode_module(m);
    REQUIRE(bytes.size() == module_format::kHeaderBytes + body.size());
    CHECK(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 8) == std::vector<uint8_t>{'A', 'U', 'P', 'M', 4, 0, 0, 0});
    CHECK(bytes::get_u64(bytes.data() + 8) == body.size());
    CHECK(bytes::get_u64(bytes.data() + 16) == XXH3_64bits(body.data(), body.size()));
    CHECK(std::vector<uint8_t>(bytes.begin() + module_format::kHeaderBytes, bytes.end()) == body);
  }

  TEST_CASE("refused: shorter than the header") {
    std::vector<uint8_t> bytes = bank_file();
    bytes.resize(10);
    CHECK(refusal(bytes) == "truncated: 10 bytes, shorter than the 24-byte header");
  }

  TEST_CASE("refused: a body shorter than the header promises") {
    std::vector<uint8_t> bytes = bank_file();
    bytes.pop_back();
    CHECK(refusal(bytes) == "truncated: the header promises 1949 bytes of body, the file has 1948");
  }

  TEST_CASE("refused: bytes after the body") {
    std::vector<uint8_t> bytes = bank_file();
    bytes.push_back(0);
    CHECK(refusal(bytes) == "damaged: 1 byte follows the 1949-byte body");
  }

  TEST_CASE("refused: no magic") {
    std::vector<uint8_t> bytes = bank_file();
    bytes[3] = 'X';
    CHECK(refusal(bytes) == "not an aup module (the file does not start with AUPM)");
  }

  TEST_CASE("refused: a newer format, format 0, unknown flags") {
    std::vector<uint8_t> bytes = bank_file();
    bytes[4] = 7;
    CHECK(refusal(bytes) ==
          "built by a newer aup: module format 7, this aup reads format 4 (rebuild it with `aup build`)");
    bytes[4] = 0;
    CHECK(refusal(bytes) == "damaged: module format 0 does not exist");
    bytes[4] = 2;
    bytes[7] = 1;
    CHECK(refusal(bytes) == "damaged: unknown flags in the header");
  }

  TEST_CASE("refused: a checksum that does not match the body") {
    std::vector<uint8_t> bytes = bank_file();
    bytes[module_format::kHeaderBytes + 5] ^= 1;
    CHECK(refusal(bytes) == "damaged: the checksum does not match the contents");
  }

  TEST_CASE("the test's own reading of the sections gives back the file") {
    std::vector<uint8_t> bytes = bank_file();
    std::vector<Part> parts = sections_of(bytes);
    REQUIRE(parts.size() == 9);
    for (size_t i = 0; i < parts.size(); ++i) CHECK(parts[i].tag == i + 1);
    CHECK(file_of(parts) == bytes);
  }

  TEST_CASE("refused: a section out of order, named at its tag") {
    std::vector<Part> parts = sections_of(bank_file());
    std::swap(parts[2], parts[3]);
    std::vector<uint8_t> bytes = file_of(parts);
    Part shapes = sections_of(bytes)[2];
    size_t tag_at = shapes.at - varint_of(shapes.payload.size()).size() - 1;
    CHECK(refusal(bytes) == fmt::format("damaged: expected section 3 (RECORDS), found 4 (SHAPES) at byte {}", tag_at));
  }

  TEST_CASE("refused: a section missing at the end") {
    std::vector<Part> parts = sections_of(bank_file());
    parts.pop_back();
    std::vector<uint8_t> bytes = file_of(parts);
    CHECK(refusal(bytes) == fmt::format("damaged: truncated at byte {}", bytes.size()));
  }

  TEST_CASE("refused: a section longer than the file") {
    std::vector<uint8_t> bytes = bank_file();
    std::vector<Part> parts = sections_of(bytes);
    // The last section's length, one more than the bytes after it.
    size_t len_at = parts.back().at - varint_of(parts.back().payload.size()).size();
    std::vector<uint8_t> longer = varint_of(parts.back().payload.size() + 1);
    REQUIRE(longer.size() == varint_of(parts.back().payload.size()).size());
    std::copy(longer.begin(), longer.end(), bytes.begin() + static_cast<long>(len_at));
    reseal(bytes);
    CHECK(refusal(bytes) == fmt::format("damaged: section longer than the file at byte {}", len_at));
  }

  TEST_CASE("refused: a count larger than the bytes left, named at the count") {
    std::vector<Part> parts = sections_of(bank_file());
    parts[1].payload = {100, 0, 0, 0, 0};  // TYPES: 100 types of at least 2 bytes in 4
    std::vector<uint8_t> bytes = file_of(parts);
    CHECK(refusal(bytes) == fmt::format("damaged: a count of 100, more than the bytes left hold at byte {}",
                                        sections_of(bytes)[1].at));
  }

  TEST_CASE("refused: a malformed varint, named at its first byte") {
    std::vector<Part> parts = sections_of(bank_file());
    parts[1].payload.assign(11, 0x80);  // TYPES: a count that never ends
    std::vector<uint8_t> bytes = file_of(parts);
    CHECK(refusal(bytes) == fmt::format("damaged: malformed varint at byte {}", sections_of(bytes)[1].at));
  }

  TEST_CASE("refused: a string longer than its section") {
    std::vector<Part> parts = sections_of(bank_file());
    parts[0].payload = {10, 'a', 'b'};  // SOURCE: 10 bytes promised, 2 there
    std::vector<uint8_t> bytes = file_of(parts);
    CHECK(refusal(bytes) == fmt::format("damaged: a length of 10, longer than the bytes left at byte {}",
                                        sections_of(bytes)[0].at));
  }

  TEST_CASE("refused: an index past 32 bits") {
    std::vector<Part> parts = sections_of(bank_file());
    // TABLES: one table `t`, its record index 2^32.
    parts[4].payload = {1, 1, 't'};
    std::vector<uint8_t> big = varint_of(uint64_t{1} << 32);
    parts[4].payload.insert(parts[4].payload.end(), big.begin(), big.end());
    parts[4].payload.push_back(0);
    std::vector<uint8_t> bytes = file_of(parts);
    CHECK(refusal(bytes) ==
          fmt::format("damaged: index 4294967296 out of range at byte {}", sections_of(bytes)[4].at + 3));
  }

  TEST_CASE("refused: an index out of its table (the structural checks)") {
    auto m = compile(AUP_SOURCE_DIR "/examples/bank/bank.aup");
    m->tables[0].record = static_cast<uint32_t>(m->records.size());
    CHECK(refusal(encode_module(*m)) == fmt::format("damaged: table `{}`: record out of range", m->tables[0].name));
  }

  TEST_CASE("refused: an unknown type code, function kind or constant kind, named at its byte") {
    std::vector<Part> parts = sections_of(bank_file());
    std::vector<Part> types = parts;
    types[1].payload = {1, 9, 0};  // TYPES: one type, code 9
    std::vector<uint8_t> bytes = file_of(types);
    CHECK(refusal(bytes) == fmt::format("damaged: unknown type code 9 at byte {}", sections_of(bytes)[1].at + 1));

    std::vector<Part> functions = parts;
    functions[7].payload = {1, 1, 'f', 3};  // FUNCTIONS: one function `f`, kind 3
    functions[7].payload.resize(12);
    bytes = file_of(functions);
    CHECK(refusal(bytes) ==
          fmt::format("damaged: unknown function kind 3 at byte {}", sections_of(bytes)[7].at + 3));

    std::vector<Part> vars = parts;
    vars[5].payload = {1, 1, 'v', 1, 3, 0};  // VARS: one var `v`, its constant of kind 3
    bytes = file_of(vars);
    CHECK(refusal(bytes) == fmt::format("damaged: unknown constant kind at byte {}", sections_of(bytes)[5].at + 4));
  }

  TEST_CASE("refused: bytes a section's reader did not read") {
    std::vector<Part> parts = sections_of(bank_file());
    parts[1].payload.push_back(0);  // TYPES, one byte more than its types
    std::vector<uint8_t> bytes = file_of(parts);
    Part types = sections_of(bytes)[1];
    CHECK(refusal(bytes) == fmt::format("damaged: unread bytes in section 2 (TYPES) at byte {}",
                                        types.at + types.payload.size() - 1));
  }

  TEST_CASE("refused: an older format (another instruction set), saying to rebuild it") {
    // Format 1 had no KEY and KEYPFX, so its opcodes after TITER meant
    // other instructions, and a table's key was one field number.
    std::vector<uint8_t> bytes = bank_file();
    bytes[4] = 1;
    CHECK(refusal(bytes) == "built by an older aup: module format 1, this aup reads format 4 (rebuild it from its "
                            ".aup source with this aup's `aup build`)");
  }

  TEST_CASE("a table's key fields are written in key order and read back") {
    auto m = compile(AUP_SOURCE_DIR "/examples/bank/bank.aup");
    // accounts: id, owner, balance; as the key (balance, id, owner).
    m->tables[0].key_fields = {2, 0, 1};
    std::string error;
    REQUIRE_MESSAGE(verify_module(*m, error), error);
    Module back;
    REQUIRE_MESSAGE(decode_module(encode_module(*m), back, error), error);
    CHECK(back.tables[0].key_fields == std::vector<uint32_t>{2, 0, 1});
  }

  TEST_CASE("refused: a table's key that no table can have") {
    auto m = compile(AUP_SOURCE_DIR "/examples/bank/bank.aup");
    TableDesc& t = m->tables[0];
    const RecordDesc& r = m->records[t.record];
    const std::vector<uint32_t> good = t.key_fields;
    auto refused = [&](std::vector<uint32_t> key) {
      t.key_fields = std::move(key);
      std::string why = refusal(encode_module(*m));
      t.key_fields = good;
      return why;
    };
    std::string name = t.name;
    CHECK(refused({}) == fmt::format("damaged: table `{}`: a key of 0 fields (1 to 8)", name));
    CHECK(refused(std::vector<uint32_t>(9, 0)) == fmt::format("damaged: table `{}`: a key of 9 fields (1 to 8)", name));
    auto past = static_cast<uint32_t>(r.fields.size());
    CHECK(refused({0, past}) ==
          fmt::format("damaged: table `{}`: key field {} (component 2 of the key) out of range", name, past));
    CHECK(refused({0, 1, 0}) ==
          fmt::format("damaged: table `{}`: key field `{}` is in the key twice", name, r.fields[0].name));
    // accounts: id, owner, balance, opened, closed (a bool).
    REQUIRE(r.fields[4].type == kTypeBool);
    CHECK(refused({0, 4}) == fmt::format("damaged: table `{}`: key field `closed` is not num or text", name));
  }

  TEST_CASE("refused: KEY and KEYPFX with components or registers out of range") {
    auto m = compile(AUP_SOURCE_DIR "/examples/bank/bank.aup");
    Function& f = m->functions[0];
    std::string where = fmt::format("`{}` pc 0", f.name);
    uint32_t top = f.frame_size - 1;  // the frame's last register
    Instr saved = f.code[0];
    auto refused = [&](Instr i) {
      f.code[0] = i;
      std::string error;
      bool ok = verify_module(*m, error);
      f.code[0] = saved;
      return ok ? std::string("accepted") : error;
    };
    CHECK(refused(make_abc(Op::KEY, 0, 0, 0)) == where + " (KEY): 0 key components (1 to 8)");
    CHECK(refused(make_abc(Op::KEYPFX, 0, 0, 9)) == where + " (KEYPFX): 9 key components (1 to 8)");
    CHECK(refused(make_abc(Op::KEY, 0, 4, 2)) == where + " (KEY): text mask 0x4 beyond 2 components");
    CHECK(refused(make_abc(Op::KEY, top, 0, 2)) == where + " (KEY): register out of the frame");
    CHECK(refused(make_abc(Op::KEYPFX, top, 0, 1)) == where + " (KEYPFX): register out of the frame");
    // Within bounds: the last components end at the frame's last register,
    // KEYPFX's second result one below it.
    CHECK(refused(make_abc(Op::KEY, top - 1, 3, 2)) == "accepted");
    CHECK(refused(make_abc(Op::KEYPFX, top - 1, 1, 1)) == "accepted");
    CHECK(refused(make_abc(Op::KEY, top, 1, 1)) == "accepted");
  }

  TEST_CASE("refused: bytes after the last section") {
    std::vector<Part> parts = sections_of(bank_file());
    parts.push_back(Part{10, 0, {1, 2, 3}});
    std::vector<uint8_t> bytes = file_of(parts);
    size_t extra_at = sections_of(bytes).back().at - 2;
    CHECK(refusal(bytes) == fmt::format("damaged: unknown bytes after the last section at byte {}", extra_at));
  }
  TEST_CASE("a module's indexes are written and read back; format 2, without them, is still read") {
    auto m = compile(AUP_SOURCE_DIR "/examples/bank/bank.aup");
    m->indexes.push_back(IndexDesc{"by_owner", 0, {1, 2}, false});
    m->indexes.push_back(IndexDesc{"by_owner_id", 0, {1}, true});
    std::string error;
    Module back;
    REQUIRE_MESSAGE(decode_module(encode_module(*m), back, error), error);
    REQUIRE(back.indexes.size() == 2);
    CHECK(back.indexes[0].name == "by_owner");
    CHECK(back.indexes[0].fields == std::vector<uint32_t>{1, 2});
    CHECK_FALSE(back.indexes[0].unique);
    CHECK(back.indexes[1].unique);
    // Format 2: the same body without section 9, and version 2 in the header.
    std::vector<Part> parts = sections_of(bank_file());
    REQUIRE(parts.back().tag == 9);
    parts.pop_back();
    std::vector<uint8_t> old = file_of(parts);
    old[4] = 2;
    Module two;
    REQUIRE_MESSAGE(decode_module(old, two, error), error);
    CHECK(two.indexes.empty());
    CHECK(two.tables.size() == m->tables.size());
  }

  TEST_CASE("refused: an index no table can have, and IGET of a non-unique index") {
    auto m = compile(AUP_SOURCE_DIR "/examples/bank/bank.aup");
    auto refused = [&](IndexDesc x) {
      m->indexes = {std::move(x)};
      std::string error;
      bool ok = verify_module(*m, error);
      m->indexes.clear();
      return ok ? std::string("accepted") : error;
    };
    CHECK(refused(IndexDesc{"i", 0, {1}, false}) == "accepted");
    CHECK(refused(IndexDesc{"i", 9, {1}, false}) == "index `i`: table out of range");
    CHECK(refused(IndexDesc{"i", 0, {}, false}) == "index `i`: 0 fields (1 to 8)");
    CHECK(refused(IndexDesc{"i", 0, std::vector<uint32_t>(9, 1), false}) == "index `i`: 9 fields (1 to 8)");
    CHECK(refused(IndexDesc{"i", 0, {1, 99}, false}) == "index `i`: field 99 out of range");
    CHECK(refused(IndexDesc{"i", 0, {1, 1}, false}) == "index `i`: field `owner` twice");
    CHECK(refused(IndexDesc{"i", 0, {4}, false}) == "index `i`: field `closed` is not num or text");
    m->indexes = {IndexDesc{"i", 0, {1}, false}};
    Function& f = m->functions[0];
    Instr saved = f.code[0];
    f.code[0] = make_abx(Op::IGET, 0, 0);
    std::string error;
    CHECK_FALSE(verify_module(*m, error));
    CHECK(error == fmt::format("`{}` pc 0 (IGET): index is not unique", f.name));
    f.code[0] = make_abx(Op::IFIND, 0, 0);
    CHECK_FALSE(verify_module(*m, error));
    CHECK(error == fmt::format("`{}` pc 0 (IFIND): index is not unique", f.name));
    f.code[0] = make_abx(Op::IVIEW, 0, 1);
    CHECK_FALSE(verify_module(*m, error));
    CHECK(error == fmt::format("`{}` pc 0 (IVIEW): index out of range", f.name));
    f.code[0] = saved;
  }

  TEST_CASE("format 3, without the text methods and TFIND, IFIND and SORT, is still read") {
    std::vector<uint8_t> old = file_of(sections_of(bank_file()));
    old[4] = 3;
    Module three;
    std::string error;
    CHECK_MESSAGE(decode_module(old, three, error), error);
  }

  TEST_CASE("refused: SORT whose keys are no text constant or malformed; a method's CALLB without its receiver") {
    auto m = compile(AUP_SOURCE_DIR "/examples/bank/bank.aup");
    Function& f = m->functions[0];
    Instr saved = f.code[0];
    auto with_keys = [&](Constant k) {
      f.constants.push_back(k);
      f.code[0] = make_abx(Op::SORT, 0, static_cast<uint32_t>(f.constants.size() - 1));
      std::string error;
      bool ok = verify_module(*m, error);
      f.constants.pop_back();
      f.code[0] = saved;
      return ok ? std::string("accepted") : error;
    };
    Constant keys;
    keys.kind = Constant::Kind::Text;
    keys.text = std::string{static_cast<char>(kSortItself), static_cast<char>(kSortDescending | 1)};
    CHECK(with_keys(keys) == "accepted");
    std::string where = fmt::format("`{}` pc 0 (SORT): ", f.name);
    Constant number;
    CHECK(with_keys(number) == where + "keys are not a text constant");
    keys.text = "";
    CHECK(with_keys(keys) == where + "malformed keys");
    keys.text = std::string{0};
    CHECK(with_keys(keys) == where + "malformed keys");
    keys.text = std::string{0, 3};  // no ItemKind 3 (records are sorted by their fields)
    CHECK(with_keys(keys) == where + "malformed keys");
    keys.text = std::string{0, 0x41};
    CHECK(with_keys(keys) == where + "malformed keys");
    // `t.slice(a, b)` passes three values: one is too few, four too many.
    auto slice = static_cast<uint32_t>(stdlib::BuiltinId::Slice);
    std::string error;
    for (uint32_t c : {2u, 3u}) {
      f.code[0] = make_abc(Op::CALLB, 0, slice, c);
      CHECK_MESSAGE(verify_module(*m, error), error);
    }
    for (uint32_t c : {1u, 4u}) {
      f.code[0] = make_abc(Op::CALLB, 0, slice, c);
      CHECK_FALSE(verify_module(*m, error));
      CHECK(error == fmt::format("`{}` pc 0 (CALLB): wrong argument count", f.name));
    }
    f.code[0] = saved;
  }
}

}  // namespace
}  // namespace aup::vm

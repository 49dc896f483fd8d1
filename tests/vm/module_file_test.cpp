// The module file codec: round trips, and every kind of damage refused
// with a message (never a crash): truncation at every length, flipped
// bytes, a newer format, a foreign file, and structurally bad contents.
#include <doctest/doctest.h>

#include <xxhash.h>

#include <cstring>
#include <string>

#include "compiler/codegen.h"
#include "compiler/compiler.h"
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
    CHECK(error.find("built by a newer aup: module format 2, this aup reads format 1") != std::string::npos);
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
}

}  // namespace
}  // namespace aup::vm

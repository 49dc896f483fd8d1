// Fuzz target: module file bytes (docs/module-format.md) through the
// loader. Each input is read twice: as it is (the header checks), and
// resealed, its body length and checksum made to match (so mutations reach
// the section reader and the verifier), unless resealing changed nothing. A module that loads is made
// runnable as `aup run` makes it (constants, a state, the store's schema),
// disassembled as `aup disasm` does, and must survive a write and a read
// back unchanged.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vm/disasm.h"
#include "runtime/durability.h"
#include "tests/fuzz/fuzz_common.h"
#include "vm/module_file.h"
#include "vm/module_format.h"
#include "vm/state.h"

namespace {

using namespace aup;

void load(std::span<const uint8_t> bytes) {
  vm::Module m;
  std::string error;
  if (!vm::decode_module(bytes, m, error)) {
    if (error.empty()) fuzz::oracle_failed("a module refused without a message");
    return;
  }
  std::vector<uint8_t> again = vm::encode_module(m);
  vm::Module back;
  if (!vm::decode_module(again, back, error)) fuzz::oracle_failed("a loaded module, written again, is refused: " + error);
  if (vm::encode_module(back) != again) fuzz::oracle_failed("a loaded module does not round-trip");
  m.prepare();
  (void)vm::disassemble(m);
  vm::State state(m);
  (void)runtime::schema_of(m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > vm::module_format::kMaxFileBytes) return 0;
  load(std::span<const uint8_t>(data, size));
  constexpr size_t kHeader = vm::module_format::kHeaderBytes;
  if (size >= kHeader) {
    std::vector<uint8_t> sealed(data, data + size);
    fuzz::put64(sealed.data() + 8, size - kHeader);
    fuzz::seal(sealed.data(), kHeader, size - kHeader, 16);
    // The same bytes get the same verdict: an input sealed already is not loaded again.
    if (!std::equal(sealed.begin(), sealed.end(), data)) load(sealed);
  }
  return 0;
}

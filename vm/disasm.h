// The listing `aup disasm` prints: the schema, then every function's
// constants and instructions, one a line, with source positions.
#pragma once

#include <string>

#include "vm/module.h"

namespace aup::vm {

std::string disassemble(const Module& m);
// One instruction (no position), e.g. `TGET      R4 accounts`.
std::string disassemble_instruction(const Module& m, const Function& f, uint32_t pc);

}  // namespace aup::vm

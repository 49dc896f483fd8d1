// Code generation: a checked module (compiler.h, without diagnostics) to
// bytecode (vm/module.h).
//
// Registers: a function's locals keep the slots the checker gave them
// (after R[0], the event's arguments, in a handler); temporaries are
// allocated above them like a stack and released at the end of each
// statement. Trivial constant folding: arithmetic, comparison and `not`
// on literal operands, and joining literal texts.
#pragma once

#include <memory>

#include "compiler/compiler.h"
#include "vm/module.h"

namespace aup {

// Errors only code generation can see (an expression needing more than 256
// registers, a jump longer than 32,767 instructions) are added to `diags`;
// the result is then null.
std::unique_ptr<vm::Module> generate(const CheckedModule& m, Diagnostics& diags);

}  // namespace aup

// Native code for a module's functions, and the C ABI it calls back
// through. vm/jit/ makes the code (LLVM ORC); this header and
// native_abi.cpp are all the VM knows of it, so nothing outside vm/jit/
// includes an LLVM header.
//
// A native function has the signature
//
//   bool f(NativeCtx* ctx, Value* regs)
//
// `regs` holds its parameters on entry (as the interpreter's frame would);
// on return regs[0] holds what the function's R[0] held (its result, as
// RET leaves it). It returns false when the run fails: the failure is
// already in the Vm (message with its source position), and the callers
// return false in turn. No C++ exception crosses native frames: every
// runtime call below reports failure as a return value (null, 0 or
// false), so a failure unwinds by ordinary returns.
//
// Steps are counted as the interpreter counts them: the generated code
// decrements ctx->steps_left at each backward jump and each call and
// checks *ctx->temp_bytes there, so a run takes the same number of steps
// and fails at the same instruction under either engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vm/value.h"

namespace aup::vm {

class Vm;

// What generated code reads and writes directly; the offsets are part of
// the ABI (vm/jit/ builds its struct type from this declaration).
struct NativeCtx {
  uint64_t steps_left;        // offset 0: steps the run may still take
  const size_t* temp_bytes;   // offset 8: the arena's allocated bytes
  double now;                 // offset 16: the event's accept time
  uint32_t depth;             // offset 24: calls active now
  uint32_t pad = 0;
  Vm* vm;                     // offset 32: for the runtime calls
  // offset 40: per function, its constants as values (Function::kvalues).
  // Text constants are heap pointers of this process, so the code loads
  // them from here instead of holding them: the machine code then depends
  // only on the module, and vm/jit/ can keep it in a cache across runs.
  const uint64_t* const* constants;
};
static_assert(offsetof(NativeCtx, steps_left) == 0 && offsetof(NativeCtx, temp_bytes) == 8 &&
              offsetof(NativeCtx, now) == 16 && offsetof(NativeCtx, depth) == 24 &&
              offsetof(NativeCtx, vm) == 32 && offsetof(NativeCtx, constants) == 40);

using NativeFn = bool (*)(NativeCtx* ctx, Value* regs);

// A module's compiled functions, indexed like Module::functions. Shared
// read-only by every Vm of the module (the owner and query threads).
class NativeCode {
 public:
  virtual ~NativeCode() = default;
  virtual NativeFn function(uint32_t fn) const = 0;
  // Bytes of machine code (the linked object's), for stats.
  uint64_t code_bytes = 0;
};

// The runtime calls generated code makes: name and address, registered in
// the JIT's symbol table (no need for the executable to export symbols).
struct NativeSymbol {
  const char* name;
  void* address;
};
const std::vector<NativeSymbol>& native_symbols();

}  // namespace aup::vm

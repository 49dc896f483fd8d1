// `--engine jit`: a module's bytecode compiled to native code with LLVM's
// ORC LLJIT, once per load. The code runs through the same Vm (set_native)
// and calls back into it for everything but arithmetic, jumps, calls,
// fields and array items (vm/native.h), so its results, failures and
// messages are the interpreter's, byte for byte.
//
// This header names no LLVM type: the CLI and tests include it without
// LLVM's headers (their compile time is kept to vm/jit/*.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "vm/module.h"
#include "vm/native.h"

namespace aup::vm::jit {

// Whether the machine code came from the object cache (vm/jit/cache.h).
enum class CacheUse : uint8_t {
  Off,         // no cache directory
  Hit,         // read back: nothing was compiled
  Miss,        // compiled, and stored for the next run
  Unwritable,  // compiled; the cache directory could not be written
};
std::string_view cache_use_name(CacheUse c);

struct CompileStats {
  uint32_t functions = 0;
  uint32_t instructions = 0;  // bytecode instructions translated
  double translate_ms = 0;    // bytecode to LLVM IR
  double optimize_ms = 0;     // LLVM's O2 pipeline
  double codegen_ms = 0;      // machine code (an object file)
  double link_ms = 0;         // the object linked in memory, functions looked up
  CacheUse cache = CacheUse::Off;
};

struct CompileOptions {
  std::string cache_dir;  // the object cache; empty: none
};

// Where `aup run` keeps compiled code: $AUP_JIT_CACHE if set ("" or "off":
// no cache), else $XDG_CACHE_HOME/aup/jit, else $HOME/.cache/aup/jit; ""
// if none of them is set.
std::string default_cache_dir();

// Compiles every function of `m` (prepared; it must outlive the result), or
// reads its machine code from the cache. Null with `error` set if LLVM
// cannot (no JIT module, no native target).
std::unique_ptr<NativeCode> compile(const Module& m, const CompileOptions& o, std::string& error,
                                    CompileStats* stats = nullptr);

// The LLVM IR of the function named `name` (every function if empty) as
// it is compiled: after the O2 pipeline unless `optimized` is false. False
// with `error` set if no function has that name.
bool function_ir(const Module& m, std::string_view name, bool optimized, std::string& out, std::string& error);

}  // namespace aup::vm::jit

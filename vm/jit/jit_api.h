// The boundary between the aup executable and the JIT module
// (libaupjit.so, vm/jit/jit.cpp + translate.cpp, which alone link LLVM).
//
// Why a module loaded on demand: linking libLLVM into `aup` made every
// command pay for relocating it at start (`aup --version` went from 6 ms
// to 60-70 ms of CPU). Now only `--engine jit` and `disasm --ir` load it
// (vm/jit/loader.cpp, dlopen), and a machine without LLVM still runs
// everything else.
//
// The module exports one C symbol, kApiSymbol, returning a table of entry
// points. `version` changes whenever this table or anything it passes
// changes shape; the loader refuses a module of another version (a stale
// build) with a clear message rather than calling into it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vm/jit/jit.h"

namespace aup::vm::jit {

inline constexpr uint32_t kApiVersion = 2;
inline constexpr const char* kApiSymbol = "aup_jit_api";

struct Api {
  uint32_t version;
  // As jit.h's compile, with the runtime's entries (native_symbols(), which
  // live in the executable) and the module's hash (XXH3 of its encoding,
  // for the cache key) passed in.
  std::unique_ptr<NativeCode> (*compile)(const Module& m, const std::vector<NativeSymbol>& runtime,
                                         uint64_t module_hash, const CompileOptions& o, std::string& error,
                                         CompileStats* stats);
  bool (*function_ir)(const Module& m, std::string_view name, bool optimized, std::string& out,
                      std::string& error);
};

using ApiFn = const Api* (*)();

}  // namespace aup::vm::jit

// Defined by the module (vm/jit/jit.cpp); the loader finds it with dlsym.
extern "C" const aup::vm::jit::Api* aup_jit_api();

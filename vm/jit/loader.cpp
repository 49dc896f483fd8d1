// jit.h's entry points in the executable: they load libaupjit.so (the part
// that links LLVM, vm/jit/jit_api.h) the first time one is called, then
// call into it. Where the module is looked for, in order:
//   1. $AUP_JIT_LIB, if set (a module built elsewhere);
//   2. the build tree it was built in (AUP_JIT_BUILD_DIR), so `aup`, the
//      tests and the benches of one build use that build's module;
//   3. the install directory (AUP_JIT_INSTALL_DIR), for an installed aup.
#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "vm/jit/jit.h"
#include "vm/jit/jit_api.h"
#include "vm/module_file.h"

namespace aup::vm::jit {

namespace {

struct Loaded {
  const Api* api = nullptr;
  std::string error;  // why there is no api
};

Loaded load() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("AUP_JIT_LIB"); env && *env) paths.emplace_back(env);
  paths.emplace_back(AUP_JIT_BUILD_DIR "/libaupjit.so");
  paths.emplace_back(AUP_JIT_INSTALL_DIR "/libaupjit.so");
  Loaded out;
  for (const std::string& path : paths) {
    // RTLD_NOW: a module missing a symbol (LLVM not installed) fails here,
    // with dlerror's words, not at the first call.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      if (!out.error.empty()) out.error += "; ";
      out.error += dlerror();
      continue;
    }
    auto entry = reinterpret_cast<ApiFn>(dlsym(handle, kApiSymbol));
    const Api* api = entry ? entry() : nullptr;
    if (!api || api->version != kApiVersion) {
      out.error = fmt::format("{} is not a JIT module of this aup (rebuild it)", path);
      dlclose(handle);
      return out;
    }
    out.api = api;  // the handle stays open: the code it makes lives in it
    return out;
  }
  out.error = "cannot load the JIT module (is llvm-19 installed?): " + out.error;
  return out;
}

// Loaded once per process; read-only after.
const Loaded& loaded() {
  static const Loaded once = load();
  return once;
}

// Once the module is linked, LLVM's own pages are not needed: the code it
// made calls into aup, never into LLVM. Loading and running it touched
// about 45 MB of libLLVM (as much as TPC-C's whole state at W=1); those
// pages are clean copies of the file, so the kernel is asked to take them
// back now rather than count them as the server's for its whole life.
// (A hint: what it cannot take, such as relocated data, stays; anything
// LLVM runs later, such as its destructors at exit, is read back in.)
void give_back_llvm_pages() {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) return;
  char line[4096];
  while (std::fgets(line, sizeof line, maps)) {
    if (!std::strstr(line, "/libLLVM")) continue;
    unsigned long from = 0, to = 0;
    if (std::sscanf(line, "%lx-%lx", &from, &to) != 2 || to <= from) continue;
    ::madvise(reinterpret_cast<void*>(from), to - from, MADV_PAGEOUT);
  }
  std::fclose(maps);
}

}  // namespace

std::string_view cache_use_name(CacheUse c) {
  switch (c) {
    case CacheUse::Off: return "off";
    case CacheUse::Hit: return "hit";
    case CacheUse::Miss: return "miss";
    case CacheUse::Unwritable: return "unwritable";
  }
  return "off";
}

std::string default_cache_dir() {
  if (const char* dir = std::getenv("AUP_JIT_CACHE")) {
    std::string_view d(dir);
    return d == "off" ? std::string() : std::string(d);
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/aup/jit";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/aup/jit";
  return "";
}

std::unique_ptr<NativeCode> compile(const Module& m, const CompileOptions& o, std::string& error,
                                    CompileStats* stats) {
  const Loaded& l = loaded();
  if (!l.api) {
    error = l.error;
    return nullptr;
  }
  // The module's bytes as a module file holds them: the cache key's part
  // that says which code this is.
  std::vector<uint8_t> bytes = encode_module(m);
  uint64_t hash = XXH3_64bits(bytes.data(), bytes.size());
  std::unique_ptr<NativeCode> code = l.api->compile(m, native_symbols(), hash, o, error, stats);
  if (code) give_back_llvm_pages();
  return code;
}

bool function_ir(const Module& m, std::string_view name, bool optimized, std::string& out, std::string& error) {
  const Loaded& l = loaded();
  if (!l.api) {
    error = l.error;
    return false;
  }
  return l.api->function_ir(m, name, optimized, out, error);
}

}  // namespace aup::vm::jit

// ORC LLJIT set-up: translate (translate.cpp), optimize with LLVM's O2
// pipeline for this host's CPU, emit an object file (or read it from the
// cache, cache.h), link it and look every function up once, so nothing of
// LLVM runs after load (the code is then read by the owner and query
// threads at once without locks).
//
// Runtime calls resolve to vm/native_abi.cpp's entries through
// absoluteSymbols (the executable need not export anything); what LLVM's
// code generator itself may call (fmod for `%`, floor on CPUs without
// SSE4.1, memcpy) resolves in the process's shared libraries.
#include <dlfcn.h>
#include <fmt/format.h>
#include <xxhash.h>

#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/OptimizationLevel.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <chrono>
#include <mutex>
#include <vector>

#include "vm/jit/cache.h"
#include "vm/jit/jit_api.h"
#include "vm/jit/translate.h"

namespace aup::vm::jit {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// LLVM's target registry is process-wide; registering twice is harmless
// but not safe from two threads at once.
void init_native_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

class JitCode final : public NativeCode {
 public:
  JitCode(std::unique_ptr<llvm::orc::LLJIT> jit, std::vector<NativeFn> fns)
      : jit_(std::move(jit)), fns_(std::move(fns)) {}
  NativeFn function(uint32_t fn) const override { return fns_[fn]; }

 private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;  // owns the code's memory
  std::vector<NativeFn> fns_;
};

// The module translated, checked and (if asked) optimized for `tm`.
// Null with `error` set.
std::unique_ptr<llvm::Module> build(const Module& m, llvm::LLVMContext& context, bool optimized,
                                    llvm::TargetMachine& tm, CompileStats& stats, std::string& error) {
  auto t = Clock::now();
  std::unique_ptr<llvm::Module> mod = translate(m, context, tm.createDataLayout());
  mod->setTargetTriple(tm.getTargetTriple().str());
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*mod, &os)) {
    // The translator's bug, not the user's: say so plainly.
    error = "the JIT made invalid LLVM IR (a bug in aup): " + problems.substr(0, 2000);
    return nullptr;
  }
  stats.translate_ms = ms_since(t);
  if (!optimized) return mod;
  t = Clock::now();
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  mpm.run(*mod, mam);
  stats.optimize_ms = ms_since(t);
  return mod;
}

// The module's machine code as an ELF object (what the cache keeps and
// ORC links). Empty with `error` set if the target cannot emit one.
std::string emit_object(llvm::Module& mod, llvm::TargetMachine& tm, std::string& error) {
  llvm::SmallVector<char, 0> bytes;
  llvm::raw_svector_ostream os(bytes);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    error = "this host's LLVM target cannot emit object files";
    return "";
  }
  pm.run(mod);
  return std::string(bytes.data(), bytes.size());
}

// The cache key (vm/jit/cache.h): the module, this translator (its own
// file's bytes), LLVM, and the host the code is made for.
uint64_t cache_key(uint64_t module_hash, const llvm::orc::JITTargetMachineBuilder& jtmb) {
  Dl_info self{};
  uint64_t translator = 0;
  if (dladdr(reinterpret_cast<void*>(&cache_key), &self) && self.dli_fname) translator = file_identity(self.dli_fname);
  std::string id = fmt::format("{:016x} {:016x} {} {} {} {} {}", module_hash, translator, LLVM_VERSION_STRING,
                               jtmb.getTargetTriple().str(), jtmb.getCPU(), jtmb.getFeatures().getString(),
                               kApiVersion);
  return XXH3_64bits(id.data(), id.size());
}

// Links `object` into a new LLJIT whose runtime calls resolve to
// `runtime_symbols`, and looks every function up. Null with `error` set.
std::unique_ptr<NativeCode> link(const Module& m, const std::vector<NativeSymbol>& runtime_symbols,
                                 llvm::orc::JITTargetMachineBuilder jtmb, const std::string& object,
                                 std::string& error) {
  auto fail = [&](llvm::Error e) {
    error = llvm::toString(std::move(e));
    return nullptr;
  };
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create();
  if (!jit) return fail(jit.takeError());
  llvm::orc::JITDylib& lib = (*jit)->getMainJITDylib();
  llvm::orc::SymbolMap runtime;
  for (const NativeSymbol& s : runtime_symbols) {
    runtime[(*jit)->mangleAndIntern(s.name)] = llvm::orc::ExecutorSymbolDef(
        llvm::orc::ExecutorAddr::fromPtr(s.address), llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  }
  if (llvm::Error e = lib.define(llvm::orc::absoluteSymbols(std::move(runtime)))) return fail(std::move(e));
  auto libc = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*jit)->getDataLayout().getGlobalPrefix());
  if (!libc) return fail(libc.takeError());
  lib.addGenerator(std::move(*libc));
  if (llvm::Error e = (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object, "aup-module"))) {
    return fail(std::move(e));
  }
  // The first lookup links the object; the rest find it done.
  std::vector<NativeFn> fns;
  for (uint32_t i = 0; i < m.functions.size(); ++i) {
    auto sym = (*jit)->lookup(function_symbol(m, i));
    if (!sym) return fail(sym.takeError());
    fns.push_back(sym->toPtr<NativeFn>());
  }
  return std::make_unique<JitCode>(std::move(*jit), std::move(fns));
}

std::unique_ptr<NativeCode> compile(const Module& m, const std::vector<NativeSymbol>& runtime_symbols,
                                    uint64_t module_hash, const CompileOptions& o, std::string& error,
                                    CompileStats* stats) {
  init_native_target();
  CompileStats local;
  CompileStats& st = stats ? *stats : local;
  st.functions = static_cast<uint32_t>(m.functions.size());
  st.instructions = 0;
  for (const Function& f : m.functions) st.instructions += static_cast<uint32_t>(f.code.size());

  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) {
    error = llvm::toString(jtmb.takeError());
    return nullptr;
  }
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
  uint64_t key = o.cache_dir.empty() ? 0 : cache_key(module_hash, *jtmb);
  std::vector<char> cached;
  std::string object;
  if (!o.cache_dir.empty() && cache_read(o.cache_dir, key, cached)) {
    object.assign(cached.begin(), cached.end());
    st.cache = CacheUse::Hit;
  } else {
    auto tm = jtmb->createTargetMachine();
    if (!tm) {
      error = llvm::toString(tm.takeError());
      return nullptr;
    }
    llvm::LLVMContext context;
    std::unique_ptr<llvm::Module> mod = build(m, context, true, **tm, st, error);
    if (!mod) return nullptr;
    auto t = Clock::now();
    object = emit_object(*mod, **tm, error);
    if (object.empty()) return nullptr;
    st.codegen_ms = ms_since(t);
    if (!o.cache_dir.empty()) {
      st.cache = cache_write(o.cache_dir, key, object) ? CacheUse::Miss : CacheUse::Unwritable;
    }
  }
  auto t = Clock::now();
  std::unique_ptr<NativeCode> code = link(m, runtime_symbols, std::move(*jtmb), object, error);
  st.link_ms = ms_since(t);
  if (code) code->code_bytes = object.size();
  return code;
}

bool function_ir(const Module& m, std::string_view name, bool optimized, std::string& out, std::string& error) {
  init_native_target();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) {
    error = llvm::toString(jtmb.takeError());
    return false;
  }
  auto tm = jtmb->createTargetMachine();
  if (!tm) {
    error = llvm::toString(tm.takeError());
    return false;
  }
  llvm::LLVMContext context;
  CompileStats stats;
  std::unique_ptr<llvm::Module> mod = build(m, context, optimized, **tm, stats, error);
  if (!mod) return false;
  llvm::raw_string_ostream os(out);
  bool found = false;
  for (uint32_t i = 0; i < m.functions.size(); ++i) {
    if (!name.empty() && m.functions[i].name != name) continue;
    found = true;
    if (llvm::Function* f = mod->getFunction(function_symbol(m, i))) f->print(os);
    os << "\n";
  }
  if (!found) error = fmt::format("no function named `{}`", name);
  return found;
}

constexpr Api kApi = {kApiVersion, &compile, &function_ir};

}  // namespace

}  // namespace aup::vm::jit

// The module's one export (vm/jit/jit_api.h).
extern "C" __attribute__((visibility("default"))) const aup::vm::jit::Api* aup_jit_api() {
  return &aup::vm::jit::kApi;
}

// ORC LLJIT set-up: translate (translate.cpp), optimize with LLVM's O2
// pipeline for this host's CPU, compile, and look every function up once,
// so nothing of LLVM runs after load (the code is then read by the owner
// and query threads at once without locks).
//
// Runtime calls resolve to vm/native_abi.cpp's entries through
// absoluteSymbols (the executable need not export anything); what LLVM's
// code generator itself may call (fmod for `%`, floor on CPUs without
// SSE4.1, memcpy) resolves in the process's shared libraries.
#include <fmt/format.h>

#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/OptimizationLevel.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <chrono>
#include <mutex>
#include <vector>

#include "jit_api.h"
#include "translate.h"

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

// The module translated, checked and (if asked) optimized for this host.
// Null with `error` set.
std::unique_ptr<llvm::Module> build(const Module& m, llvm::LLVMContext& context, bool optimized,
                                    llvm::orc::JITTargetMachineBuilder& jtmb, CompileStats& stats,
                                    std::string& error) {
  auto tm = jtmb.createTargetMachine();
  if (!tm) {
    error = llvm::toString(tm.takeError());
    return nullptr;
  }
  auto t = Clock::now();
  std::unique_ptr<llvm::Module> mod = translate(m, context, (*tm)->createDataLayout());
  mod->setTargetTriple((*tm)->getTargetTriple().str());
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
  llvm::PassBuilder pb(tm->get());
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

std::unique_ptr<NativeCode> compile(const Module& m, const std::vector<NativeSymbol>& runtime_symbols,
                                    std::string& error, CompileStats* stats) {
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
  auto context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> mod = build(m, *context, true, *jtmb, st, error);
  if (!mod) return nullptr;

  auto t = Clock::now();
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit) {
    error = llvm::toString(jit.takeError());
    return nullptr;
  }
  llvm::orc::JITDylib& lib = (*jit)->getMainJITDylib();
  llvm::orc::SymbolMap runtime;
  for (const NativeSymbol& s : runtime_symbols) {
    runtime[(*jit)->mangleAndIntern(s.name)] = llvm::orc::ExecutorSymbolDef(
        llvm::orc::ExecutorAddr::fromPtr(s.address), llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  }
  auto fail = [&](llvm::Error e) {
    error = llvm::toString(std::move(e));
    return nullptr;
  };
  if (llvm::Error e = lib.define(llvm::orc::absoluteSymbols(std::move(runtime)))) return fail(std::move(e));
  auto libc = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*jit)->getDataLayout().getGlobalPrefix());
  if (!libc) return fail(libc.takeError());
  lib.addGenerator(std::move(*libc));
  if (llvm::Error e = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(mod), std::move(context)))) {
    return fail(std::move(e));
  }
  // The first lookup compiles the whole module; the rest find it done.
  std::vector<NativeFn> fns;
  for (uint32_t i = 0; i < m.functions.size(); ++i) {
    auto sym = (*jit)->lookup(function_symbol(m, i));
    if (!sym) return fail(sym.takeError());
    fns.push_back(sym->toPtr<NativeFn>());
  }
  st.codegen_ms = ms_since(t);
  return std::make_unique<JitCode>(std::move(*jit), std::move(fns));
}

bool function_ir(const Module& m, std::string_view name, bool optimized, std::string& out, std::string& error) {
  init_native_target();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) {
    error = llvm::toString(jtmb.takeError());
    return false;
  }
  llvm::LLVMContext context;
  CompileStats stats;
  std::unique_ptr<llvm::Module> mod = build(m, context, optimized, *jtmb, stats, error);
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

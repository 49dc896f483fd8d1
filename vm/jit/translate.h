// Bytecode to LLVM IR: one LLVM function per module function, in one LLVM
// module (so calls between them are direct and may be inlined). Only
// vm/jit/ includes this header: it names LLVM types.
#pragma once

#include <llvm/IR/DataLayout.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>

#include "vm/module.h"

namespace aup::vm::jit {

// The LLVM name of function `fn` of `m` (the symbol the JIT looks up).
std::string function_symbol(const Module& m, uint32_t fn);

// Translates every function of `m` (prepared: its constants are values)
// for a target with `layout` (it sets the alignment of every load and
// store). The result is not optimized; it passes llvm::verifyModule.
std::unique_ptr<llvm::Module> translate(const Module& m, llvm::LLVMContext& context, const llvm::DataLayout& layout);

}  // namespace aup::vm::jit

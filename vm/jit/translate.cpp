// Bytecode to LLVM IR. Each instruction becomes a basic block of its own
// (jumps land on them; LLVM's simplifycfg merges the rest), and each
// register an i64 stack slot that mem2reg turns into SSA values, so a
// number lives in an XMM register from the instruction that makes it to
// the one that uses it, unboxed, as the interpreter's untyped words are.
//
// What the interpreter does in its loop the code does inline: number
// arithmetic and comparisons, jumps, calls between functions, field reads
// and writes of records, array indexing, loop steps. The rest calls the
// runtime (vm/native.h, vm/native_abi.cpp), which is the interpreter's own
// code, so both engines give the same results and messages.
//
// Failures: a runtime call that fails returns 0; the code then branches to
// the function's failure block, which appends the failing instruction's
// source position (aup_fail_at) and returns false. A call to another
// function that returns false makes the caller return false at once (the
// position is the innermost one, as in the interpreter). Nothing throws.
#include "vm/jit/translate.h"

#include <fmt/format.h>

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstddef>
#include <vector>

#include "stdlib/builtins.h"
#include "vm/bytecode.h"
#include "vm/interp.h"
#include "vm/native.h"
#include "vm/value.h"

namespace aup::vm::jit {

std::string function_symbol(const Module& m, uint32_t fn) {
  return fmt::format("aup.{}.{}", fn, m.functions[fn].name);
}

namespace {

// Registers a call passes: at least one, since the callee's R[0] is where
// its result comes back (and what it returns when it never sets R[0]).
uint32_t passed_registers(const Function& f) {
  return std::max<uint32_t>(1, static_cast<uint32_t>(f.param_names.size()));
}

class Translator {
 public:
  Translator(const Module& m, llvm::LLVMContext& c, const llvm::DataLayout& layout)
      : m_(m), c_(c), mod_(std::make_unique<llvm::Module>("aup", c)), b_(c) {
    mod_->setDataLayout(layout);
    i1_ = llvm::Type::getInt1Ty(c);
    i8_ = llvm::Type::getInt8Ty(c);
    i32_ = llvm::Type::getInt32Ty(c);
    i64_ = llvm::Type::getInt64Ty(c);
    f64_ = llvm::Type::getDoubleTy(c);
    ptr_ = llvm::PointerType::get(c, 0);
    void_ = llvm::Type::getVoidTy(c);
    unlikely_ = llvm::MDBuilder(c).createBranchWeights(1, 2000);
  }

  std::unique_ptr<llvm::Module> run() {
    auto* fn_type = llvm::FunctionType::get(i1_, {ptr_, ptr_}, false);
    for (uint32_t i = 0; i < m_.functions.size(); ++i) {
      auto* f = llvm::Function::Create(fn_type, llvm::Function::ExternalLinkage, function_symbol(m_, i), *mod_);
      f->addRetAttr(llvm::Attribute::ZExt);  // a C++ bool: the whole byte is 0 or 1
      f->addParamAttr(0, llvm::Attribute::NoAlias);
      f->addParamAttr(1, llvm::Attribute::NoAlias);
      fns_.push_back(f);
    }
    for (uint32_t i = 0; i < m_.functions.size(); ++i) define(i);
    return std::move(mod_);
  }

 private:
  // ---- the runtime (vm/native_abi.cpp): declared by their first call
  llvm::Value* call(const char* name, llvm::Type* result, std::initializer_list<llvm::Value*> args) {
    std::vector<llvm::Type*> types;
    for (llvm::Value* a : args) types.push_back(a->getType());
    auto callee = mod_->getOrInsertFunction(fmt::format("aup_{}", name), llvm::FunctionType::get(result, types, false));
    return b_.CreateCall(callee, std::vector<llvm::Value*>(args));
  }
  // Text constant `k` of this function: a pointer of this process, read
  // from ctx->constants (vm/native.h says why).
  llvm::Value* text_constant(uint32_t k) {
    llvm::Value* table = b_.CreateLoad(ptr_, ctx_field(offsetof(NativeCtx, constants)));
    llvm::Value* mine = b_.CreateLoad(ptr_, b_.CreateInBoundsGEP(ptr_, table, {u64(fn_index_)}));
    return b_.CreateLoad(i64_, b_.CreateInBoundsGEP(i64_, mine, {u64(k)}));
  }
  llvm::Value* u32(uint32_t v) { return llvm::ConstantInt::get(i32_, v); }
  llvm::Value* u64(uint64_t v) { return llvm::ConstantInt::get(i64_, v); }

  // ---- registers: i64 slots made on first use, zero at entry
  llvm::AllocaInst* slot(uint32_t r) {
    if (!slots_[r]) {
      llvm::IRBuilder<> at(entry_, entry_->begin());
      slots_[r] = at.CreateAlloca(i64_, nullptr, fmt::format("r{}", r));
      // Zero first, so a register read before any write (none is, in code
      // the compiler made) is a defined value; mem2reg removes the store.
      llvm::IRBuilder<> init(zero_point_);
      init.CreateStore(u64(0), slots_[r]);
    }
    return slots_[r];
  }
  llvm::Value* reg(uint32_t r) { return b_.CreateLoad(i64_, slot(r), fmt::format("R{}", r)); }
  void set(uint32_t r, llvm::Value* v) { b_.CreateStore(v, slot(r)); }
  llvm::Value* num(uint32_t r) { return b_.CreateBitCast(reg(r), f64_); }
  void set_num(uint32_t r, llvm::Value* d) { set(r, b_.CreateBitCast(d, i64_)); }
  void set_bool(uint32_t r, llvm::Value* bit) { set(r, b_.CreateZExt(bit, i64_)); }
  llvm::Value* as_pointer(llvm::Value* v) { return b_.CreateIntToPtr(v, ptr_); }
  llvm::Value* field_ptr(llvm::Value* obj, size_t offset) {
    return b_.CreateInBoundsGEP(i8_, as_pointer(obj), {u64(offset)});
  }
  llvm::Value* ctx_field(size_t offset) { return b_.CreateInBoundsGEP(i8_, ctx_, {u64(offset)}); }

  // ---- failures
  // Branches to the failure block (position of instruction `pc`) when
  // `failed` holds, else continues in a new block.
  void fail_if(llvm::Value* failed, uint32_t pc) {
    auto* cont = llvm::BasicBlock::Create(c_, "", fn_);
    auto* here = b_.GetInsertBlock();
    b_.CreateCondBr(failed, fail_, cont, unlikely_);
    fail_pc_->addIncoming(u32(pc), here);
    b_.SetInsertPoint(cont);
  }
  void fail_now(uint32_t pc) {
    fail_pc_->addIncoming(u32(pc), b_.GetInsertBlock());
    b_.CreateBr(fail_);
  }
  // A runtime call's result: zero means it failed.
  llvm::Value* checked(llvm::Value* result, uint32_t pc) {
    fail_if(b_.CreateICmpEQ(result, llvm::Constant::getNullValue(result->getType())), pc);
    return result;
  }

  // When `bad` holds (rarely): the runtime's `failure` entry sets the
  // message, then the failure block; else on in a new block.
  void fail_when(llvm::Value* bad, const char* failure, const char* label, uint32_t pc) {
    auto* out = llvm::BasicBlock::Create(c_, label, fn_);
    auto* cont = llvm::BasicBlock::Create(c_, "", fn_);
    b_.CreateCondBr(bad, out, cont, unlikely_);
    b_.SetInsertPoint(out);
    call(failure, void_, {ctx_});
    fail_now(pc);
    b_.SetInsertPoint(cont);
  }

  // A step, as the interpreter counts one (backward jumps and calls):
  // fail `budget` when none are left or temporaries passed their bound.
  void step(uint32_t pc) {
    llvm::Value* left = b_.CreateLoad(i64_, ctx_field(offsetof(NativeCtx, steps_left)));
    fail_when(b_.CreateICmpEQ(left, u64(0)), "fail_steps", "out_of_steps", pc);
    b_.CreateStore(b_.CreateSub(left, u64(1)), ctx_field(offsetof(NativeCtx, steps_left)));
    llvm::Value* bytes_at = b_.CreateLoad(ptr_, ctx_field(offsetof(NativeCtx, temp_bytes)));
    llvm::Value* bytes = b_.CreateLoad(i64_, bytes_at);
    fail_when(b_.CreateICmpUGT(bytes, u64(kMaxTempBytes)), "fail_temp", "out_of_memory", pc);
  }

  // ---- objects
  // If the array, record or object in R[r] is shared, R[r] := a copy.
  void unshare(uint32_t r) {
    llvm::Value* obj = reg(r);
    llvm::Value* shared = b_.CreateLoad(i8_, field_ptr(obj, offsetof(ObjHeader, shared)));
    auto* copy = llvm::BasicBlock::Create(c_, "copy", fn_);
    auto* cont = llvm::BasicBlock::Create(c_, "", fn_);
    b_.CreateCondBr(b_.CreateICmpNE(shared, llvm::ConstantInt::get(i8_, 0)), copy, cont);
    b_.SetInsertPoint(copy);
    set(r, call("copy_obj", i64_, {ctx_, obj}));
    b_.CreateBr(cont);
    b_.SetInsertPoint(cont);
  }
  // The item index R[index] of array `array` (a Value), checked as
  // Vm::index_of checks it: a whole number in [0, len).
  llvm::Value* index(llvm::Value* array, uint32_t index, uint32_t pc) {
    llvm::Value* i = num(index);
    llvm::Value* len = b_.CreateLoad(i32_, field_ptr(array, offsetof(ArrayObj, len)));
    llvm::Value* whole = b_.CreateFCmpOEQ(i, b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, i));
    llvm::Value* ok = b_.CreateAnd(b_.CreateAnd(b_.CreateFCmpOGE(i, llvm::ConstantFP::get(f64_, 0.0)),
                                                b_.CreateFCmpOLT(i, b_.CreateUIToFP(len, f64_))),
                                   whole);
    auto* bad = llvm::BasicBlock::Create(c_, "out_of_range", fn_);
    auto* cont = llvm::BasicBlock::Create(c_, "", fn_);
    b_.CreateCondBr(ok, cont, bad, llvm::MDBuilder(c_).createBranchWeights(2000, 1));
    b_.SetInsertPoint(bad);
    call("fail_index", void_, {ctx_, array, reg(index)});
    fail_now(pc);
    b_.SetInsertPoint(cont);
    return b_.CreateFPToUI(i, i64_);
  }
  llvm::Value* item_ptr(llvm::Value* array, llvm::Value* k) {
    llvm::Value* items = b_.CreateLoad(ptr_, field_ptr(array, offsetof(ArrayObj, items)));
    return b_.CreateInBoundsGEP(i64_, items, {k});
  }

  // ---- functions
  void define(uint32_t fi) {
    const Function& f = m_.functions[fi];
    fn_ = fns_[fi];
    fn_index_ = fi;
    ctx_ = fn_->getArg(0);
    llvm::Value* in = fn_->getArg(1);
    slots_.assign(kMaxRegisters + 3, nullptr);
    entry_ = llvm::BasicBlock::Create(c_, "entry", fn_);
    b_.SetInsertPoint(entry_);
    // Calls pass registers through this buffer (the callee's `in`).
    uint32_t buffer = 1;
    for (Instr i : f.code) {
      if (op_of(i) == Op::CALL) buffer = std::max(buffer, passed_registers(m_.functions[bx_of(i)]));
      if (op_of(i) == Op::CALLB || op_of(i) == Op::KEY) buffer = std::max(buffer, c_of(i));
      if (op_of(i) == Op::KEYPFX) buffer = std::max(buffer, std::max(c_of(i), 2u));
    }
    args_ = b_.CreateAlloca(i64_, u32(buffer), "args");
    item_ = b_.CreateAlloca(i64_, nullptr, "item");
    zero_point_ = b_.CreateAlloca(i8_, nullptr, "zeroes_before");  // stores of zero go before it
    for (uint32_t r = 0; r < passed_registers(f); ++r) {
      set(r, b_.CreateLoad(i64_, b_.CreateInBoundsGEP(i64_, in, {u64(r)})));
    }
    // One block per instruction, and one past the end (returns, in case
    // the code runs off its end; the compiler always ends with RET0).
    std::vector<llvm::BasicBlock*> blocks;
    for (uint32_t pc = 0; pc <= f.code.size(); ++pc) {
      blocks.push_back(llvm::BasicBlock::Create(c_, fmt::format("i{}", pc), fn_));
    }
    b_.CreateBr(blocks[0]);

    fail_ = llvm::BasicBlock::Create(c_, "failed", fn_);
    b_.SetInsertPoint(fail_);
    fail_pc_ = b_.CreatePHI(i32_, 4, "failed_pc");
    call("fail_at", void_, {ctx_, u32(fi), fail_pc_});
    b_.CreateRet(llvm::ConstantInt::getFalse(c_));
    propagate_ = llvm::BasicBlock::Create(c_, "callee_failed", fn_);
    b_.SetInsertPoint(propagate_);
    b_.CreateRet(llvm::ConstantInt::getFalse(c_));

    for (uint32_t pc = 0; pc < f.code.size(); ++pc) {
      b_.SetInsertPoint(blocks[pc]);
      Instr i = f.code[pc];
      // Only jumps have a target: other instructions' upper bits are not one.
      Op op = op_of(i);
      bool jumps = op == Op::JMP || op == Op::JT || op == Op::JF || op == Op::NEXT || op == Op::RNEXT;
      llvm::BasicBlock* jump = jumps ? blocks[static_cast<size_t>(int64_t{pc} + 1 + sbx_of(i))] : nullptr;
      if (!instruction(f, i, pc, in, blocks[pc + 1], jump)) {
        b_.CreateBr(blocks[pc + 1]);
      }
    }
    b_.SetInsertPoint(blocks[f.code.size()]);
    ret(in, 0);
    // Drop the marker; the entry block falls through to i0.
    zero_point_->eraseFromParent();
  }

  void ret(llvm::Value* in, uint32_t r) {
    b_.CreateStore(reg(r), in);
    b_.CreateRet(llvm::ConstantInt::getTrue(c_));
  }

  // Emits instruction `i` at `pc`. Returns true if it ended its block
  // (a jump, return or failure), false to fall through to `next`.
  bool instruction(const Function& f, Instr i, uint32_t pc, llvm::Value* in, llvm::BasicBlock* next,
                   llvm::BasicBlock* jump) {
    uint32_t A = a_of(i), B = b_of(i), C = c_of(i), BX = bx_of(i);
    int32_t SBX = sbx_of(i);
    switch (op_of(i)) {
      case Op::MOVE: set(A, reg(B)); break;
      case Op::LOADK:
        // Numbers and bools are their bits; a text is a pointer of this
        // process, read from ctx->constants (vm/native.h says why).
        if (f.constants[BX].kind == Constant::Kind::Text) {
          set(A, text_constant(BX));
        } else {
          set(A, u64(f.kvalues[BX]));
        }
        break;
      case Op::LOADI: set(A, u64(std::bit_cast<uint64_t>(static_cast<double>(SBX)))); break;
      case Op::LOADB: set(A, u64(B != 0)); break;
      case Op::SHARE: b_.CreateStore(llvm::ConstantInt::get(i8_, 1), field_ptr(reg(A), offsetof(ObjHeader, shared))); break;
      case Op::UNSHARE: unshare(A); break;
      case Op::NOW: set(A, b_.CreateLoad(i64_, ctx_field(offsetof(NativeCtx, now)))); break;

      case Op::ADD: set_num(A, b_.CreateFAdd(num(B), num(C))); break;
      case Op::SUB: set_num(A, b_.CreateFSub(num(B), num(C))); break;
      case Op::MUL: set_num(A, b_.CreateFMul(num(B), num(C))); break;
      case Op::DIV: set_num(A, b_.CreateFDiv(num(B), num(C))); break;
      case Op::MOD: set_num(A, mod(num(B), num(C))); break;
      case Op::NEG: set_num(A, b_.CreateFNeg(num(B))); break;
      case Op::CONCAT: set(A, checked(call("concat", i64_, {ctx_, reg(B), reg(C)}), pc)); break;
      case Op::NOT: set(A, b_.CreateXor(reg(B), u64(1))); break;
      case Op::EQ: set_bool(A, b_.CreateFCmpOEQ(num(B), num(C))); break;
      case Op::LT: set_bool(A, b_.CreateFCmpOLT(num(B), num(C))); break;
      case Op::LE: set_bool(A, b_.CreateFCmpOLE(num(B), num(C))); break;
      case Op::EQT:
        set_bool(A, b_.CreateICmpNE(call("text_eq", i32_, {reg(B), reg(C)}), u32(0)));
        break;
      case Op::LTT:
        set_bool(A, b_.CreateICmpSLT(call("text_cmp", i32_, {reg(B), reg(C)}), u32(0)));
        break;
      case Op::LET:
        set_bool(A, b_.CreateICmpSLE(call("text_cmp", i32_, {reg(B), reg(C)}), u32(0)));
        break;
      case Op::EQB: set_bool(A, b_.CreateICmpEQ(reg(B), reg(C))); break;
      case Op::EQR:
        set_bool(A, b_.CreateICmpNE(call("rec_equal", i32_, {ctx_, reg(B), reg(C)}), u32(0)));
        break;

      case Op::JMP:
        if (SBX < 0) step(pc);
        b_.CreateBr(jump);
        return true;
      case Op::JT:
        b_.CreateCondBr(b_.CreateICmpNE(reg(A), u64(0)), jump, next);
        return true;
      case Op::JF:
        b_.CreateCondBr(b_.CreateICmpEQ(reg(A), u64(0)), jump, next);
        return true;
      case Op::CALL: {
        step(pc);
        llvm::Value* depth_at = ctx_field(offsetof(NativeCtx, depth));
        llvm::Value* depth = b_.CreateLoad(i32_, depth_at);
        fail_when(b_.CreateICmpUGE(depth, u32(kMaxCallDepth)), "fail_depth", "too_deep", pc);
        b_.CreateStore(b_.CreateAdd(depth, u32(1)), depth_at);
        uint32_t n = passed_registers(m_.functions[BX]);
        for (uint32_t k = 0; k < n; ++k) b_.CreateStore(reg(A + k), b_.CreateInBoundsGEP(i64_, args_, {u64(k)}));
        llvm::Value* ok = b_.CreateCall(fns_[BX], {ctx_, args_});
        b_.CreateStore(depth, depth_at);
        auto* back = llvm::BasicBlock::Create(c_, "", fn_);
        b_.CreateCondBr(ok, back, propagate_);
        b_.SetInsertPoint(back);
        set(A, b_.CreateLoad(i64_, args_));
        break;
      }
      case Op::CALLB: {
        if (inline_builtin(static_cast<stdlib::BuiltinId>(B), A, C)) break;
        for (uint32_t k = 0; k < C; ++k) b_.CreateStore(reg(A + k), b_.CreateInBoundsGEP(i64_, args_, {u64(k)}));
        checked(call("callb", i32_, {ctx_, u32(B), args_, u32(C)}), pc);
        set(A, b_.CreateLoad(i64_, args_));
        break;
      }
      case Op::RET: ret(in, A); return true;
      case Op::RET0: ret(in, 0); return true;
      case Op::FAIL:
        call("fail_text", void_, {ctx_, reg(A)});
        fail_now(pc);
        return true;

      case Op::GETV: set(A, call("getv", i64_, {ctx_, u32(BX)})); break;
      case Op::SETV: checked(call("setv", i32_, {ctx_, u32(BX), reg(A)}), pc); break;

      case Op::TGET: set(A, checked(call("tget", i64_, {ctx_, u32(BX), reg(A)}), pc)); break;
      case Op::THAS: set_bool(A, b_.CreateICmpNE(call("thas", i32_, {ctx_, u32(BX), reg(A)}), u32(0))); break;
      case Op::TADD: checked(call("tadd", i32_, {ctx_, u32(BX), reg(A)}), pc); break;
      case Op::TPUT: checked(call("tput", i32_, {ctx_, u32(BX), reg(A)}), pc); break;
      case Op::TDEL: checked(call("tdel", i32_, {ctx_, u32(BX), reg(A)}), pc); break;
      case Op::TAT: set(A, checked(call("tat", i64_, {ctx_, u32(BX), reg(A)}), pc)); break;
      case Op::TCOUNT: set(A, call("tcount", i64_, {ctx_, u32(BX)})); break;
      case Op::TFIRST: set(A, checked(call("tend", i64_, {ctx_, u32(BX), u32(0)}), pc)); break;
      case Op::TLAST: set(A, checked(call("tend", i64_, {ctx_, u32(BX), u32(1)}), pc)); break;
      case Op::TVIEW: set(A, call("tview", i64_, {ctx_, u32(BX), reg(A), reg(A + 1)})); break;
      case Op::TITER: set(A, call("titer", i64_, {ctx_, u32(BX)})); break;
      case Op::KEY:
      case Op::KEYPFX: {
        bool prefix = op_of(i) == Op::KEYPFX;
        for (uint32_t k = 0; k < C; ++k) b_.CreateStore(reg(A + k), b_.CreateInBoundsGEP(i64_, args_, {u64(k)}));
        checked(call("make_key", i32_, {ctx_, args_, u32(B), u32(C), u32(prefix)}), pc);
        set(A, b_.CreateLoad(i64_, args_));
        if (prefix) set(A + 1, b_.CreateLoad(i64_, b_.CreateInBoundsGEP(i64_, args_, {u64(1)})));
        break;
      }

      case Op::RGET: {
        llvm::Value* row = checked(call("row_read", ptr_, {ctx_, reg(B)}), pc);
        set(A, b_.CreateLoad(i64_, b_.CreateInBoundsGEP(i64_, row, {u64(C)})));
        break;
      }
      case Op::RSET: checked(call("rset", i32_, {ctx_, reg(A), u32(B), reg(C)}), pc); break;
      case Op::ROWVAL: set(A, checked(call("rowval", i64_, {ctx_, reg(B)}), pc)); break;

      case Op::VCOUNT: set(A, call("vcount", i64_, {ctx_, reg(B)})); break;
      case Op::VFIRST: set(A, checked(call("vend", i64_, {ctx_, reg(B), u32(0)}), pc)); break;
      case Op::VLAST: set(A, checked(call("vend", i64_, {ctx_, reg(B), u32(1)}), pc)); break;
      case Op::VEMPTY: set_bool(A, b_.CreateICmpNE(call("vempty", i32_, {ctx_, reg(B)}), u32(0))); break;
      case Op::VITER: set(A, call("viter", i64_, {ctx_, reg(B)})); break;
      case Op::VARR: set(A, call("varr", i64_, {ctx_, reg(B)})); break;
      case Op::VAT: set(A, checked(call("vat", i64_, {ctx_, reg(B), reg(C)}), pc)); break;
      case Op::IVIEW: set(A, call("iview", i64_, {ctx_, u32(BX), reg(A), reg(A + 1)})); break;
      case Op::IALL: set(A, call("iall", i64_, {ctx_, u32(BX)})); break;
      case Op::IGET: set(A, checked(call("iget", i64_, {ctx_, u32(BX), reg(A), reg(A + 1)}), pc)); break;
      case Op::TITERD: set(A, call("titerd", i64_, {ctx_, u32(BX)})); break;
      case Op::TFIND: set(A, call("tfind", i64_, {ctx_, u32(BX), reg(A)})); break;
      case Op::IFIND: set(A, call("ifind", i64_, {ctx_, u32(BX), reg(A), reg(A + 1)})); break;
      case Op::SORT: set(A, call("sort", i64_, {ctx_, reg(A), text_constant(BX)})); break;
      case Op::VITERD: set(A, call("viterd", i64_, {ctx_, reg(B)})); break;

      case Op::NEWREC: set(A, call("newrec", i64_, {ctx_, u32(BX)})); break;
      case Op::NEWOBJ: set(A, call("newobj", i64_, {ctx_, u32(BX)})); break;
      case Op::GETF:
        set(A, b_.CreateLoad(i64_, field_ptr(reg(B), offsetof(RecObj, fields) + C * sizeof(Value))));
        break;
      case Op::SETF:
        unshare(A);
        b_.CreateStore(reg(C), field_ptr(reg(A), offsetof(RecObj, fields) + B * sizeof(Value)));
        break;

      case Op::NEWARR: set(A, call("newarr", i64_, {ctx_, u32(B != 0)})); break;
      case Op::AGET: {
        llvm::Value* array = reg(B);
        llvm::Value* k = index(array, C, pc);
        set(A, b_.CreateLoad(i64_, item_ptr(array, k)));
        break;
      }
      case Op::ASET: {
        llvm::Value* k = index(reg(A), B, pc);
        unshare(A);
        b_.CreateStore(reg(C), item_ptr(reg(A), k));
        break;
      }
      case Op::APUSH:
        unshare(A);
        checked(call("push", i32_, {ctx_, reg(A), reg(B)}), pc);
        break;
      case Op::APOP: {
        llvm::Value* len = b_.CreateLoad(i32_, field_ptr(reg(B), offsetof(ArrayObj, len)));
        fail_when(b_.CreateICmpEQ(len, u32(0)), "fail_pop", "pop_empty", pc);
        unshare(B);
        llvm::Value* array = reg(B);
        llvm::Value* len_at = field_ptr(array, offsetof(ArrayObj, len));
        llvm::Value* last = b_.CreateSub(b_.CreateLoad(i32_, len_at), u32(1));
        b_.CreateStore(last, len_at);
        set(A, b_.CreateLoad(i64_, item_ptr(array, b_.CreateZExt(last, i64_))));
        break;
      }
      case Op::ALEN: {
        llvm::Value* len = b_.CreateLoad(i32_, field_ptr(reg(B), offsetof(ArrayObj, len)));
        set_num(A, b_.CreateUIToFP(len, f64_));
        break;
      }
      case Op::AITER: set(A, call("aiter", i64_, {ctx_, reg(B)})); break;
      case Op::DISTINCT: set(A, checked(call("distinct", i64_, {ctx_, reg(B), u32(C)}), pc)); break;

      case Op::NEXT: next_item(A, next, jump); return true;
      case Op::RNEXT: {
        llvm::Value* c = num(A);
        auto* body = llvm::BasicBlock::Create(c_, "", fn_);
        b_.CreateCondBr(b_.CreateFCmpOLT(c, num(A + 1)), body, jump);
        b_.SetInsertPoint(body);
        set(A + 2, reg(A));
        set_num(A, b_.CreateFAdd(c, llvm::ConstantFP::get(f64_, 1.0)));
        b_.CreateBr(next);
        return true;
      }
    }
    return false;
  }

  // `%` as vm/value.h's num_mod: whole numbers below 2^53 by integer
  // division (copysign keeps -0 for a negative dividend), others by frem,
  // which is C's fmod.
  llvm::Value* mod(llvm::Value* a, llvm::Value* b) {
    auto small_whole = [&](llvm::Value* x) {
      llvm::Value* small = b_.CreateFCmpOLT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x),
                                            llvm::ConstantFP::get(f64_, 0x1p53));
      return b_.CreateAnd(small, b_.CreateFCmpOEQ(x, b_.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, x)));
    };
    llvm::Value* fast = b_.CreateAnd(b_.CreateAnd(small_whole(a), small_whole(b)),
                                     b_.CreateFCmpONE(b, llvm::ConstantFP::get(f64_, 0.0)));
    auto* whole = llvm::BasicBlock::Create(c_, "mod_whole", fn_);
    auto* general = llvm::BasicBlock::Create(c_, "mod_fmod", fn_);
    auto* done = llvm::BasicBlock::Create(c_, "", fn_);
    b_.CreateCondBr(fast, whole, general);
    b_.SetInsertPoint(whole);
    llvm::Value* r = b_.CreateSRem(b_.CreateFPToSI(a, i64_), b_.CreateFPToSI(b, i64_));
    llvm::Value* quick = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, b_.CreateSIToFP(r, f64_), a);
    b_.CreateBr(done);
    b_.SetInsertPoint(general);
    llvm::Value* slow = b_.CreateFRem(a, b);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    llvm::PHINode* result = b_.CreatePHI(f64_, 2);
    result->addIncoming(quick, whole);
    result->addIncoming(slow, general);
    return result;
  }

  // The number built-ins that are one machine instruction or a few:
  // computed inline (LLVM's intrinsics are the C functions stdlib/ calls,
  // exactly). False for the others, which go through the runtime.
  bool inline_builtin(stdlib::BuiltinId id, uint32_t A, uint32_t argc) {
    llvm::Intrinsic::ID unary = llvm::Intrinsic::not_intrinsic;
    switch (id) {
      case stdlib::BuiltinId::Abs: unary = llvm::Intrinsic::fabs; break;
      case stdlib::BuiltinId::Floor: unary = llvm::Intrinsic::floor; break;
      case stdlib::BuiltinId::Ceil: unary = llvm::Intrinsic::ceil; break;
      case stdlib::BuiltinId::Round: unary = llvm::Intrinsic::round; break;  // halves away from zero
      case stdlib::BuiltinId::Sqrt: unary = llvm::Intrinsic::sqrt; break;
      case stdlib::BuiltinId::Min:
      case stdlib::BuiltinId::Max: {
        // As stdlib's impl_min/impl_max: any NaN makes NaN; on a tie the
        // first argument stays (it matters for -0 and 0).
        bool least = id == stdlib::BuiltinId::Min;
        llvm::Value* m = num(A);
        for (uint32_t k = 1; k < argc; ++k) {
          llvm::Value* x = num(A + k);
          llvm::Value* either_nan = b_.CreateFCmpUNO(x, m);
          llvm::Value* better = least ? b_.CreateFCmpOLT(x, m) : b_.CreateFCmpOGT(x, m);
          m = b_.CreateSelect(either_nan, llvm::ConstantFP::getNaN(f64_), b_.CreateSelect(better, x, m));
        }
        set_num(A, m);
        return true;
      }
      default: return false;
    }
    set_num(A, b_.CreateUnaryIntrinsic(unary, num(A)));
    return true;
  }

  // NEXT: an array loop's round inline (the common case in compute-heavy
  // handlers), a table loop's through the runtime (a cursor step).
  void next_item(uint32_t A, llvm::BasicBlock* next, llvm::BasicBlock* done) {
    llvm::Value* it = reg(A);
    llvm::Value* kind = b_.CreateLoad(i8_, field_ptr(it, offsetof(IterObj, kind)));
    auto* array_loop = llvm::BasicBlock::Create(c_, "array_next", fn_);
    auto* rows_loop = llvm::BasicBlock::Create(c_, "rows_next", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(kind, llvm::ConstantInt::get(i8_, static_cast<uint8_t>(IterKind::Array))),
                    array_loop, rows_loop);

    b_.SetInsertPoint(array_loop);
    llvm::Value* index_at = field_ptr(it, offsetof(IterObj, index));
    llvm::Value* at = b_.CreateLoad(i32_, index_at);
    llvm::Value* array = b_.CreateLoad(i64_, field_ptr(it, offsetof(IterObj, array)));
    llvm::Value* len = b_.CreateLoad(i32_, field_ptr(array, offsetof(ArrayObj, len)));
    auto* take = llvm::BasicBlock::Create(c_, "", fn_);
    b_.CreateCondBr(b_.CreateICmpUGE(at, len), done, take);
    b_.SetInsertPoint(take);
    set(A + 1, b_.CreateLoad(i64_, item_ptr(array, b_.CreateZExt(at, i64_))));
    b_.CreateStore(b_.CreateAdd(at, u32(1)), index_at);
    b_.CreateBr(next);

    b_.SetInsertPoint(rows_loop);
    llvm::Value* more = call("next", i32_, {ctx_, it, item_});
    auto* got = llvm::BasicBlock::Create(c_, "", fn_);
    b_.CreateCondBr(b_.CreateICmpNE(more, u32(0)), got, done);
    b_.SetInsertPoint(got);
    set(A + 1, b_.CreateLoad(i64_, item_));
    b_.CreateBr(next);
  }

  const Module& m_;
  llvm::LLVMContext& c_;
  std::unique_ptr<llvm::Module> mod_;
  llvm::IRBuilder<> b_;
  llvm::Type *i1_, *i8_, *i32_, *i64_, *f64_, *ptr_, *void_;
  llvm::MDNode* unlikely_;
  std::vector<llvm::Function*> fns_;

  // The function being defined.
  llvm::Function* fn_ = nullptr;
  uint32_t fn_index_ = 0;
  llvm::Value* ctx_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::Instruction* zero_point_ = nullptr;
  std::vector<llvm::AllocaInst*> slots_;
  llvm::Value* args_ = nullptr;
  llvm::Value* item_ = nullptr;
  llvm::BasicBlock* fail_ = nullptr;
  llvm::PHINode* fail_pc_ = nullptr;
  llvm::BasicBlock* propagate_ = nullptr;
};

}  // namespace

std::unique_ptr<llvm::Module> translate(const Module& m, llvm::LLVMContext& context, const llvm::DataLayout& layout) {
  return Translator(m, context, layout).run();
}

}  // namespace aup::vm::jit

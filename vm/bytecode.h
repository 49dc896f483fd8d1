// Instructions: one 32-bit word each, register based.
//
//   31          24 23          16 15           8 7            0
//  +--------------+--------------+--------------+--------------+
//  |      C       |      B       |      A       |    opcode    |  N, A, AB, ABC
//  +--------------+--------------+--------------+--------------+
//  |          Bx (0..65535)      |      A       |    opcode    |  ABx
//  +-----------------------------+--------------+--------------+
//  |   sBx + 32767 (-32767..32768)|     A       |    opcode    |  AsBx, sBx
//  +-----------------------------+--------------+--------------+
//
// The opcode sits in the low byte so decoding it is one mask. Registers are
// the frame's slots 0..255: the checker's locals first (parameters from 0),
// then temporaries. A call passes its arguments in consecutive registers
// and the callee's frame starts at the first of them (a sliding window:
// no copying of arguments). Why registers rather than a stack: aup handlers
// are dominated by field reads and table seeks whose operands are locals;
// three-address instructions name them directly, where a stack machine
// would spend a push for each (measured by Lua 5's move to registers).
//
// Limits (the compiler reports an error before any is passed):
//   registers per frame   256  (locals at most 200, compiler/checker.h)
//   constants, functions, tables, vars, records, shapes, types: 65,536 each
//   jump distance         32,767 instructions either way
//   fields per record     255
//
// Version history of the instruction set: 1 (2026-11): the first; 2
// (2026-12): KEY and KEYPFX, for composite keys.
#pragma once

#include <cassert>
#include <cstdint>
#include <string_view>

namespace aup::vm {

enum class Op : uint8_t {
#define AUP_OP(name, format, meaning) name,
#include "vm/opcodes.def"
#undef AUP_OP
};
inline constexpr uint32_t kOpCount = 0
#define AUP_OP(name, format, meaning) +1
#include "vm/opcodes.def"
#undef AUP_OP
    ;

enum class OpFormat : uint8_t { N, A, AB, ABC, ABx, AsBx, sBx };

std::string_view op_name(Op op);
OpFormat op_format(Op op);
std::string_view op_meaning(Op op);

using Instr = uint32_t;

inline constexpr uint32_t kMaxRegisters = 256;
inline constexpr uint32_t kMaxBx = 65535;
inline constexpr int32_t kSBxBias = 32767;
inline constexpr int32_t kMaxJump = 32767;

constexpr Instr make_abc(Op op, uint32_t a, uint32_t b = 0, uint32_t c = 0) {
  assert(a < 256 && b < 256 && c < 256);
  return static_cast<uint32_t>(op) | a << 8 | b << 16 | c << 24;
}
constexpr Instr make_abx(Op op, uint32_t a, uint32_t bx) {
  assert(a < 256 && bx <= kMaxBx);
  return static_cast<uint32_t>(op) | a << 8 | bx << 16;
}
constexpr Instr make_asbx(Op op, uint32_t a, int32_t sbx) {
  assert(a < 256 && sbx >= -kSBxBias && sbx <= kSBxBias + 1);
  return static_cast<uint32_t>(op) | a << 8 | static_cast<uint32_t>(sbx + kSBxBias) << 16;
}

constexpr Op op_of(Instr i) { return static_cast<Op>(i & 0xFF); }
constexpr uint32_t a_of(Instr i) { return (i >> 8) & 0xFF; }
constexpr uint32_t b_of(Instr i) { return (i >> 16) & 0xFF; }
constexpr uint32_t c_of(Instr i) { return i >> 24; }
constexpr uint32_t bx_of(Instr i) { return i >> 16; }
constexpr int32_t sbx_of(Instr i) { return static_cast<int32_t>(i >> 16) - kSBxBias; }

// The kinds of item DISTINCT compares (operand C).
enum class ItemKind : uint8_t { Num, Text, Bool, Record };

// SORT's keys: a text constant of byte pairs, most significant key first:
// a record field's number (kSortItself: the item itself, for an array of
// numbers, texts or bools), then its ItemKind (Num, Text or Bool) with
// kSortDescending set for a key sorted greatest first.
inline constexpr uint8_t kSortItself = 0xFF;
inline constexpr uint8_t kSortKindMask = 0x03;
inline constexpr uint8_t kSortDescending = 0x80;

}  // namespace aup::vm

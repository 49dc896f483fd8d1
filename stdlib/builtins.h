// The built-in functions of aup: one table holding each built-in's name,
// signature, meaning and implementation. The checker reads the signatures;
// the VM calls the implementations (CALLB). `distinct` and `now` are
// instructions of their own (DISTINCT, NOW): they need the VM's values.
//
// Implementations take plain C++ values, so this library depends on
// nothing of the VM: numbers as doubles, texts as byte views; a text
// result (only `text(n)`) is written to a small buffer the VM copies out.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace aup::stdlib {

// The types a built-in signature can name.
enum class Ty : uint8_t {
  Num,
  Text,
  Bool,
  AnyArray,   // any array `[T]`; with Ty::SameArray as the result, the same `[T]`
  SameArray,
};

enum class BuiltinId : uint8_t {
#define AUP_BUILTIN(id, name, min_args, max_args, p0, p1, result, impl, meaning) id,
#include "stdlib/builtins.def"
#undef AUP_BUILTIN
};

// `max_args` of a built-in that takes any number of arguments.
inline constexpr uint8_t kVariadic = 255;

struct BuiltinArg {
  double num = 0;
  std::string_view text;
};

// Room for the shortest round-trip text of any binary64 (at most 24 bytes).
inline constexpr size_t kBuiltinTextRoom = 32;

struct BuiltinResult {
  double num = 0;
  char text[kBuiltinTextRoom];
  uint32_t text_len = 0;
};

enum class BuiltinStatus : uint8_t { Ok, BadNumber };

using BuiltinImpl = BuiltinStatus (*)(std::span<const BuiltinArg> args, BuiltinResult& out);

struct Builtin {
  BuiltinId id;
  std::string_view name;
  uint8_t min_args;
  uint8_t max_args;   // kVariadic: every argument after the first has type params[1]
  Ty params[2];       // types of the first two parameters (unused slots: Num)
  Ty result;
  bool is_value;      // `now`: used without a call
  BuiltinImpl impl;   // null for the built-ins that are instructions
  std::string_view meaning;

  Ty param(size_t i) const { return params[i < 1 ? 0 : 1]; }
};

std::span<const Builtin> builtins();
const Builtin* find_builtin(std::string_view name);
const Builtin& builtin(BuiltinId id);

}  // namespace aup::stdlib

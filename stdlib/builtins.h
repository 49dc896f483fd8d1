// The built-in functions of aup: one table holding each built-in's name,
// signature and meaning. The checker reads the signatures from here; the
// VM (a later issue) adds each one's implementation to the same entries.
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
#define AUP_BUILTIN(id, name, min_args, max_args, p0, p1, result, meaning) id,
#include "builtins.def"
#undef AUP_BUILTIN
};

// `max_args` of a built-in that takes any number of arguments.
inline constexpr uint8_t kVariadic = 255;

struct Builtin {
  BuiltinId id;
  std::string_view name;
  uint8_t min_args;
  uint8_t max_args;   // kVariadic: every argument after the first has type params[1]
  Ty params[2];       // types of the first two parameters (unused slots: Num)
  Ty result;
  bool is_value;      // `now`: used without a call
  std::string_view meaning;

  Ty param(size_t i) const { return params[i < 1 ? 0 : 1]; }
};

std::span<const Builtin> builtins();
const Builtin* find_builtin(std::string_view name);
const Builtin& builtin(BuiltinId id);

}  // namespace aup::stdlib

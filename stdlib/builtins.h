// The built-in functions and methods of aup: one table holding each
// built-in's name, form, signature, meaning and implementation. The
// checker reads the signatures; the VM calls the implementations (CALLB).
// `distinct`, `sorted` and `now` are instructions of their own (DISTINCT,
// SORT, NOW): they need the VM's values.
//
// Implementations take plain C++ values, so this library depends on
// nothing of the VM: numbers as doubles, texts as byte views, arrays of
// them as spans. A text result is a view into an argument or into the
// caller's scratch string, which the VM copies out; an array of texts is
// the caller's vector of views. The text methods themselves are in
// stdlib/texts.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace aup::stdlib {

// The types a built-in signature can name.
enum class Ty : uint8_t {
  Num,
  Text,
  Bool,
  TextArray,  // `[text]`
  NumArray,   // `[num]`
  AnyArray,   // any array `[T]`; with Ty::SameArray as the result, the same `[T]`
  SameArray,
};

enum class Form : uint8_t { Fn, Method };

enum class BuiltinId : uint8_t {
#define AUP_BUILTIN(id, form, name, min_args, max_args, p0, p1, p2, result, impl, meaning) id,
#include "stdlib/builtins.def"
#undef AUP_BUILTIN
};

// `max_args` of a built-in that takes any number of arguments.
inline constexpr uint8_t kVariadic = 255;

struct BuiltinArg {
  double num = 0;
  std::string_view text;
  std::span<const std::string_view> texts;  // TextArray
  std::span<const double> nums;             // NumArray
};

// Room for the shortest round-trip text of any binary64 (at most 24 bytes).
inline constexpr size_t kBuiltinTextRoom = 32;

struct BuiltinResult {
  explicit BuiltinResult(std::string& s, std::vector<std::string_view>& p) : scratch(s), parts(p) {}
  double num = 0;        // Num
  bool truth = false;    // Bool
  std::string_view text; // Text: into an argument, `room` or `scratch`
  // Text: the result is argument 0 itself, unchanged (no copy is needed).
  bool same_as_receiver = false;
  uint32_t item = 0;     // `min`/`max` of an array: the position of the item
  bool item_result = false;
  char room[kBuiltinTextRoom];
  std::string& scratch;                    // reused between calls by the caller
  std::vector<std::string_view>& parts;    // TextArray: views into argument 0
  std::string detail;                      // a failure's particulars
};

enum class BuiltinStatus : uint8_t {
  Ok,
  BadNumber,   // `num()` of a text that is no number
  OutOfRange,  // a position that is not whole, a pad fill not one code point, an empty array's min
  TooLong,     // a text result over kMaxResultTextBytes
};

using BuiltinImpl = BuiltinStatus (*)(std::span<const BuiltinArg> args, BuiltinResult& out);

struct Builtin {
  BuiltinId id;
  Form form;
  std::string_view name;
  uint8_t min_args;   // in the parentheses (a method's receiver is not counted)
  uint8_t max_args;   // kVariadic: every argument after the last typed one has type params[2]
  Ty params[3];       // types of the first three values passed: a method's receiver first (unused: Num)
  Ty result;
  bool is_value;      // `now`: used without a call
  BuiltinImpl impl;   // null for the built-ins that are instructions
  std::string_view meaning;

  // The type of value i of a CALLB (a method's receiver is value 0).
  Ty param(size_t i) const { return params[i < 2 ? i : 2]; }
  // Values a CALLB passes for `args` in the parentheses.
  size_t values(size_t args) const { return args + (form == Form::Method ? 1 : 0); }
};

std::span<const Builtin> builtins();
// A function by name (methods are not found: their names are not reserved).
const Builtin* find_builtin(std::string_view name);
// The method `name` of a receiver of type `receiver` (Text, TextArray,
// NumArray, or AnyArray for any array), or null.
const Builtin* find_method(Ty receiver, std::string_view name);
// Every method name of a receiver type, for "did you mean" and member lists.
std::vector<std::string_view> method_names(Ty receiver);
const Builtin& builtin(BuiltinId id);

}  // namespace aup::stdlib

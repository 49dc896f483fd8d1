#include "builtins.h"

#include <array>
#include <cassert>

namespace aup::stdlib {

namespace {
constexpr std::array kBuiltins = {
#define AUP_BUILTIN(id, name, min_args, max_args, p0, p1, result, meaning)                   \
  Builtin{BuiltinId::id, name, min_args, max_args, {Ty::p0, Ty::p1}, Ty::result,             \
          std::string_view(name) == "now", meaning},
#include "builtins.def"
#undef AUP_BUILTIN
};
}  // namespace

std::span<const Builtin> builtins() { return kBuiltins; }

const Builtin* find_builtin(std::string_view name) {
  for (const Builtin& b : kBuiltins) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

const Builtin& builtin(BuiltinId id) {
  const Builtin& b = kBuiltins[static_cast<size_t>(id)];
  assert(b.id == id);
  return b;
}

}  // namespace aup::stdlib

#include "stdlib/builtins.h"

#include <array>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace aup::stdlib {

namespace {

// min and max: a NaN argument makes the result NaN (so storing it fails
// with not_finite instead of silently picking another argument); on equal
// arguments the first wins.
BuiltinStatus impl_min(std::span<const BuiltinArg> args, BuiltinResult& out) {
  double m = args[0].num;
  for (const BuiltinArg& a : args.subspan(1)) {
    if (std::isnan(a.num) || std::isnan(m)) {
      m = NAN;
    } else if (a.num < m) {
      m = a.num;
    }
  }
  out.num = m;
  return BuiltinStatus::Ok;
}

BuiltinStatus impl_max(std::span<const BuiltinArg> args, BuiltinResult& out) {
  double m = args[0].num;
  for (const BuiltinArg& a : args.subspan(1)) {
    if (std::isnan(a.num) || std::isnan(m)) {
      m = NAN;
    } else if (a.num > m) {
      m = a.num;
    }
  }
  out.num = m;
  return BuiltinStatus::Ok;
}

BuiltinStatus impl_abs(std::span<const BuiltinArg> a, BuiltinResult& out) {
  out.num = std::fabs(a[0].num);
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_floor(std::span<const BuiltinArg> a, BuiltinResult& out) {
  out.num = std::floor(a[0].num);
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_ceil(std::span<const BuiltinArg> a, BuiltinResult& out) {
  out.num = std::ceil(a[0].num);
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_round(std::span<const BuiltinArg> a, BuiltinResult& out) {
  out.num = std::round(a[0].num);
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_sqrt(std::span<const BuiltinArg> a, BuiltinResult& out) {
  out.num = std::sqrt(a[0].num);
  return BuiltinStatus::Ok;
}

// The shortest text that reads back to the same bits (std::to_chars):
// 0.1, 100, 1e+21, -0, nan, inf, -inf.
BuiltinStatus impl_text(std::span<const BuiltinArg> a, BuiltinResult& out) {
  // NaN prints as `nan` whatever its sign bit (0/0 sets it on x86).
  double d = std::isnan(a[0].num) ? std::fabs(a[0].num) : a[0].num;
  auto [end, ec] = std::to_chars(out.text, out.text + kBuiltinTextRoom, d);
  assert(ec == std::errc());
  out.text_len = static_cast<uint32_t>(end - out.text);
  return BuiltinStatus::Ok;
}

// A decimal number, whole text, no spaces: `-12`, `0.5`, `.5`, `1e7`.
// Not a number: empty, other characters, `inf`, `nan`, hex, or a value
// beyond binary64 (`1e400`).
BuiltinStatus impl_num(std::span<const BuiltinArg> a, BuiltinResult& out) {
  std::string_view t = a[0].text;
  size_t lead = !t.empty() && t[0] == '-' ? 1 : 0;
  if (t.size() <= lead || !((t[lead] >= '0' && t[lead] <= '9') || t[lead] == '.')) {
    return BuiltinStatus::BadNumber;
  }
  double v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, std::chars_format::general);
  if (end != t.data() + t.size()) return BuiltinStatus::BadNumber;
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports underflow and overflow alike; strtod (correctly
    // rounded in glibc) tells them apart. Underflow is the correctly
    // rounded tiny value; overflow is not a number.
    std::string copy(t);
    v = std::strtod(copy.c_str(), nullptr);
    if (std::isinf(v)) return BuiltinStatus::BadNumber;
  } else if (ec != std::errc()) {
    return BuiltinStatus::BadNumber;
  }
  out.num = v;
  return BuiltinStatus::Ok;
}

BuiltinStatus impl_len(std::span<const BuiltinArg> a, BuiltinResult& out) {
  double n = 0;
  for (unsigned char c : a[0].text) n += (c & 0xC0) != 0x80;
  out.num = n;
  return BuiltinStatus::Ok;
}

constexpr std::array kBuiltins = {
#define AUP_BUILTIN(id, name, min_args, max_args, p0, p1, result, impl, meaning)             \
  Builtin{BuiltinId::id, name,      min_args, max_args, {Ty::p0, Ty::p1}, Ty::result,       \
          std::string_view(name) == "now", impl, meaning},
#include "stdlib/builtins.def"
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

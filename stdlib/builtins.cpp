#include "stdlib/builtins.h"

#include <array>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "stdlib/numbers.h"
#include "stdlib/texts.h"

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
  auto [end, ec] = std::to_chars(out.room, out.room + kBuiltinTextRoom, d);
  assert(ec == std::errc());
  out.text = std::string_view(out.room, static_cast<size_t>(end - out.room));
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
  // As a request's arguments are read: an integer no binary64 holds is
  // refused, not rounded into another one (stdlib/numbers.h).
  if (integer_rounded(t, v)) {
    out.detail = "no binary64 is exactly it (integers beyond ±2^53 are rounded: it would be " + exact_integer(v) + ")";
    return BuiltinStatus::BadNumber;
  }
  out.num = v;
  return BuiltinStatus::Ok;
}

BuiltinStatus impl_len(std::span<const BuiltinArg> a, BuiltinResult& out) {
  out.num = static_cast<double>(code_points(a[0].text));
  return BuiltinStatus::Ok;
}

// ---- texts: the particulars of a refusal go in out.detail, which the VM
// puts in the failure's message.

BuiltinStatus refused(TextStatus s, BuiltinResult& out, std::string detail) {
  switch (s) {
    case TextStatus::Ok: return BuiltinStatus::Ok;
    case TextStatus::TooLong: return BuiltinStatus::TooLong;
    case TextStatus::NotWhole:
    case TextStatus::BadFill: out.detail = std::move(detail); return BuiltinStatus::OutOfRange;
  }
  return BuiltinStatus::Ok;
}

std::string number_words(double n) {
  char buf[kBuiltinTextRoom];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, std::isnan(n) ? std::fabs(n) : n);
  assert(ec == std::errc());
  return std::string(buf, end);
}

std::string not_whole(std::string_view what, double n) {
  return std::string(what) + " " + number_words(n) + " is not a whole number";
}

// A text result that is the receiver unchanged when it is whole.
void text_or_same(std::string_view t, std::string_view receiver, BuiltinResult& out) {
  out.text = t;
  out.same_as_receiver = t.size() == receiver.size();
}

BuiltinStatus impl_slice(std::span<const BuiltinArg> a, BuiltinResult& out) {
  double to = a.size() > 2 ? a[2].num : INFINITY;
  std::string_view r;
  TextStatus s = text_slice(a[0].text, a[1].num, to, &r);
  if (s != TextStatus::Ok) {
    bool first = std::isnan(a[1].num) || a[1].num != std::floor(a[1].num);
    return refused(s, out, not_whole("position", first ? a[1].num : to));
  }
  text_or_same(r, a[0].text, out);
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_find(std::span<const BuiltinArg> a, BuiltinResult& out) {
  out.num = text_find(a[0].text, a[1].text);
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_contains(std::span<const BuiltinArg> a, BuiltinResult& out) {
  out.truth = text_contains(a[0].text, a[1].text);
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_starts_with(std::span<const BuiltinArg> a, BuiltinResult& out) {
  out.truth = a[0].text.starts_with(a[1].text);
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_ends_with(std::span<const BuiltinArg> a, BuiltinResult& out) {
  out.truth = a[0].text.ends_with(a[1].text);
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_replace(std::span<const BuiltinArg> a, BuiltinResult& out) {
  if (a[1].text.empty() || !text_contains(a[0].text, a[1].text)) {
    text_or_same(a[0].text, a[0].text, out);
    return BuiltinStatus::Ok;
  }
  TextStatus s = text_replace(a[0].text, a[1].text, a[2].text, out.scratch);
  out.text = out.scratch;
  return refused(s, out, "");
}
BuiltinStatus impl_split(std::span<const BuiltinArg> a, BuiltinResult& out) {
  text_split(a[0].text, a[1].text, out.parts);
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_trim(std::span<const BuiltinArg> a, BuiltinResult& out) {
  text_or_same(text_trim(a[0].text), a[0].text, out);
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_upper(std::span<const BuiltinArg> a, BuiltinResult& out) {
  text_upper(a[0].text, out.scratch, &out.same_as_receiver);
  out.text = out.same_as_receiver ? a[0].text : std::string_view(out.scratch);
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_lower(std::span<const BuiltinArg> a, BuiltinResult& out) {
  text_lower(a[0].text, out.scratch, &out.same_as_receiver);
  out.text = out.same_as_receiver ? a[0].text : std::string_view(out.scratch);
  return BuiltinStatus::Ok;
}
BuiltinStatus pad(std::span<const BuiltinArg> a, BuiltinResult& out, bool left) {
  std::string_view fill = a.size() > 2 ? a[2].text : std::string_view(" ");
  TextStatus s = text_pad(a[0].text, a[1].num, fill, left, out.scratch, &out.same_as_receiver);
  if (s == TextStatus::BadFill) {
    return refused(s, out, "the fill must be one code point, not " + std::to_string(code_points(fill)));
  }
  if (s != TextStatus::Ok) return refused(s, out, not_whole("width", a[1].num));
  out.text = out.same_as_receiver ? a[0].text : std::string_view(out.scratch);
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_pad_left(std::span<const BuiltinArg> a, BuiltinResult& out) { return pad(a, out, true); }
BuiltinStatus impl_pad_right(std::span<const BuiltinArg> a, BuiltinResult& out) { return pad(a, out, false); }
BuiltinStatus impl_repeat(std::span<const BuiltinArg> a, BuiltinResult& out) {
  TextStatus s = text_repeat(a[0].text, a[1].num, out.scratch);
  out.text = out.scratch;
  return refused(s, out, not_whole("count", a[1].num));
}
BuiltinStatus impl_eq_ignore_case(std::span<const BuiltinArg> a, BuiltinResult& out) {
  out.truth = text_eq_ignore_case(a[0].text, a[1].text);
  return BuiltinStatus::Ok;
}

// ---- arrays

BuiltinStatus impl_join(std::span<const BuiltinArg> a, BuiltinResult& out) {
  TextStatus s = text_join(a[0].texts, a[1].text, out.scratch);
  out.text = out.scratch;
  return refused(s, out, "");
}
BuiltinStatus impl_sum(std::span<const BuiltinArg> a, BuiltinResult& out) {
  double sum = 0;
  for (double d : a[0].nums) sum += d;
  out.num = sum;
  return BuiltinStatus::Ok;
}

// The position of the least (or greatest) item; the first of equal ones.
// Numbers: a NaN item is the answer (so storing it fails not_finite, as
// `min(a, b)` does). Texts: by UTF-8 bytes.
template <bool Least>
BuiltinStatus extreme_item(std::span<const BuiltinArg> a, BuiltinResult& out) {
  size_t n = a[0].nums.empty() ? a[0].texts.size() : a[0].nums.size();
  if (n == 0) {
    out.detail = "the array is empty";
    return BuiltinStatus::OutOfRange;
  }
  size_t best = 0;
  if (!a[0].nums.empty()) {
    std::span<const double> xs = a[0].nums;
    for (size_t i = 1; i < xs.size() && !std::isnan(xs[best]); ++i) {
      if (std::isnan(xs[i]) || (Least ? xs[i] < xs[best] : xs[i] > xs[best])) best = i;
    }
  } else {
    std::span<const std::string_view> xs = a[0].texts;
    for (size_t i = 1; i < xs.size(); ++i) {
      if (Least ? xs[i] < xs[best] : xs[i] > xs[best]) best = i;
    }
  }
  out.item = static_cast<uint32_t>(best);
  out.item_result = true;
  return BuiltinStatus::Ok;
}
BuiltinStatus impl_min_item(std::span<const BuiltinArg> a, BuiltinResult& out) { return extreme_item<true>(a, out); }
BuiltinStatus impl_max_item(std::span<const BuiltinArg> a, BuiltinResult& out) { return extreme_item<false>(a, out); }

constexpr std::array kBuiltins = {
#define AUP_BUILTIN(id, form, name, min_args, max_args, p0, p1, p2, result, impl, meaning)            \
  Builtin{BuiltinId::id, Form::form, name, min_args, max_args, {Ty::p0, Ty::p1, Ty::p2}, Ty::result, \
          std::string_view(name) == "now", impl, meaning},
#include "stdlib/builtins.def"
#undef AUP_BUILTIN
};

}  // namespace

std::span<const Builtin> builtins() { return kBuiltins; }

const Builtin* find_builtin(std::string_view name) {
  for (const Builtin& b : kBuiltins) {
    if (b.form == Form::Fn && b.name == name) return &b;
  }
  return nullptr;
}

namespace {

// A method of AnyArray is one of every array.
bool takes(const Builtin& b, Ty receiver) {
  bool array = receiver == Ty::TextArray || receiver == Ty::NumArray || receiver == Ty::AnyArray;
  return b.form == Form::Method && (b.params[0] == receiver || (array && b.params[0] == Ty::AnyArray));
}

}  // namespace

const Builtin* find_method(Ty receiver, std::string_view name) {
  for (const Builtin& b : kBuiltins) {
    if (b.name == name && takes(b, receiver)) return &b;
  }
  return nullptr;
}

std::vector<std::string_view> method_names(Ty receiver) {
  std::vector<std::string_view> names;
  for (const Builtin& b : kBuiltins) {
    if (takes(b, receiver)) names.push_back(b.name);
  }
  return names;
}

const Builtin& builtin(BuiltinId id) {
  const Builtin& b = kBuiltins[static_cast<size_t>(id)];
  assert(b.id == id);
  return b;
}

}  // namespace aup::stdlib

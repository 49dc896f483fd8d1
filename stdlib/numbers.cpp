#include "stdlib/numbers.h"

#include <cassert>
#include <charconv>
#include <cmath>

namespace aup::stdlib {

bool integer_rounded(std::string_view literal, double value) {
  if (!(std::fabs(value) >= 0x1p53)) return false;
  if (literal.find_first_of("eE") != std::string_view::npos) return false;
  size_t dot = literal.find('.');
  if (dot != std::string_view::npos && literal.find_first_not_of('0', dot + 1) != std::string_view::npos) {
    return false;
  }
  std::string_view whole = literal.substr(0, dot);
  bool minus = !whole.empty() && whole[0] == '-';
  whole.remove_prefix(minus ? 1 : 0);
  whole.remove_prefix(std::min(whole.find_first_not_of('0'), whole.size()));
  std::string exact = exact_integer(value);
  return std::string_view(exact).substr(exact[0] == '-' ? 1 : 0) != whole || (exact[0] == '-') != minus;
}

std::string exact_integer(double value) {
  assert(std::isfinite(value) && value == std::trunc(value));
  // Fixed notation with no fraction digits is exact (as printf's %.0f):
  // std::to_chars prints a binary64's whole decimal value, not a shortest
  // text. DBL_MAX has 309 digits.
  char buf[320];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, 0);
  assert(ec == std::errc());
  return std::string(buf, end);
}

}  // namespace aup::stdlib

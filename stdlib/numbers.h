// Integers beyond 2^53: the one rule that reading a number written out in
// digits follows everywhere aup reads one (a request's arguments, `num(t)`,
// a literal in source), so that no reader silently makes a number another
// integer (two ids one key).
#pragma once

#include <string>
#include <string_view>

namespace aup::stdlib {

// Whether `literal` is an integer written out digit by digit that its
// binary64 `value` (finite, as it was read) does not hold exactly. Decided
// on the digits:
//   - |value| < 2^53: false. Every integer up to 2^53 is a binary64, and
//     one beyond it cannot round below it; so ordinary numbers cost this
//     one comparison and no more.
//   - an exponent (9.007199254740993e15, 1e308): false. Scientific notation
//     is how binary64 values are printed (aup's `1e+23`, `%.17g`'s
//     `9.9999999999999992e+22`), so it is read as the nearest binary64,
//     as 0.1 is.
//   - a fraction with a digit other than 0 (9007199254740993.5): false, a
//     decimal, read as the nearest binary64.
//   - otherwise the text is an integer written out (9007199254740993,
//     9007199254740993.0, 009007199254740993): true unless its digits,
//     leading zeros aside, are the binary64's exact value (9007199254740994).
bool integer_rounded(std::string_view literal, double value);

// The exact decimal value of a binary64 that is an integer (every one of
// magnitude 2^53 or more is): 9007199254740992, -1e22 as
// -10000000000000000000000; up to 309 digits.
std::string exact_integer(double value);

}  // namespace aup::stdlib

// The text methods of aup (`t.slice(a, b)`, `t.find(s)`, `t.split(sep)`,
// ...) on plain byte views, so they can be tested without a VM.
//
// Texts are valid UTF-8 (the compiler and the request reader refuse
// anything else), and every position and width is counted in code points,
// as `len` counts them. Two rules hold for every method that takes a
// position, a width or a count:
//
//   - it must be a whole number (an infinity is one); NaN or a fraction is
//     refused (TextStatus::NotWhole, the event fails `out_of_range`);
//   - a whole number outside the text is clamped to it: a position below 0
//     is 0, one past the end is the end, a width or count below 0 is 0.
//
// A result longer than kMaxResultTextBytes is refused (TextStatus::TooLong,
// the event fails `budget`) before it is built. Case mapping is ASCII
// only: `upper`, `lower` and `eq_ignore_case` change or fold A-Z and a-z
// and leave every other code point as it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace aup::stdlib {

// The longest text a method may make: the VM's kMaxTextBytes (vm/text.h
// asserts they agree).
inline constexpr uint32_t kMaxResultTextBytes = 16u << 20;

enum class TextStatus : uint8_t { Ok, NotWhole, TooLong, BadFill };

// Code points in `t`.
size_t code_points(std::string_view t);
// The byte offset of code point `n` of `t` (t.size() when n >= its count).
size_t byte_offset(std::string_view t, size_t n);
// A position or width as a count of code points: NotWhole for NaN or a
// fraction; else clamped to [0, limit].
TextStatus whole_position(double p, size_t limit, size_t* out);

// Code points a to b (b excluded), both clamped; "" when b <= a.
TextStatus text_slice(std::string_view t, double a, double b, std::string_view* out);
// Whether `s` is in `t` ("" is in every text).
bool text_contains(std::string_view t, std::string_view s);
// The code-point position of the first `s` in `t`, or -1; "" is at 0.
double text_find(std::string_view t, std::string_view s);
// Every `from` replaced by `to`, left to right, without overlaps; an
// empty `from` leaves `t` as it is.
TextStatus text_replace(std::string_view t, std::string_view from, std::string_view to, std::string& out);
// The pieces between the separators, in order (views into `t`). An empty
// separator splits into single code points ("" gives no pieces); else ""
// gives one empty piece, and a separator at either end an empty piece
// there.
void text_split(std::string_view t, std::string_view sep, std::vector<std::string_view>& out);
TextStatus text_join(std::span<const std::string_view> parts, std::string_view sep, std::string& out);
// Without the ASCII white space (space, \t, \n, \v, \f, \r) at either end.
std::string_view text_trim(std::string_view t);
// ASCII case; `*same` is set when nothing changed (no copy is needed).
void text_upper(std::string_view t, std::string& out, bool* same);
void text_lower(std::string_view t, std::string& out, bool* same);
// `t` widened to `width` code points with `fill` (one code point) on the
// left or right; a `t` as wide or wider is returned as it is (`*same`).
TextStatus text_pad(std::string_view t, double width, std::string_view fill, bool left, std::string& out,
                    bool* same);
// `t` written `n` times.
TextStatus text_repeat(std::string_view t, double n, std::string& out);
// Equal once A-Z are read as a-z.
bool text_eq_ignore_case(std::string_view a, std::string_view b);

}  // namespace aup::stdlib

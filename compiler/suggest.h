// "Did you mean ...?": the closest known name to a misspelt one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace aup {

// Edit distance with adjacent transpositions (optimal string alignment).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `wrong`, if it is close enough to be a likely
// typo (distance at most a third of the length, at least 1; a match that
// differs only in letter case always qualifies; names of one or two letters
// get only case matches). Empty when none is.
std::string closest_name(std::string_view wrong, const std::vector<std::string_view>& candidates);

// "; did you mean `x`?" or "".
std::string did_you_mean(std::string_view wrong, const std::vector<std::string_view>& candidates);

// "; did you mean `x`?", or when no name is close all of them, "; WHAT: a,
// b" ("; WHAT: none"): for a name the user picks from a short list (a
// table, an index).
std::string did_you_mean_or_list(std::string_view wrong, const std::vector<std::string_view>& candidates,
                                 std::string_view what);

}  // namespace aup

#include "compiler/suggest.h"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace aup {

size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rolling rows: the transposition step looks two rows back.
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

namespace {
bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}
}  // namespace

std::string closest_name(std::string_view wrong, const std::vector<std::string_view>& candidates) {
  // One or two letters are too short to tell a typo from another name:
  // only a difference of letter case is suggested for them.
  bool short_name = wrong.size() <= 2;
  std::string_view best;
  size_t best_distance = std::max<size_t>(1, wrong.size() / 3) + 1;
  for (std::string_view c : candidates) {
    if (c == wrong || c.empty()) continue;
    if (equal_ignoring_case(c, wrong)) return std::string(c);
    if (short_name) continue;
    // Cheap bound: the length difference alone may rule a candidate out.
    size_t diff = c.size() > wrong.size() ? c.size() - wrong.size() : wrong.size() - c.size();
    if (diff >= best_distance) continue;
    size_t d = edit_distance(wrong, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return std::string(best);
}

std::string did_you_mean(std::string_view wrong, const std::vector<std::string_view>& candidates) {
  std::string best = closest_name(wrong, candidates);
  if (best.empty()) return "";
  return "; did you mean `" + best + "`?";
}

std::string did_you_mean_or_list(std::string_view wrong, const std::vector<std::string_view>& candidates,
                                 std::string_view what) {
  std::string close = did_you_mean(wrong, candidates);
  if (!close.empty()) return close;
  std::string list;
  for (std::string_view c : candidates) (list += list.empty() ? "" : ", ") += c;
  return "; " + std::string(what) + ": " + (list.empty() ? "none" : list);
}

}  // namespace aup

#include "compiler/token.h"

#include <array>

namespace aup {

namespace {
constexpr std::array kSpellings = {
#define AUP_TOKEN(name, spelling) std::string_view(spelling),
#include "compiler/tokens.def"
#undef AUP_TOKEN
};
}  // namespace

std::string_view tok_spelling(Tok t) { return kSpellings[static_cast<size_t>(t)]; }

Tok keyword_of(std::string_view word) {
  for (auto t = static_cast<int>(kFirstKeyword); t <= static_cast<int>(kLastKeyword); ++t) {
    std::string_view s = kSpellings[static_cast<size_t>(t)];
    // Spellings are "`word`": compare the inside.
    if (s.substr(1, s.size() - 2) == word) return static_cast<Tok>(t);
  }
  return Tok::Ident;
}

}  // namespace aup

// Interned strings: names and text literals become small integers, so the
// parser and checker compare and hash them as numbers.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace aup {

using Sym = uint32_t;

class Interner {
 public:
  Interner();
  Interner(const Interner&) = delete;
  Interner& operator=(const Interner&) = delete;

  Sym intern(std::string_view s);
  // The symbol of `s` if it was interned, else kNoSym.
  Sym find(std::string_view s) const;
  std::string_view str(Sym s) const { return views_[s]; }
  size_t size() const { return views_.size(); }

  static constexpr Sym kNoSym = 0;  // the empty string

 private:
  std::deque<std::string> storage_;  // stable addresses for the views
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, Sym> index_;
};

}  // namespace aup

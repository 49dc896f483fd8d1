#include "compiler/intern.h"

namespace aup {

Interner::Interner() { intern(""); }

Sym Interner::intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  const std::string& kept = storage_.emplace_back(s);
  Sym id = static_cast<Sym>(views_.size());
  views_.push_back(kept);
  index_.emplace(views_.back(), id);
  return id;
}

Sym Interner::find(std::string_view s) const {
  auto it = index_.find(s);
  return it == index_.end() ? kNoSym : it->second;
}

}  // namespace aup

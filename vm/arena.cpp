#include "vm/arena.h"

#include <algorithm>
#include <cassert>

namespace aup::vm {

void Arena::grow(size_t at_least) {
  size_t size = blocks_.empty() ? kFirstBlock : blocks_.back().size * 2;
  size = std::max(size, at_least);
  char* base = static_cast<char*>(std::malloc(size));
  if (!base) throw std::bad_alloc();
  blocks_.push_back(Block{base, size});
  cur_ = base;
  end_ = base + size;
}

void Arena::reset() {
  allocated_ = 0;
  if (blocks_.empty()) return;
  // The largest block within the bound (none: a first block made larger
  // for one big allocation).
  size_t keep = blocks_.size();
  for (size_t i = 0; i < blocks_.size(); ++i) {
    bool within = blocks_[i].size <= kKeptBlock;
    if (within && (keep == blocks_.size() || blocks_[i].size >= blocks_[keep].size)) keep = i;
  }
  for (size_t i = 0; i < blocks_.size(); ++i) {
    if (i != keep) std::free(blocks_[i].base);
  }
  if (keep == blocks_.size()) {
    blocks_.clear();
    cur_ = end_ = nullptr;
    return;
  }
  blocks_[0] = blocks_[keep];
  blocks_.resize(1);
  cur_ = blocks_[0].base;
  end_ = cur_ + blocks_[0].size;
}

size_t Arena::held() const {
  size_t n = 0;
  for (const Block& b : blocks_) n += b.size;
  return n;
}

}  // namespace aup::vm

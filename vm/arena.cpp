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
  if (blocks_.empty()) return;
  for (size_t i = 1; i < blocks_.size(); ++i) std::free(blocks_[i].base);
  blocks_.resize(1);
  cur_ = blocks_[0].base;
  end_ = cur_ + blocks_[0].size;
  allocated_ = 0;
}

}  // namespace aup::vm

// A bump allocator for the temporaries of one event or query: records,
// arrays, objects, texts and row references made while it runs. Nothing is
// freed one by one; `reset` frees everything at once, keeping the first
// block so the next event allocates without calling malloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace aup::vm {

class Arena {
 public:
  Arena() = default;
  ~Arena() {
    for (Block& b : blocks_) std::free(b.base);
  }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  void* alloc(size_t bytes) {
    bytes = (bytes + 15) & ~size_t{15};
    if (static_cast<size_t>(end_ - cur_) < bytes) grow(bytes);
    void* p = cur_;
    cur_ += bytes;
    allocated_ += bytes;
    return p;
  }
  template <class T>
  T* make() {
    return new (alloc(sizeof(T))) T();
  }

  // Frees everything; keeps one block (the first) for reuse.
  void reset();
  size_t allocated() const { return allocated_; }
  // Where allocated() is kept, for native code to read (vm/native.h).
  const size_t* allocated_ptr() const { return &allocated_; }

 private:
  struct Block {
    char* base;
    size_t size;
  };
  void grow(size_t at_least);

  static constexpr size_t kFirstBlock = 64 * 1024;
  std::vector<Block> blocks_;
  char* cur_ = nullptr;
  char* end_ = nullptr;
  size_t allocated_ = 0;
};

}  // namespace aup::vm

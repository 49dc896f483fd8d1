// A bump allocator for the temporaries of one event or query: records,
// arrays, objects, texts and row references made while it runs. Nothing is
// freed one by one; `reset` frees everything at once, keeping the largest
// block of at most kKeptBlock bytes, so the next event, if it makes no
// more, allocates without calling malloc and without faulting in fresh
// pages (blocks past malloc's mmap threshold come back from the kernel
// zeroed each time: a query making 100 MiB of texts spent a third of its
// time in page faults).
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

  // Frees everything; keeps one block for reuse (the largest of at most
  // kKeptBlock bytes).
  void reset();
  size_t allocated() const { return allocated_; }
  // Bytes of the blocks it holds (allocated or not).
  size_t held() const;
  // Where allocated() is kept, for native code to read (vm/native.h).
  const size_t* allocated_ptr() const { return &allocated_; }

 private:
  struct Block {
    char* base;
    size_t size;
  };
  void grow(size_t at_least);

  static constexpr size_t kFirstBlock = 64 * 1024;

 public:
  // The most an idle arena keeps: an owner thread and each query thread
  // hold at most this between runs.
  static constexpr size_t kKeptBlock = 16u << 20;

 private:
  std::vector<Block> blocks_;
  char* cur_ = nullptr;
  char* end_ = nullptr;
  size_t allocated_ = 0;
};

}  // namespace aup::vm

// Where small heap texts live: slabs cut into blocks of one size class,
// not a malloc chunk each.
//
// Why: glibc's chunk adds an 8-byte size word and rounds up to 16, with 32
// bytes the least, so a text of 6 bytes (a TPC-C order line's composite key:
// 16 bytes with its header, vm/text.h) took 32, and one of 24 (a stock
// row's S_DIST_xx: 34 bytes) took 48. TPC-C holds millions of such texts;
// they were a fifth of its resident memory. Here a block is the text's
// bytes rounded up to 4 (16 at least): 16 and 36.
//
// A block freed goes on its class's free list and is reused by the next
// text of that class; slabs are never given back, as glibc keeps most of
// what it frees too (`text_pool_free` in docs/operations.md, *Memory*,
// says how much is free here). Texts above kMaxBlock bytes go to malloc,
// where the rounding costs them little.
//
// One lock (a spin flag) around each take and give: heap texts are made
// and freed on the owner thread in a server, but a test may run owners on
// several threads, and a follower's thread decodes what the owner frees.
// Uncontended, it is one atomic exchange.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace aup::vm {

class TextPool {
 public:
  static constexpr size_t kStep = 4;  // TextObj is 4-byte aligned
  // The largest block; a text of more bytes (header included) is malloc's.
  static constexpr size_t kMaxBlock = 256;
  static constexpr size_t kSlabBytes = size_t{64} << 10;

  // The block a request of `bytes` takes (1 <= bytes <= kMaxBlock).
  static constexpr size_t block_bytes(size_t bytes) {
    size_t b = (bytes + kStep - 1) & ~(kStep - 1);
    return b < 16 ? 16 : b;  // room for the free list's link (a pointer, copied in unaligned)
  }

  TextPool() = default;
  ~TextPool();  // frees the slabs: only for a pool no text still uses
  TextPool(const TextPool&) = delete;
  TextPool& operator=(const TextPool&) = delete;

  // A block of block_bytes(bytes); throws std::bad_alloc.
  void* take(size_t bytes);
  // `p` from take(bytes), with the same `bytes`.
  void give(void* p, size_t bytes);

  struct Figures {
    uint64_t slab_bytes = 0;  // every slab's bytes
    uint64_t used_bytes = 0;  // blocks taken and not given back
  };
  Figures figures() const;

  // The process's pool, for heap texts (vm/text.cpp). Never destroyed: a
  // text may be freed by a static destructor after the others ran.
  static TextPool& heap();

 private:
  static constexpr size_t kClasses = kMaxBlock / kStep;
  struct Class {
    void* free = nullptr;  // blocks given back, linked through their first word
    char* next = nullptr;  // the rest of the class's newest slab
    char* end = nullptr;
  };
  class Lock;
  char* new_slab();

  mutable std::atomic<bool> busy_{false};
  Class classes_[kClasses];
  std::vector<char*> slabs_;
  uint64_t used_bytes_ = 0;
};

}  // namespace aup::vm

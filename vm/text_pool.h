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
// Heap texts take and give blocks of the calling thread's own pool, with
// no lock: a spin flag's atomic exchange around each was about a fifth of
// the user time of opening a TPC-C store (some 20 million texts at W=10). A block
// may be given back on another thread than took it (a follower's decoding,
// a test's threads): it then joins that thread's free list, which is safe
// because no slab is ever freed while the process runs. When a thread ends,
// its slabs and free blocks are handed on to what all threads share, and
// a thread short of blocks of a class takes those first.
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

  // A pool of one thread's use (no lock). Its destructor frees its slabs:
  // only for a pool no text still uses.
  TextPool() = default;
  ~TextPool();
  TextPool(const TextPool&) = delete;
  TextPool& operator=(const TextPool&) = delete;

  // A block of block_bytes(bytes); throws std::bad_alloc.
  void* take(size_t bytes);
  // `p` from take(bytes) of this pool (or, for heap texts, of any
  // thread's), with the same `bytes`.
  void give(void* p, size_t bytes);

  struct Figures {
    uint64_t slab_bytes = 0;  // every slab's bytes
    uint64_t used_bytes = 0;  // blocks taken and not given back
  };
  // Any thread may ask (the counters are its thread's alone to change).
  Figures figures() const;

  // Heap texts' blocks (vm/text.cpp): from the calling thread's pool.
  static void* heap_take(size_t bytes);
  static void heap_give(void* p, size_t bytes);
  // Every thread's heap blocks, those of threads that ended included.
  static Figures heap_figures();

 private:
  static constexpr size_t kClasses = kMaxBlock / kStep;
  struct Class {
    void* free = nullptr;  // blocks given back, linked through their first word
    char* next = nullptr;  // the rest of the class's newest slab
    char* end = nullptr;
  };
  friend struct TextPoolShared;
  friend class TextPoolThread;
  void* take_inline(size_t bytes);
  void give_inline(void* p, size_t bytes);
  void* take_more(Class& c, size_t block);
  void hand_on();

  bool heap_ = false;  // a thread's heap pool: takes an ended thread's blocks first
  Class classes_[kClasses];
  std::vector<char*> slabs_;
  // Signed: a heap block given back on another thread counts there.
  std::atomic<int64_t> used_bytes_{0};
  std::atomic<uint64_t> slab_bytes_{0};
};

}  // namespace aup::vm

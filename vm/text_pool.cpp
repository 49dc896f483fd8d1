#include "vm/text_pool.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

// Under AddressSanitizer a block given back is poisoned until it is taken
// again, so a text read after its last release is still reported (until its
// block is reused), as it was when each text was its own malloc chunk.
#if defined(__SANITIZE_ADDRESS__)
#define AUP_POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AUP_POOL_ASAN 1
#endif
#endif
#ifdef AUP_POOL_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace aup::vm {

class TextPool::Lock {
 public:
  explicit Lock(std::atomic<bool>& busy) : busy_(busy) {
    while (busy_.exchange(true, std::memory_order_acquire)) {
      while (busy_.load(std::memory_order_relaxed)) std::this_thread::yield();
    }
  }
  ~Lock() { busy_.store(false, std::memory_order_release); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  std::atomic<bool>& busy_;
};

TextPool::~TextPool() {
  for (char* s : slabs_) {
    UNPOISON(s, kSlabBytes);
    std::free(s);
  }
}

char* TextPool::new_slab() {
  slabs_.reserve(slabs_.size() + 1);  // before the malloc, so a throw leaks nothing
  auto* s = static_cast<char*>(std::malloc(kSlabBytes));
  if (!s) throw std::bad_alloc();
  POISON(s, kSlabBytes);
  slabs_.push_back(s);
  return s;
}

void* TextPool::take(size_t bytes) {
  assert(bytes >= 1 && bytes <= kMaxBlock);
  size_t block = block_bytes(bytes);
  Lock lock(busy_);
  Class& c = classes_[block / kStep - 1];
  void* p = c.free;
  if (p) {
    UNPOISON(p, block);
    std::memcpy(&c.free, p, sizeof(void*));
  } else {
    if (static_cast<size_t>(c.end - c.next) < block) {
      // The slab's tail that cannot hold another block stays unused (less
      // than a block, at most kMaxBlock - 8 bytes a slab).
      c.next = new_slab();
      c.end = c.next + kSlabBytes;
    }
    p = c.next;
    c.next += block;
    UNPOISON(p, block);
  }
  used_bytes_ += block;
  return p;
}

void TextPool::give(void* p, size_t bytes) {
  assert(bytes >= 1 && bytes <= kMaxBlock);
  size_t block = block_bytes(bytes);
  Lock lock(busy_);
  Class& c = classes_[block / kStep - 1];
  assert(used_bytes_ >= block);  // more given back than taken: a text freed twice
  used_bytes_ -= block;
  std::memcpy(p, &c.free, sizeof(void*));
  c.free = p;
  POISON(p, block);
}

TextPool::Figures TextPool::figures() const {
  Lock lock(busy_);
  return {slabs_.size() * kSlabBytes, used_bytes_};
}

TextPool& TextPool::heap() {
  static TextPool* pool = new TextPool;
  return *pool;
}

}  // namespace aup::vm

#include "vm/text_pool.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

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

// What the threads share (under `mu`): their pools, for figures; the slabs
// and free blocks of threads that ended; and the pool of heap texts made
// or freed on a thread after its own pool was handed on (a static
// destructor's, at exit). Never destroyed, like the slabs it holds.
struct TextPoolShared {
  std::mutex mu;
  std::vector<TextPool*> live;
  std::vector<char*> slabs;
  void* free[TextPool::kClasses] = {};
  int64_t used_bytes = 0;  // of ended threads' pools, at their end
  uint64_t slab_bytes = 0;
  TextPool late;

  static TextPoolShared& get() {
    static TextPoolShared* s = new TextPoolShared;
    return *s;
  }
};

// A thread's heap pool, made at its first heap text, handed on at its end.
class TextPoolThread {
 public:
  // Inline: every heap text asks (some 28 million times opening a W=10
  // TPC-C store); the first call of a thread makes its pool.
  static TextPool* pool() {
    if (pool_) [[likely]] return pool_;
    return make_pool();
  }

 private:
  [[gnu::noinline]] static TextPool* make_pool() {
    if (ended_) return nullptr;
    reaper_.armed = true;  // constructs the reaper: its destructor runs at the thread's end
    auto* p = new TextPool;
    p->heap_ = true;
    TextPoolShared& s = TextPoolShared::get();
    std::lock_guard<std::mutex> lock(s.mu);
    s.live.push_back(p);
    pool_ = p;
    return p;
  }
  struct Reaper {
    bool armed = false;
    ~Reaper() {
      if (pool_) {
        pool_->hand_on();
        delete pool_;
        pool_ = nullptr;
      }
      ended_ = true;
    }
  };
  static thread_local TextPool* pool_;
  static thread_local bool ended_;
  static thread_local Reaper reaper_;
};
thread_local TextPool* TextPoolThread::pool_ = nullptr;
thread_local bool TextPoolThread::ended_ = false;
thread_local TextPoolThread::Reaper TextPoolThread::reaper_;

TextPool::~TextPool() {
  for (char* s : slabs_) {
    UNPOISON(s, kSlabBytes);
    std::free(s);
  }
}

void* TextPool::take(size_t bytes) { return take_inline(bytes); }

// take(), inline for heap_take.
inline void* TextPool::take_inline(size_t bytes) {
  assert(bytes >= 1 && bytes <= kMaxBlock);
  size_t block = block_bytes(bytes);
  Class& c = classes_[block / kStep - 1];
  void* p = c.free;
  if (p) {
    UNPOISON(p, block);
    std::memcpy(&c.free, p, sizeof(void*));
  } else if (static_cast<size_t>(c.end - c.next) >= block) {
    p = c.next;
    c.next += block;
    UNPOISON(p, block);
  } else {
    p = take_more(c, block);
  }
  used_bytes_.store(used_bytes_.load(std::memory_order_relaxed) + static_cast<int64_t>(block),
                    std::memory_order_relaxed);
  return p;
}

// The class has no free block and its slab no room: an ended thread's free
// blocks of the class if there are any, else a new slab. The old slab's
// tail that cannot hold another block stays unused (less than a block).
void* TextPool::take_more(Class& c, size_t block) {
  if (heap_) {
    TextPoolShared& s = TextPoolShared::get();
    std::lock_guard<std::mutex> lock(s.mu);
    std::swap(c.free, s.free[block / kStep - 1]);
  }
  if (void* p = c.free) {
    UNPOISON(p, block);
    std::memcpy(&c.free, p, sizeof(void*));
    return p;
  }
  // Room first, so a throw leaks no slab; doubling, as one more each time
  // copied the whole list at every slab (a W=10 TPC-C open makes 10,000).
  if (slabs_.size() == slabs_.capacity()) slabs_.reserve(std::max<size_t>(64, 2 * slabs_.capacity()));
  auto* slab = static_cast<char*>(std::malloc(kSlabBytes));
  if (!slab) throw std::bad_alloc();
  POISON(slab, kSlabBytes);
  slabs_.push_back(slab);
  slab_bytes_.store(slab_bytes_.load(std::memory_order_relaxed) + kSlabBytes, std::memory_order_relaxed);
  c.next = slab + block;
  c.end = slab + kSlabBytes;
  UNPOISON(slab, block);
  return slab;
}

void TextPool::give(void* p, size_t bytes) { give_inline(p, bytes); }

inline void TextPool::give_inline(void* p, size_t bytes) {
  assert(bytes >= 1 && bytes <= kMaxBlock);
  size_t block = block_bytes(bytes);
  Class& c = classes_[block / kStep - 1];
  used_bytes_.store(used_bytes_.load(std::memory_order_relaxed) - static_cast<int64_t>(block),
                    std::memory_order_relaxed);
  std::memcpy(p, &c.free, sizeof(void*));
  c.free = p;
  POISON(p, block);
}

TextPool::Figures TextPool::figures() const {
  int64_t used = used_bytes_.load(std::memory_order_relaxed);
  return {slab_bytes_.load(std::memory_order_relaxed), used > 0 ? static_cast<uint64_t>(used) : 0};
}

// At its thread's end: the slabs, the free blocks and the counts go to
// what the threads share (the texts in the slabs may outlive the thread).
void TextPool::hand_on() {
  TextPoolShared& s = TextPoolShared::get();
  std::lock_guard<std::mutex> lock(s.mu);
  s.live.erase(std::find(s.live.begin(), s.live.end(), this));
  s.slabs.insert(s.slabs.end(), slabs_.begin(), slabs_.end());
  slabs_.clear();
  for (size_t i = 0; i < kClasses; ++i) {
    void* head = classes_[i].free;
    if (!head) continue;
    void* tail = head;  // walk to the list's end, to put the shared list after it
    for (void* next;; tail = next) {
      UNPOISON(tail, sizeof(void*));
      std::memcpy(&next, tail, sizeof(void*));
      POISON(tail, sizeof(void*));
      if (!next) break;
    }
    UNPOISON(tail, sizeof(void*));
    std::memcpy(tail, &s.free[i], sizeof(void*));
    POISON(tail, sizeof(void*));
    s.free[i] = head;
    classes_[i] = Class{};
  }
  s.used_bytes += used_bytes_.load(std::memory_order_relaxed);
  s.slab_bytes += slab_bytes_.load(std::memory_order_relaxed);
}

void* TextPool::heap_take(size_t bytes) {
  if (TextPool* p = TextPoolThread::pool()) [[likely]] return p->take_inline(bytes);
  TextPoolShared& s = TextPoolShared::get();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.late.take(bytes);
}

void TextPool::heap_give(void* p, size_t bytes) {
  if (TextPool* own = TextPoolThread::pool()) [[likely]] return own->give_inline(p, bytes);
  TextPoolShared& s = TextPoolShared::get();
  std::lock_guard<std::mutex> lock(s.mu);
  s.late.give(p, bytes);
}

TextPool::Figures TextPool::heap_figures() {
  TextPoolShared& s = TextPoolShared::get();
  std::lock_guard<std::mutex> lock(s.mu);
  int64_t used = s.used_bytes + s.late.used_bytes_.load(std::memory_order_relaxed);
  uint64_t slabs = s.slab_bytes + s.late.slab_bytes_.load(std::memory_order_relaxed);
  for (const TextPool* p : s.live) {
    used += p->used_bytes_.load(std::memory_order_relaxed);
    slabs += p->slab_bytes_.load(std::memory_order_relaxed);
  }
  return {slabs, used > 0 ? static_cast<uint64_t>(used) : 0};
}

}  // namespace aup::vm

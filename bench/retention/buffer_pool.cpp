#include "bench/retention/buffer_pool.h"

#include <bit>
#include <cassert>

namespace aup::retention {
namespace {

size_t class_index(size_t capacity) {
  assert(std::has_single_bit(capacity) && capacity >= kMinClassBytes && capacity <= kMaxClassBytes);
  return static_cast<size_t>(std::countr_zero(capacity) - std::countr_zero(kMinClassBytes));
}

}  // namespace

size_t capacity_class(size_t bytes) {
  assert(bytes <= kMaxClassBytes);
  return std::bit_ceil(std::max(bytes, kMinClassBytes));
}

BufferPool::BufferPool(uint64_t budget_bytes, uint64_t fixed_bytes, bool reuse)
    : budget_bytes_(budget_bytes), fixed_bytes_(fixed_bytes), reuse_(reuse) {
  assert(fixed_bytes <= budget_bytes && "the caller checks the fixed space against the budget");
  note_managed();
}

BufferPool::~BufferPool() {
  assert(counters_.live_buffers == 0 && "every acquired buffer must be released before the pool goes");
  drain();
}

void BufferPool::note_managed() {
  assert(managed_bytes() <= budget_bytes_);
  counters_.peak_managed_bytes = std::max(counters_.peak_managed_bytes, managed_bytes());
}

// Largest first: the fewest frees make the room, and the small classes that
// selections use (and reuse most) stay pooled.
void BufferPool::evict_one_largest() {
  for (size_t i = kClassCount; i-- > 0;) {
    if (free_[i].empty()) continue;
    counters_.pooled_bytes -= free_[i].back().capacity();
    free_[i].pop_back();
    ++counters_.evictions;
    ++counters_.free_calls;
    return;
  }
  assert(false && "evict called with an empty pool");
}

std::optional<Buffer> BufferPool::try_acquire(size_t bytes) {
  size_t capacity = capacity_class(bytes);
  auto& same_class = free_[class_index(capacity)];
  Buffer b;
  if (!same_class.empty()) {
    // Reuse changes no total: the bytes move from pooled to live.
    b = std::move(same_class.back());
    same_class.pop_back();
    counters_.pooled_bytes -= capacity;
    ++counters_.reuses;
  } else {
    // Evict only if that makes it fit; otherwise keep the cache for later.
    if (fixed_bytes_ + counters_.live_bytes + capacity > budget_bytes_) return std::nullopt;
    // Bounded by the number of pooled buffers.
    while (managed_bytes() + capacity > budget_bytes_) evict_one_largest();
    // Not zeroed: the reader overwrites the bytes it uses, and zeroing would
    // touch pages the policy never needs (it would distort VmHWM).
    b.bytes_ = std::make_unique_for_overwrite<std::byte[]>(capacity);
    b.capacity_ = capacity;
    ++counters_.allocation_calls;
  }
  counters_.live_bytes += capacity;
  counters_.peak_live_bytes = std::max(counters_.peak_live_bytes, counters_.live_bytes);
  ++counters_.live_buffers;
  counters_.peak_live_buffers = std::max(counters_.peak_live_buffers, counters_.live_buffers);
  note_managed();
  return b;
}

void BufferPool::release(Buffer buffer) {
  assert(buffer && counters_.live_buffers > 0);
  size_t capacity = buffer.capacity();
  counters_.live_bytes -= capacity;
  --counters_.live_buffers;
  if (reuse_) {
    free_[class_index(capacity)].push_back(std::move(buffer));
    counters_.pooled_bytes += capacity;
  } else {
    ++counters_.free_calls;  // `buffer` frees its bytes on leaving scope
  }
  note_managed();
}

void BufferPool::drain() {
  for (auto& list : free_) {
    counters_.free_calls += list.size();
    for (const Buffer& b : list) counters_.pooled_bytes -= b.capacity();
    list.clear();
  }
  assert(counters_.pooled_bytes == 0);
}

}  // namespace aup::retention

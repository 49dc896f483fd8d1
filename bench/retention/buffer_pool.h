// The memory budget and the buffer pool, one object because the budget must
// see everything the pool holds:
//
//   managed bytes = fixed space (queue slots, header, scratch)
//                 + live buffers (being read, copied, or queued)
//                 + pooled free buffers kept for reuse.
//
// A buffer is acquired only if the managed bytes stay within the budget
// after it; a copy therefore needs room for the source and the selection at
// once (the copy-in-progress is counted, not hidden). Pooled free buffers
// are a cache: they are freed (evicted) when a request would not otherwise
// fit. Capacities are powers of two from 64 B to 16 MiB, which is why a
// 48 KiB selection costs a 64 KiB buffer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "bench/retention/record_format.h"

namespace aup::retention {

inline constexpr size_t kMinClassBytes = 64;
inline constexpr size_t kMaxClassBytes = kMaxBodyBytes;
inline constexpr size_t kClassCount = 19;  // 2^6 .. 2^24
static_assert(kMinClassBytes << (kClassCount - 1) == kMaxClassBytes);

// The capacity class a request of `bytes` (<= kMaxClassBytes) is served from.
size_t capacity_class(size_t bytes);

// A buffer's bytes, owned by the handle (so nothing leaks even on a
// programmer error); the pool only keeps the accounts. Give every buffer
// back with BufferPool::release: the pool asserts none is outstanding when
// it is destroyed.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::byte* data() { return bytes_.get(); }
  const std::byte* data() const { return bytes_.get(); }
  size_t capacity() const { return capacity_; }
  explicit operator bool() const { return bytes_ != nullptr; }

 private:
  friend class BufferPool;
  std::unique_ptr<std::byte[]> bytes_;
  size_t capacity_ = 0;
};

struct PoolCounters {
  uint64_t allocation_calls = 0;  // buffers obtained from the system allocator
  uint64_t free_calls = 0;        // buffers given back to it
  uint64_t reuses = 0;            // requests served from the pool
  uint64_t evictions = 0;         // pooled buffers freed to make room
  uint64_t live_buffers = 0;
  uint64_t peak_live_buffers = 0;
  uint64_t live_bytes = 0;
  uint64_t peak_live_bytes = 0;  // what results and reads held, the cache aside
  uint64_t pooled_bytes = 0;
  uint64_t peak_managed_bytes = 0;
};

class BufferPool {
 public:
  // `reuse` false frees every released buffer at once (copy_no_pool).
  BufferPool(uint64_t budget_bytes, uint64_t fixed_bytes, bool reuse);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  ~BufferPool();

  // A buffer of at least `bytes`, or nullopt when it cannot fit in the
  // budget even after evicting every pooled buffer (the caller then waits
  // for a queued output to free space, or fails).
  std::optional<Buffer> try_acquire(size_t bytes);
  void release(Buffer buffer);
  // Frees every pooled buffer (the end of a run).
  void drain();

  uint64_t budget_bytes() const { return budget_bytes_; }
  uint64_t fixed_bytes() const { return fixed_bytes_; }
  uint64_t managed_bytes() const { return fixed_bytes_ + counters_.live_bytes + counters_.pooled_bytes; }
  const PoolCounters& counters() const { return counters_; }

 private:
  void note_managed();
  void evict_one_largest();

  uint64_t budget_bytes_;
  uint64_t fixed_bytes_;
  bool reuse_;
  // Free buffers by class. Their total is bounded by the budget.
  std::array<std::vector<Buffer>, kClassCount> free_;
  PoolCounters counters_;
};

}  // namespace aup::retention

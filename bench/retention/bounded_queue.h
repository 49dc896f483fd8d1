// The bounded queue between the reader and the consumer: a ring of slots
// allocated once, so its space is fixed and counted in the budget up front
// (storage_bytes), and a full queue stops the reader instead of growing.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace aup::retention {

// More slots than this could not fill (kMaxRecords in flight is absurd for
// a queue in front of a slow consumer) and would make the fixed space alone
// bigger than any budget worth measuring.
inline constexpr uint32_t kMaxQueueLimit = 1u << 16;

template <class T>
class BoundedQueue {
 public:
  explicit BoundedQueue(uint32_t limit) : slots_(limit) { assert(limit >= 1 && limit <= kMaxQueueLimit); }
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  static size_t storage_bytes(uint32_t limit) { return size_t{limit} * sizeof(std::optional<T>); }

  uint32_t limit() const { return static_cast<uint32_t>(slots_.size()); }
  uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool full() const { return size_ == limit(); }

  void push(T value) {
    assert(!full());
    size_t tail = (head_ + size_) % slots_.size();
    assert(!slots_[tail].has_value());
    slots_[tail].emplace(std::move(value));
    ++size_;
  }

  T& front() {
    assert(!empty());
    return *slots_[head_];
  }

  T pop() {
    assert(!empty());
    T value = std::move(*slots_[head_]);
    slots_[head_].reset();
    head_ = (head_ + 1) % slots_.size();
    --size_;
    return value;
  }

 private:
  std::vector<std::optional<T>> slots_;
  size_t head_ = 0;
  uint32_t size_ = 0;
};

}  // namespace aup::retention

#include "bench/retention/buffer_pool.h"

#include <doctest/doctest.h>

namespace aup::retention {
namespace {

constexpr uint64_t kKiB = 1024;

TEST_SUITE("buffer_pool") {
  TEST_CASE("capacity classes are powers of two from 64 B") {
    CHECK(capacity_class(0) == 64);
    CHECK(capacity_class(1) == 64);
    CHECK(capacity_class(64) == 64);
    CHECK(capacity_class(65) == 128);
    CHECK(capacity_class(48 * kKiB) == 64 * kKiB);
    CHECK(capacity_class(64 * kKiB) == 64 * kKiB);
    CHECK(capacity_class(kMaxClassBytes) == kMaxClassBytes);
  }

  TEST_CASE("managed bytes are fixed + live + pooled, and the peak remembers them") {
    BufferPool pool(1024 * kKiB, 100, true);
    CHECK(pool.managed_bytes() == 100);
    auto a = pool.try_acquire(60 * kKiB);
    REQUIRE(a);
    CHECK(a->capacity() == 64 * kKiB);
    CHECK(pool.counters().live_bytes == 64 * kKiB);
    CHECK(pool.managed_bytes() == 100 + 64 * kKiB);
    pool.release(std::move(*a));
    CHECK(pool.counters().live_bytes == 0);
    CHECK(pool.counters().pooled_bytes == 64 * kKiB);
    CHECK(pool.managed_bytes() == 100 + 64 * kKiB);  // a pooled buffer still counts
    CHECK(pool.counters().peak_managed_bytes == 100 + 64 * kKiB);
    CHECK(pool.counters().peak_live_bytes == 64 * kKiB);
  }

  TEST_CASE("a released buffer is reused for the same class without a new allocation") {
    BufferPool pool(1024 * kKiB, 0, true);
    auto a = pool.try_acquire(1000);
    REQUIRE(a);
    std::byte* bytes = a->data();
    pool.release(std::move(*a));
    auto b = pool.try_acquire(900);
    REQUIRE(b);
    CHECK(b->data() == bytes);
    CHECK(pool.counters().allocation_calls == 1);
    CHECK(pool.counters().reuses == 1);
    pool.release(std::move(*b));
  }

  TEST_CASE("no room: nothing is acquired and the pooled buffers are left alone") {
    BufferPool pool(100 * kKiB, 0, true);
    auto a = pool.try_acquire(64 * kKiB);
    auto small = pool.try_acquire(100);
    REQUIRE(a);
    REQUIRE(small);
    pool.release(std::move(*small));
    CHECK_FALSE(pool.try_acquire(64 * kKiB).has_value());  // 64 KiB live + 64 KiB > 100 KiB
    CHECK(pool.counters().evictions == 0);
    CHECK(pool.counters().pooled_bytes == 128);
    pool.release(std::move(*a));
  }

  TEST_CASE("pooled buffers are evicted, largest first, only when that makes room") {
    BufferPool pool(130 * kKiB, 0, true);
    auto x = pool.try_acquire(64 * kKiB);
    auto y = pool.try_acquire(64);
    REQUIRE(x);
    REQUIRE(y);
    pool.release(std::move(*x));
    pool.release(std::move(*y));
    CHECK(pool.managed_bytes() == 64 * kKiB + 64);
    CHECK_FALSE(pool.try_acquire(128 * kKiB + 1).has_value());  // a 256 KiB class: too big even empty
    CHECK(pool.counters().evictions == 0);
    auto z = pool.try_acquire(128 * kKiB);  // needs the pooled 64 KiB gone, not the 64 B
    REQUIRE(z);
    CHECK(pool.counters().evictions == 1);
    CHECK(pool.counters().pooled_bytes == 64);
    CHECK(pool.managed_bytes() == 128 * kKiB + 64);
    CHECK(pool.counters().peak_managed_bytes <= pool.budget_bytes());
    pool.release(std::move(*z));
  }

  TEST_CASE("without reuse every release frees at once") {
    BufferPool pool(1024 * kKiB, 0, false);
    for (int i = 0; i < 5; ++i) {
      auto a = pool.try_acquire(4096);
      REQUIRE(a);
      pool.release(std::move(*a));
    }
    CHECK(pool.counters().allocation_calls == 5);
    CHECK(pool.counters().free_calls == 5);
    CHECK(pool.counters().pooled_bytes == 0);
    CHECK(pool.counters().reuses == 0);
  }

  TEST_CASE("drain frees every pooled buffer: allocations and frees balance") {
    BufferPool pool(1024 * kKiB, 0, true);
    std::vector<Buffer> held;
    for (size_t bytes : {64, 100, 5000, 70000, 70000}) {
      auto b = pool.try_acquire(bytes);
      REQUIRE(b);
      held.push_back(std::move(*b));
    }
    CHECK(pool.counters().peak_live_buffers == 5);
    for (Buffer& b : held) pool.release(std::move(b));
    pool.drain();
    CHECK(pool.counters().pooled_bytes == 0);
    CHECK(pool.counters().live_buffers == 0);
    CHECK(pool.counters().allocation_calls == pool.counters().free_calls);
    CHECK(pool.managed_bytes() == 0);
  }
}

}  // namespace
}  // namespace aup::retention

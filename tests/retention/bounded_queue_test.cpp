#include "bench/retention/bounded_queue.h"

#include <doctest/doctest.h>

#include <memory>

namespace aup::retention {
namespace {

TEST_SUITE("bounded_queue") {
  TEST_CASE("first in, first out, across the end of the ring") {
    BoundedQueue<int> q(3);
    int next_in = 0;
    int next_out = 0;
    for (int round = 0; round < 10; ++round) {
      while (!q.full()) q.push(next_in++);
      CHECK(q.size() == 3);
      CHECK(q.pop() == next_out++);
      CHECK(q.pop() == next_out++);
    }
    while (!q.empty()) CHECK(q.pop() == next_out++);
    CHECK(next_out == next_in);
  }

  TEST_CASE("limit, full and empty") {
    BoundedQueue<int> q(1);
    CHECK(q.limit() == 1);
    CHECK(q.empty());
    q.push(5);
    CHECK(q.full());
    CHECK(q.front() == 5);
    CHECK(q.pop() == 5);
    CHECK(q.empty());
  }

  TEST_CASE("move-only values, released when popped") {
    BoundedQueue<std::unique_ptr<int>> q(2);
    q.push(std::make_unique<int>(7));
    std::unique_ptr<int> out = q.pop();
    CHECK(*out == 7);
  }

  TEST_CASE("the slot storage is fixed by the limit, to count it in the budget") {
    CHECK(BoundedQueue<int>::storage_bytes(64) == 64 * sizeof(std::optional<int>));
    CHECK(BoundedQueue<int>::storage_bytes(kMaxQueueLimit) ==
          size_t{kMaxQueueLimit} * sizeof(std::optional<int>));
  }
}

}  // namespace
}  // namespace aup::retention

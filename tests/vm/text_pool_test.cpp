// vm/text_pool.h: blocks by size class, reuse, the limit between the pool
// and malloc, and the lock.
#include "vm/text_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "vm/text.h"

namespace aup::vm {
namespace {

TEST_SUITE("text_pool") {
  TEST_CASE("a block is the request rounded up to 4 bytes, 16 at least") {
    CHECK(TextPool::block_bytes(1) == 16);
    CHECK(TextPool::block_bytes(16) == 16);
    CHECK(TextPool::block_bytes(17) == 20);
    CHECK(TextPool::block_bytes(34) == 36);
    CHECK(TextPool::block_bytes(TextPool::kMaxBlock) == TextPool::kMaxBlock);
  }

  TEST_CASE("a block given back is the next one taken of its class, and only of its class") {
    TextPool pool;
    void* a = pool.take(20);
    void* b = pool.take(20);
    CHECK(a != b);
    pool.give(a, 20);
    CHECK(pool.take(40) != a);  // another class
    CHECK(pool.take(18) == a);  // 18 and 20 are both 20-byte blocks
    CHECK(pool.figures().used_bytes == 20 + 20 + 40);
    pool.give(b, 20);
    CHECK(pool.figures().used_bytes == 20 + 40);
  }

  TEST_CASE("blocks of a class fill a slab before the next slab is taken; blocks never overlap") {
    TextPool pool;
    size_t per_slab = TextPool::kSlabBytes / 48;
    std::set<char*> blocks;
    for (size_t i = 0; i < per_slab; ++i) {
      auto* p = static_cast<char*>(pool.take(48));
      std::memset(p, 0x5a, 48);  // the whole block is usable
      blocks.insert(p);
    }
    CHECK(blocks.size() == per_slab);
    CHECK(pool.figures().slab_bytes == TextPool::kSlabBytes);
    for (auto it = blocks.begin(); std::next(it) != blocks.end(); ++it) CHECK(*std::next(it) - *it >= 48);
    pool.take(48);
    CHECK(pool.figures().slab_bytes == 2 * TextPool::kSlabBytes);
    CHECK(pool.figures().used_bytes == (per_slab + 1) * 48);
  }

  TEST_CASE("a heap text of up to 256 bytes with its header is a pool block; one byte more is malloc's") {
    // 9 bytes of header and the terminating 0 (vm/text.h): 246 bytes of text.
    TextObj* at = heap_text(std::string(246, 'a'));
    TextObj* past = heap_text(std::string(247, 'b'));
    TextObj* shortest = heap_text("");
    uint64_t used = TextPool::heap().figures().used_bytes;
    CHECK(text_heap_bytes(at) == 256);
    CHECK(text_heap_bytes(shortest) == 16);
    CHECK(text_heap_bytes(past) >= 257 + sizeof(size_t));  // malloc's chunk and its size word
    CHECK(at->view() == std::string(246, 'a'));
    CHECK(past->view() == std::string(247, 'b'));
    release(at);
    CHECK(TextPool::heap().figures().used_bytes == used - 256);
    release(past);
    CHECK(TextPool::heap().figures().used_bytes == used - 256);
    release(shortest);
    CHECK(TextPool::heap().figures().used_bytes == used - 256 - 16);
  }

  TEST_CASE("threads taking and giving at once neither lose nor share a block") {
    TextPool pool;
    std::atomic<int> overwritten{0};
    auto work = [&pool, &overwritten](char mark) {
      std::vector<char*> mine;
      for (int round = 0; round < 20000; ++round) {
        auto* p = static_cast<char*>(pool.take(24));
        std::memset(p, mark, 24);
        mine.push_back(p);
        if (mine.size() == 64) {
          for (char* q : mine) {
            for (int i = 0; i < 24; ++i) overwritten += q[i] != mark;  // another thread had it too
            pool.give(q, 24);
          }
          mine.clear();
        }
      }
      for (char* q : mine) pool.give(q, 24);
    };
    std::thread a(work, 'a'), b(work, 'b');
    a.join();
    b.join();
    CHECK(overwritten == 0);
    CHECK(pool.figures().used_bytes == 0);
  }
}

}  // namespace
}  // namespace aup::vm

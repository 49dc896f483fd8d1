// vm/text_pool.h: blocks by size class, reuse, the limit between the pool
// and malloc, and threads: each its own pool, texts outliving their thread.
#include "vm/text_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <set>
#include <string>
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
    uint64_t used = TextPool::heap_figures().used_bytes;
    CHECK(text_heap_bytes(at) == 256);
    CHECK(text_heap_bytes(shortest) == 16);
    CHECK(text_heap_bytes(past) >= 257 + sizeof(size_t));  // malloc's chunk and its size word
    CHECK(at->view() == std::string(246, 'a'));
    CHECK(past->view() == std::string(247, 'b'));
    release(at);
    CHECK(TextPool::heap_figures().used_bytes == used - 256);
    release(past);
    CHECK(TextPool::heap_figures().used_bytes == used - 256);
    release(shortest);
    CHECK(TextPool::heap_figures().used_bytes == used - 256 - 16);
  }

  TEST_CASE("threads make and free heap texts at once, each from its own pool, with no block shared") {
    std::atomic<int> overwritten{0};
    auto work = [&overwritten](char mark) {
      std::vector<TextObj*> mine;
      for (int round = 0; round < 20000; ++round) {
        mine.push_back(heap_text(std::string(14, mark)));  // 24-byte blocks
        if (mine.size() == 64) {
          for (TextObj* t : mine) {
            overwritten += t->view() != std::string(14, mark);  // another thread had its block too
            release(t);
          }
          mine.clear();
        }
      }
      for (TextObj* t : mine) release(t);
    };
    uint64_t used = TextPool::heap_figures().used_bytes;
    std::thread a(work, 'a'), b(work, 'b');
    a.join();
    b.join();
    CHECK(overwritten == 0);
    CHECK(TextPool::heap_figures().used_bytes == used);
  }

  TEST_CASE("texts a thread made outlive it; their blocks, freed elsewhere, serve the next thread") {
    const int n = 5000;  // 2 slabs' worth of 24-byte blocks
    std::vector<TextObj*> made;
    std::thread maker([&made] {
      for (int i = 0; i < n; ++i) made.push_back(heap_text("t" + std::to_string(100000 + i) + "xxxxxx"));
    });
    maker.join();  // its pool handed on: the texts stay, and can still be read
    TextPool::Figures after_maker = TextPool::heap_figures();
    for (int i = 0; i < n; ++i) CHECK(made[static_cast<size_t>(i)]->view() == "t" + std::to_string(100000 + i) + "xxxxxx");
    std::thread freer([&made] {
      for (TextObj* t : made) release(t);
    });
    freer.join();  // freed on a third thread: its free list, handed on at its end
    TextPool::Figures freed = TextPool::heap_figures();
    CHECK(freed.used_bytes == after_maker.used_bytes - n * 24);
    CHECK(freed.slab_bytes == after_maker.slab_bytes);
    std::thread again([] {
      std::vector<TextObj*> more;
      for (int i = 0; i < 2000; ++i) more.push_back(heap_text("again-" + std::to_string(1000000 + i)));  // 24-byte blocks too
      for (TextObj* t : more) release(t);
    });
    again.join();
    CHECK(TextPool::heap_figures().slab_bytes == freed.slab_bytes);  // it took the blocks handed on, no new slab
  }
}

}  // namespace
}  // namespace aup::vm

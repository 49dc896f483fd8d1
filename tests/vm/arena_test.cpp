// vm/arena.h: what an arena keeps between runs.
#include "vm/arena.h"

#include <doctest/doctest.h>

#include <cstring>

namespace aup::vm {
namespace {

void fill(Arena& a, size_t bytes) {
  for (size_t done = 0; done < bytes; done += 4096) std::memset(a.alloc(4096), 1, 4096);
}

TEST_SUITE("arena") {
  TEST_CASE("reset keeps the largest block within 16 MiB, so a run as large as the last needs no new block") {
    Arena a;
    fill(a, 10u << 20);
    a.reset();
    size_t kept = a.held();
    CHECK(kept >= (4u << 20));
    CHECK(kept <= Arena::kKeptBlock);
    CHECK(a.allocated() == 0);
    fill(a, kept - 4096);  // fits in the block kept
    CHECK(a.held() == kept);
    a.reset();
    CHECK(a.held() == kept);
  }

  TEST_CASE("a run past 16 MiB leaves at most 16 MiB held; a first block past it leaves none") {
    Arena a;
    fill(a, 100u << 20);
    CHECK(a.held() > (100u << 20) - 1);
    a.reset();
    CHECK(a.held() <= Arena::kKeptBlock);
    CHECK(a.held() > 0);
    Arena big;
    big.alloc(Arena::kKeptBlock + 1);  // one allocation larger than the bound: a block of its own
    big.reset();
    CHECK(big.held() == 0);
    std::memset(big.alloc(100), 2, 100);  // and it allocates afresh
    CHECK(big.held() > 0);
  }
}

}  // namespace
}  // namespace aup::vm

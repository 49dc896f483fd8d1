// Huge pages for the server's heap (cli/huge_pages.h): the tunable is
// added to what GLIBC_TUNABLES holds, and an operator's own choice of it
// is kept. The restart itself: tests/cli/huge_pages_test.sh.
#include "cli/huge_pages.h"

#include <doctest/doctest.h>

namespace aup::cli {

TEST_SUITE("huge_pages") {
  TEST_CASE("unset: the tunable alone") {
    CHECK(with_huge_pages(nullptr) == "glibc.malloc.hugetlb=1");
    CHECK(with_huge_pages("") == "glibc.malloc.hugetlb=1");
  }

  TEST_CASE("other tunables are kept, the tunable after them") {
    CHECK(with_huge_pages("glibc.malloc.tcache_count=0:glibc.malloc.top_pad=1048576") ==
          "glibc.malloc.tcache_count=0:glibc.malloc.top_pad=1048576:glibc.malloc.hugetlb=1");
  }

  TEST_CASE("an operator's glibc.malloc.hugetlb, whatever its value, is left alone") {
    CHECK_FALSE(with_huge_pages("glibc.malloc.hugetlb=0"));
    CHECK_FALSE(with_huge_pages("glibc.malloc.check=0:glibc.malloc.hugetlb=2"));
    // And so a restarted aup never restarts again.
    CHECK_FALSE(with_huge_pages(with_huge_pages(nullptr)->c_str()));
  }
}

}  // namespace aup::cli

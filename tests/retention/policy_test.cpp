#include "bench/retention/policy.h"

#include <doctest/doctest.h>

namespace aup::retention {
namespace {

CopyQuestion q(uint64_t source, uint64_t selection, uint64_t live = 0, uint64_t usable = 1u << 20) {
  return CopyQuestion{source, selection, live, usable};
}

TEST_SUITE("policy") {
  TEST_CASE("names round-trip; all eight") {
    CHECK(kAllPolicies.size() == 8);
    for (Policy p : kAllPolicies) CHECK(parse_policy(policy_name(p)) == p);
    CHECK_FALSE(parse_policy("share").has_value());
    CHECK(policy_reuses_buffers(Policy::copy));
    CHECK_FALSE(policy_reuses_buffers(Policy::copy_no_pool));
    CHECK(policy_projects(Policy::project));
    CHECK_FALSE(policy_projects(Policy::copy));
  }

  TEST_CASE("borrow never copies; copy and copy_no_pool always do") {
    for (auto question : {q(65536, 64), q(65536, 65536), q(64, 64)}) {
      CHECK_FALSE(should_copy(Policy::borrow, question));
      CHECK(should_copy(Policy::copy, question));
      CHECK(should_copy(Policy::copy_no_pool, question));
    }
  }

  TEST_CASE("thresholds compare capacities, at the boundary inclusive") {
    CHECK(should_copy(Policy::threshold2, q(128, 64)));
    CHECK_FALSE(should_copy(Policy::threshold2, q(64, 64)));
    CHECK(should_copy(Policy::threshold4, q(256, 64)));
    CHECK_FALSE(should_copy(Policy::threshold4, q(128, 64)));
    CHECK(should_copy(Policy::threshold8, q(512, 64)));
    CHECK_FALSE(should_copy(Policy::threshold8, q(256, 64)));
    // The 48 KiB selection of a 64 KiB record: both 64 KiB buffers.
    CHECK_FALSE(should_copy(Policy::threshold2, q(65536, 65536)));
  }

  TEST_CASE("pressure copies a smaller selection once live buffers pass half the usable budget") {
    CHECK_FALSE(should_copy(Policy::pressure, q(65536, 64, 500, 1000)));
    CHECK(should_copy(Policy::pressure, q(65536, 64, 501, 1000)));
    // Not when the copy would be as big as the source.
    CHECK_FALSE(should_copy(Policy::pressure, q(65536, 65536, 900, 1000)));
  }
}

}  // namespace
}  // namespace aup::retention

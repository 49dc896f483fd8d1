#include "bench/retention/driver.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "bench/retention/conditions.h"

namespace aup::retention {
namespace {

TEST_SUITE("driver") {
  TEST_CASE("the six conditions") {
    CHECK(kSeedRecords == 2048);
    CHECK(kSeedRecordSeed == 20260922);
    std::set<std::string_view> names;
    int slow = 0;
    for (const Condition& c : kSeedConditions) {
      names.insert(c.name);
      if (c.timing.hold_ns == 5'000'000 && c.timing.gap_ns == 20'000) ++slow;
    }
    CHECK(names.size() == kSeedConditions.size());
    CHECK(slow == 5);
    auto find = [](std::string_view name) {
      return *std::find_if(kSeedConditions.begin(), kSeedConditions.end(),
                           [&](const Condition& c) { return c.name == name; });
    };
    CHECK(find("small-q64").queue_limit == 64);
    CHECK(find("small-q512").queue_limit == 512);
    CHECK(find("mixed-2mib").budget_bytes == 2u << 20);
    CHECK(find("mixed-2mib").shape == Shape::mixed);
    CHECK(find("large-q512").shape == Shape::large_selection);
    CHECK(find("fast-q512").timing.hold_ns == 0);
    CHECK(find("fast-q512").timing.gap_ns == 0);
  }

  TEST_CASE("each repetition runs every policy once, in a seeded shuffled order") {
    std::set<std::vector<Policy>> orders;
    for (uint32_t rep = 1; rep <= 5; ++rep) {
      auto order = shuffled_policies(20260922, 0, rep);
      CHECK(order == shuffled_policies(20260922, 0, rep));  // reproducible
      auto sorted = order;
      std::sort(sorted.begin(), sorted.end());
      CHECK(sorted == std::vector<Policy>(kAllPolicies.begin(), kAllPolicies.end()));
      orders.insert(order);
    }
    CHECK(orders.size() > 1);  // 5 draws of 8! orders: equal ones would mean no shuffle
  }

  TEST_CASE("the environment is described") {
    Environment e = describe_environment();
    CHECK_FALSE(e.cpu_model.empty());
    CHECK_FALSE(e.kernel.empty());
    CHECK(e.compiler.rfind("g++", 0) == 0);
    CHECK(e.online_cpus >= 1);
    CHECK(e.generated_utc.size() == 20);
  }
}

}  // namespace
}  // namespace aup::retention

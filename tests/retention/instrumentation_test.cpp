#include "bench/retention/instrumentation.h"

#include <doctest/doctest.h>

#include <vector>

namespace aup::retention {
namespace {

TEST_SUITE("instrumentation") {
  TEST_CASE("nearest-rank percentiles") {
    std::vector<int64_t> s;
    for (int64_t i = 100; i >= 1; --i) s.push_back(i);
    CHECK(percentile(s, 990) == 99);
    CHECK(percentile(s, 500) == 50);
    CHECK(percentile(s, 1000) == 100);
    CHECK(percentile(s, 1) == 1);
    std::vector<int64_t> one = {42};
    CHECK(percentile(one, 990) == 42);
    std::vector<int64_t> three = {3, 1, 2};
    CHECK(percentile(three, 990) == 3);  // ceil(2.97) = 3rd
    CHECK(percentile({}, 990) == 0);
  }

  TEST_CASE("VmHWM is parsed from status text in kB") {
    std::string status =
        "Name:\tretention\nVmPeak:\t   12345 kB\nVmHWM:\t    7544 kB\nVmRSS:\t    7000 kB\nThreads:\t1\n";
    CHECK(parse_status_kib(status, "VmHWM") == 7544u);
    CHECK(parse_status_kib(status, "VmRSS") == 7000u);
    CHECK_FALSE(parse_status_kib(status, "VmSwap").has_value());
    CHECK_FALSE(parse_status_kib("VmHWM:\t12 MB\n", "VmHWM").has_value());
    CHECK_FALSE(parse_status_kib("VmHWMX:\t12 kB\n", "VmHWM").has_value());
  }

  TEST_CASE("this process has a VmHWM") {
    auto hwm = read_vm_hwm_kib();
    REQUIRE(hwm.ok());
    CHECK(hwm.value() > 0);
  }

  TEST_CASE("a stats line round-trips, flags as 0/1") {
    RunStats s;
    s.policy = "threshold4";
    s.records = 2048;
    s.interrupted = true;
    s.elapsed_ns = 123456789;
    s.peak_managed_bytes = 4267000;
    s.vm_hwm_kib = 5000;
    std::string line = format_stats(s);
    CHECK(line.find("interrupted=1") != std::string::npos);
    CHECK(line.find("reclaimed=0") != std::string::npos);
    auto back = parse_stats(line + "\n");
    REQUIRE(back.ok());
    CHECK(back.value().policy == "threshold4");
    CHECK(back.value().records == 2048);
    CHECK(back.value().interrupted);
    CHECK_FALSE(back.value().reclaimed);
    CHECK(back.value().elapsed_ns == 123456789);
    CHECK(back.value().peak_managed_bytes == 4267000);
    CHECK(back.value().vm_hwm_kib == 5000);
  }

  TEST_CASE("a stats line with a missing, unknown or bad field is refused") {
    std::string line = format_stats(RunStats{});
    CHECK_FALSE(parse_stats(line.substr(0, line.rfind(' '))).ok());
    CHECK_FALSE(parse_stats(line + " extra=1").ok());
    std::string bad = line;
    bad.replace(bad.find("records=0"), 9, "records=x");
    CHECK_FALSE(parse_stats(bad).ok());
    CHECK_FALSE(parse_stats("").ok());
  }
}

}  // namespace
}  // namespace aup::retention

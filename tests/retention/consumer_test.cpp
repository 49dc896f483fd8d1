#include "bench/retention/consumer.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "bench/retention/instrumentation.h"
#include "tests/retention/test_util.h"

namespace aup::retention {
namespace {

std::vector<std::byte> bytes(std::string_view s) {
  auto b = std::as_bytes(std::span(s.data(), s.size()));
  return {b.begin(), b.end()};
}

TEST_SUITE("consumer") {
  TEST_CASE("frames carry the sequence number, the length and the bytes") {
    test::MemFile out;
    Consumer c(out.fd(), ConsumerTiming{0, 0}, 3);
    auto a = bytes("hello");
    auto b = bytes("");
    auto d = bytes("xyz");
    int64_t t = now_ns();
    REQUIRE(c.write(0, a, t).ok());
    REQUIRE(c.write(1, b, t).ok());
    REQUIRE(c.write(2, d, t).ok());
    size_t parsed = 0;
    auto frames = test::parse_frames(out.contents(), &parsed);
    REQUIRE(frames.size() == 3);
    CHECK(parsed == out.contents().size());
    CHECK(frames[0].seq == 0);
    CHECK(frames[0].bytes == a);
    CHECK(frames[1].bytes.empty());
    CHECK(frames[2].seq == 2);
    CHECK(frames[2].bytes == d);
    CHECK(c.outputs() == 3);
    CHECK(c.output_bytes() == 3 * kFrameHeaderBytes + 8);
  }

  TEST_CASE("a result is due after its hold, and after the gap since the last output") {
    test::MemFile out;
    const int64_t hold = 5'000'000;
    const int64_t gap = 1'000'000'000'000;  // far beyond any clock reading here
    Consumer c(out.fd(), ConsumerTiming{hold, gap}, 2);
    CHECK(c.ready_at_ns(0) == hold);  // no previous output: only the hold
    CHECK(c.ready_at_ns(7) == 7 + hold);
    REQUIRE(c.write(0, bytes("a"), now_ns()).ok());
    CHECK(c.ready_at_ns(0) > gap);  // now the gap rules
  }

  TEST_CASE("a latency sample per output, never negative") {
    test::MemFile out;
    Consumer c(out.fd(), ConsumerTiming{0, 0}, 4);
    for (uint32_t i = 0; i < 4; ++i) REQUIRE(c.write(i, bytes("q"), now_ns()).ok());
    REQUIRE(c.latencies_ns().size() == 4);
    for (int64_t l : c.latencies_ns()) CHECK(l >= 0);
  }

  TEST_CASE("a full device is an error value with the reason") {
    int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    Consumer c(fd, ConsumerTiming{0, 0}, 1);
    Status s = c.write(0, bytes("data"), now_ns());
    ::close(fd);
    REQUIRE_FALSE(s.ok());
    CHECK(s.message().find("cannot write output (record 0)") != std::string::npos);
    CHECK(s.message().find("No space left on device") != std::string::npos);
    CHECK(c.outputs() == 0);
  }
}

}  // namespace
}  // namespace aup::retention

// The whole run, in memory: byte-exact outputs for every policy, order,
// budget failures, the copy-in-progress, reclaiming, stopping, a full disk.
// Timing never decides a check: where a queue must fill before outputs
// start, the hold is far longer than reading a few records takes.
#include "bench/retention/pipeline.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include "bench/retention/bounded_queue.h"
#include "bench/retention/buffer_pool.h"
#include "tests/retention/test_util.h"

namespace aup::retention {
namespace {

using test::make_fixture;
using test::MemFile;
using test::TestFixture;

constexpr uint64_t kKiB = 1024;
constexpr ConsumerTiming kNoWait{0, 0};
// Long enough that the reader fills the queue before the first output is
// due, on any machine and under sanitizers.
constexpr ConsumerTiming kLongHold{50'000'000, 0};

struct Outcome {
  Result<RunStats> stats;
  std::vector<std::byte> output;
};

Outcome run(const TestFixture& f, RunConfig config) {
  MemFile in(f.input);
  MemFile out;
  SignalWatch signals({SIGTERM, SIGINT});
  auto stats = run_pipeline(config, in.fd(), out.fd(), signals);
  return Outcome{std::move(stats), out.contents()};
}

RunConfig config(Policy p, uint64_t budget, uint32_t queue, ConsumerTiming timing = kNoWait) {
  return RunConfig{p, budget, queue, timing};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_SUITE("pipeline") {
  TEST_CASE("every policy writes exactly the expected bytes, on every shape") {
    for (Shape shape : {Shape::small_selection, Shape::large_selection, Shape::mixed}) {
      auto f = make_fixture(shape, 24);
      for (Policy p : kAllPolicies) {
        CAPTURE(shape_name(shape));
        CAPTURE(policy_name(p));
        auto o = run(f, config(p, 8u << 20, 8, ConsumerTiming{200'000, 10'000}));
        REQUIRE(o.stats.ok());
        CHECK(o.output == f.expected);
        const RunStats& s = o.stats.value();
        CHECK(s.records == 24);
        CHECK(s.outputs == 24);
        CHECK(s.input_bytes_read == f.input.size());  // every input byte read, project included
        CHECK(s.output_bytes == f.expected.size());
        CHECK(s.reclaimed);
        CHECK_FALSE(s.interrupted);
        CHECK(s.peak_managed_bytes <= s.budget_bytes);
      }
    }
  }

  TEST_CASE("outputs leave in input order, one whole frame per record") {
    auto f = make_fixture(Shape::mixed, 40);
    auto o = run(f, config(Policy::threshold4, 2u << 20, 16, ConsumerTiming{100'000, 0}));
    REQUIRE(o.stats.ok());
    size_t parsed = 0;
    auto frames = test::parse_frames(o.output, &parsed);
    CHECK(parsed == o.output.size());
    REQUIRE(frames.size() == 40);
    for (uint32_t i = 0; i < 40; ++i) CHECK(frames[i].seq == i);
  }

  TEST_CASE("borrowing holds whole sources; copying holds selections") {
    // 16 records, 16 slots, a long hold: all are queued before one is due.
    auto f = make_fixture(Shape::small_selection, 16);
    uint64_t fixed = fixed_bytes(config(Policy::borrow, 0, 16));
    auto borrow = run(f, config(Policy::borrow, 8u << 20, 16, kLongHold));
    auto copy = run(f, config(Policy::copy, 8u << 20, 16, kLongHold));
    auto project = run(f, config(Policy::project, 8u << 20, 16, kLongHold));
    REQUIRE(borrow.stats.ok());
    REQUIRE(copy.stats.ok());
    REQUIRE(project.stats.ok());
    CHECK(borrow.stats.value().peak_managed_bytes == fixed + 16 * 64 * kKiB);
    CHECK(borrow.stats.value().peak_live_bytes == 16 * 64 * kKiB);
    // One source buffer, reused, plus the 16 queued 64-byte selections.
    CHECK(copy.stats.value().peak_managed_bytes == fixed + 64 * kKiB + 16 * 64);
    // The last copy: its source, its selection and the 15 queued before it.
    CHECK(copy.stats.value().peak_live_bytes == 64 * kKiB + 16 * 64);
    CHECK(copy.stats.value().allocation_calls == 17);
    CHECK(copy.stats.value().bytes_copied == 16 * 64);
    CHECK(project.stats.value().peak_managed_bytes == fixed + kScratchBytes + 16 * 64);
    CHECK(project.stats.value().bytes_copied == 0);
  }

  TEST_CASE("a fast consumer never sleeps; a held queue does") {
    auto f = make_fixture(Shape::small_selection, 8);
    auto fast = run(f, config(Policy::copy, 8u << 20, 8));
    auto held = run(f, config(Policy::copy, 8u << 20, 8, kLongHold));
    REQUIRE(fast.stats.ok());
    REQUIRE(held.stats.ok());
    CHECK(fast.stats.value().sleeps == 0);
    CHECK(held.stats.value().sleeps >= 1);
  }

  TEST_CASE("copy_no_pool allocates for every buffer; copy reuses") {
    auto f = make_fixture(Shape::small_selection, 30);
    auto pooled = run(f, config(Policy::copy, 8u << 20, 4));
    auto unpooled = run(f, config(Policy::copy_no_pool, 8u << 20, 4));
    REQUIRE(pooled.stats.ok());
    REQUIRE(unpooled.stats.ok());
    CHECK(unpooled.stats.value().allocation_calls == 60);
    CHECK(unpooled.stats.value().reuses == 0);
    CHECK(pooled.stats.value().allocation_calls < 10);
    CHECK(pooled.stats.value().copies == unpooled.stats.value().copies);
  }

  TEST_CASE("thresholds look at capacities: a 48 KiB selection of 64 KiB is not copied") {
    auto f = make_fixture(Shape::large_selection, 10);
    auto copy = run(f, config(Policy::copy, 8u << 20, 4));
    auto t2 = run(f, config(Policy::threshold2, 8u << 20, 4));
    REQUIRE(copy.stats.ok());
    REQUIRE(t2.stats.ok());
    CHECK(copy.stats.value().bytes_copied == 10 * 48 * kKiB);
    CHECK(t2.stats.value().copies == 0);
  }

  TEST_CASE("pressure copies only when live buffers pass half the usable budget") {
    auto f = make_fixture(Shape::small_selection, 16);
    auto roomy = run(f, config(Policy::pressure, 1u << 30, 16, kLongHold));
    REQUIRE(roomy.stats.ok());
    CHECK(roomy.stats.value().copies == 0);
    uint64_t fixed = fixed_bytes(config(Policy::pressure, 0, 16));
    auto tight = run(f, config(Policy::pressure, fixed + 8 * 64 * kKiB, 16, kLongHold));
    REQUIRE(tight.stats.ok());
    CHECK(tight.stats.value().copies > 0);
    CHECK(tight.output == f.expected);
  }

  TEST_CASE("a full budget makes the reader wait for outputs, not fail") {
    auto f = make_fixture(Shape::small_selection, 6);
    uint64_t fixed = fixed_bytes(config(Policy::borrow, 0, 16));
    auto o = run(f, config(Policy::borrow, fixed + 4 * 64 * kKiB, 16, kLongHold));
    REQUIRE(o.stats.ok());
    CHECK(o.output == f.expected);
    CHECK(o.stats.value().space_waits > 0);
    CHECK(o.stats.value().peak_live_buffers <= 4);
  }

  TEST_CASE("budget too small for one record: an explicit failure that says so") {
    auto f = make_fixture(Shape::small_selection, 3);
    auto o = run(f, config(Policy::borrow, 32 * kKiB, 4));
    REQUIRE_FALSE(o.stats.ok());
    CHECK(contains(o.stats.message(), "budget too small: record 0 needs a 65536-byte buffer"));
    CHECK(contains(o.stats.message(), "no queued output is left to free space"));
    CHECK(o.output.empty());
  }

  TEST_CASE("budget too small for the queue's own slots") {
    auto f = make_fixture(Shape::small_selection, 3);
    auto o = run(f, config(Policy::copy, 1024, 512));
    REQUIRE_FALSE(o.stats.ok());
    CHECK(contains(o.stats.message(), "budget too small: the fixed space"));
  }

  TEST_CASE("a copy needs room for the source and the selection at once") {
    // Room for one 64 KiB buffer: borrowing works, copying 48 KiB (a 64 KiB
    // class) out of it cannot.
    auto f = make_fixture(Shape::large_selection, 4);
    uint64_t budget = fixed_bytes(config(Policy::copy, 0, 2)) + 64 * kKiB + 1000;
    auto borrow = run(f, config(Policy::borrow, budget, 2));
    REQUIRE(borrow.stats.ok());
    CHECK(borrow.output == f.expected);
    auto copy = run(f, config(Policy::copy, budget, 2));
    REQUIRE_FALSE(copy.stats.ok());
    CHECK(contains(copy.stats.message(),
                   "record 0 needs a 65536-byte buffer for its selection while its source is held"));
  }

  TEST_CASE("truncated input fails the run; buffers are still reclaimed") {
    auto f = make_fixture(Shape::small_selection, 6);
    REQUIRE(f.input.size() > 100);
    // (erase, not resize(size - 100): GCC 12 at -O1 with ASan warns that
    // the size could wrap)
    f.input.erase(f.input.end() - 100, f.input.end());
    for (Policy p : kAllPolicies) {
      CAPTURE(policy_name(p));
      auto o = run(f, config(p, 8u << 20, 4, kLongHold));
      REQUIRE_FALSE(o.stats.ok());
      CHECK(contains(o.stats.message(), "record 5: truncated input"));
      // (BufferPool asserts on destruction that every buffer came back.)
    }
  }

  TEST_CASE("an invalid range fails the run before any of that record is read") {
    auto f = make_fixture(Shape::small_selection, 4);
    test::set_u32(f.input, test::record_offset(f.input, 2) + 12, 70000);
    auto o = run(f, config(Policy::project, 8u << 20, 8));
    REQUIRE_FALSE(o.stats.ok());
    CHECK(contains(o.stats.message(), "record 2: invalid range"));
    // Records 0 and 1 were output whole before the failure was met.
    auto frames = test::parse_frames(o.output);
    CHECK(frames.size() == 2);
  }

  TEST_CASE("a full output device is an error value, not a crash") {
    auto f = make_fixture(Shape::small_selection, 4);
    MemFile in(f.input);
    int out = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
    REQUIRE(out >= 0);
    SignalWatch signals({SIGTERM, SIGINT});
    auto stats = run_pipeline(config(Policy::copy, 8u << 20, 4), in.fd(), out, signals);
    ::close(out);
    REQUIRE_FALSE(stats.ok());
    CHECK(contains(stats.message(), "cannot write output (record 0): No space left on device"));
  }

  TEST_CASE("a SIGTERM before the run stops it at the first step") {
    auto f = make_fixture(Shape::small_selection, 4);
    MemFile in(f.input);
    MemFile out;
    SignalWatch signals({SIGTERM, SIGINT});
    raise(SIGTERM);
    auto stats = run_pipeline(config(Policy::borrow, 8u << 20, 4), in.fd(), out.fd(), signals);
    REQUIRE(stats.ok());
    CHECK(stats.value().interrupted);
    CHECK(stats.value().records == 0);
    CHECK(stats.value().reclaimed);
  }

  TEST_CASE("a SIGTERM during a wait stops the run cleanly: whole frames, buffers reclaimed") {
    // The first output is written at once; the second would wait an hour
    // (the gap), so the signal, sent by a timer, lands in that wait.
    auto f = make_fixture(Shape::small_selection, 8);
    MemFile in(f.input);
    MemFile out;
    SignalWatch signals({SIGTERM, SIGINT});
    sigevent ev{};
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGTERM;
    timer_t timer{};
    REQUIRE(timer_create(CLOCK_MONOTONIC, &ev, &timer) == 0);
    itimerspec when{};
    when.it_value.tv_nsec = 20'000'000;
    REQUIRE(timer_settime(timer, 0, &when, nullptr) == 0);
    auto stats = run_pipeline(config(Policy::borrow, 8u << 20, 4, ConsumerTiming{0, 3'600'000'000'000}),
                              in.fd(), out.fd(), signals);
    timer_delete(timer);
    REQUIRE(stats.ok());
    const RunStats& s = stats.value();
    CHECK(s.interrupted);
    CHECK(s.outputs == 1);
    CHECK(s.reclaimed);
    CHECK(signals.stop_signal() == SIGTERM);
    auto written = out.contents();
    CHECK(written == std::vector<std::byte>(f.expected.begin(), f.expected.begin() + kFrameHeaderBytes + 64));
  }

  TEST_CASE("a queue limit outside its bound is refused") {
    auto f = make_fixture(Shape::small_selection, 1);
    auto o = run(f, config(Policy::copy, 1u << 30, kMaxQueueLimit + 1));
    REQUIRE_FALSE(o.stats.ok());
    CHECK(contains(o.stats.message(), "queue limit"));
  }
}

}  // namespace
}  // namespace aup::retention

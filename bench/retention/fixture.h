// Seeded synthetic input (record_format.h) and the output every policy must
// produce from it. The generator computes the expected output itself, from
// the records it draws, so the check does not trust the reader under test.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "bench/retention/record_format.h"
#include "bench/retention/status.h"

namespace aup::retention {

// The record shapes the conditions use (conditions.h).
enum class Shape : uint8_t {
  small_selection,  // 64 KiB bodies, 64-byte selection at a random offset
  large_selection,  // 64 KiB bodies, 48 KiB selection at a random offset
  mixed,            // 4..256 KiB bodies, mixed selection ratios
};

std::string_view shape_name(Shape shape);
std::optional<Shape> parse_shape(std::string_view name);

// SplitMix64 (Steele, Lea, Flood 2014): a small generator whose whole
// sequence follows from the seed, the same on every platform.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), bound > 0 (Lemire's multiply-shift; the bias is
  // below 2^-32 for the bounds used here, which do not need exactness).
  uint32_t below(uint32_t bound) { return static_cast<uint32_t>(((next() >> 32) * bound) >> 32); }

 private:
  uint64_t state_;
};

// The header of the next record of a shape: integer arithmetic only, so a
// seed gives the same records on any machine.
RecordHeader draw_record(Shape shape, SplitMix64& rng);

struct FixtureSpec {
  Shape shape = Shape::small_selection;
  uint32_t records = 0;  // 1..kMaxRecords
  uint64_t seed = 0;
};

struct FixtureInfo {
  uint32_t records = 0;
  uint64_t file_bytes = 0;
  uint64_t file_hash = 0;
  uint64_t body_bytes = 0;
  uint64_t selected_bytes = 0;
  uint64_t output_bytes = 0;
  uint64_t output_hash = 0;  // what every policy's output must hash to
};

// Writes the fixture to `fd` and, if expect_fd >= 0, the expected output to
// expect_fd. Neither descriptor is closed.
Result<FixtureInfo> write_fixture(const FixtureSpec& spec, int fd, int expect_fd);

}  // namespace aup::retention

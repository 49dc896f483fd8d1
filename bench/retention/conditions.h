// The conditions of the comparison, each run with every policy: 2,048
// records per condition, seed 20260922, general budget 8 MiB with queue
// limit 512, a narrow 2 MiB budget for the mixed input, a 64-slot queue as a
// sensitivity check, a slow consumer (5 ms hold, 20 us gap) and a fast one.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "bench/retention/consumer.h"
#include "bench/retention/fixture.h"

namespace aup::retention {

inline constexpr uint64_t kSeedRecordSeed = 20260922;
inline constexpr uint32_t kSeedRecords = 2048;
inline constexpr uint64_t kMiB = 1u << 20;
inline constexpr ConsumerTiming kSlowConsumer{5'000'000, 20'000};
inline constexpr ConsumerTiming kFastConsumer{0, 0};

struct Condition {
  std::string_view name;
  std::string_view description;
  Shape shape;
  uint64_t budget_bytes;
  uint32_t queue_limit;
  ConsumerTiming timing;
};

// small-q512 is the reference; the others change its queue (small-q64),
// its selection (large-q512), its consumer (fast-q512) or its input (the
// mixed sizes, under the narrow 2 MiB budget and under the general 8 MiB).
inline constexpr std::array<Condition, 6> kSeedConditions = {{
    {"small-q512", "64 KiB records, 64-byte selection; 8 MiB budget, queue 512, slow consumer",
     Shape::small_selection, 8 * kMiB, 512, kSlowConsumer},
    {"small-q64", "64 KiB records, 64-byte selection; 8 MiB budget, queue 64, slow consumer",
     Shape::small_selection, 8 * kMiB, 64, kSlowConsumer},
    {"large-q512", "64 KiB records, 48 KiB selection; 8 MiB budget, queue 512, slow consumer",
     Shape::large_selection, 8 * kMiB, 512, kSlowConsumer},
    {"fast-q512",
     "64 KiB records, 64-byte selection; 8 MiB budget, queue 512, fast consumer (no hold, no gap)",
     Shape::small_selection, 8 * kMiB, 512, kFastConsumer},
    {"mixed-2mib", "4-256 KiB records, mixed selections; 2 MiB budget, queue 512, slow consumer",
     Shape::mixed, 2 * kMiB, 512, kSlowConsumer},
    {"mixed-8mib", "4-256 KiB records, mixed selections; 8 MiB budget, queue 512, slow consumer",
     Shape::mixed, 8 * kMiB, 512, kSlowConsumer},
}};

}  // namespace aup::retention

// The slow consumer: a queued result may be written only once it has been
// held `hold_ns` since it was queued, and only `gap_ns` after the previous
// output was written. Both are synthetic conditions (5 ms and 20 us): they make results stay queued, which is what makes retention
// matter. Writes are real file I/O (one writev per frame, no fsync).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bench/retention/status.h"

namespace aup::retention {

struct ConsumerTiming {
  int64_t hold_ns = 0;
  int64_t gap_ns = 0;
};

class Consumer {
 public:
  // `out_fd` must outlive the consumer and is not closed by it. Latency
  // samples are reserved for `max_outputs` up front, so that recording them
  // allocates nothing during the run.
  Consumer(int out_fd, ConsumerTiming timing, uint32_t max_outputs);

  // The earliest time a result queued at `enqueued_ns` may be written.
  int64_t ready_at_ns(int64_t enqueued_ns) const;

  // Writes the frame for record `seq` (which must follow the previous one)
  // and records its latency from `started_ns`.
  Status write(uint32_t seq, std::span<const std::byte> selection, int64_t started_ns);

  uint32_t outputs() const { return static_cast<uint32_t>(latencies_ns_.size()); }
  uint64_t output_bytes() const { return output_bytes_; }
  std::vector<int64_t>& latencies_ns() { return latencies_ns_; }

 private:
  int out_fd_;
  ConsumerTiming timing_;
  uint32_t max_outputs_;
  int64_t last_output_ns_;
  uint64_t output_bytes_ = 0;
  std::vector<int64_t> latencies_ns_;
};

}  // namespace aup::retention

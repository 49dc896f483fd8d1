// The line a second `aup run --listen --stats` prints on stderr (both
// servers): events/s, queries/s, events per commit, commit latency, the
// owner thread's share of a core, snapshot nodes copied and recycled, log
// bytes, connections. Owner thread only.
#pragma once

#include <cstdint>
#include <cstdio>

#include "runtime/durability.h"
#include "storage/latency.h"
#include "vm/state.h"

namespace aup::runtime {

// CPU time of the calling thread, in seconds.
double thread_cpu_seconds();

struct StatsCounts {
  uint64_t events = 0;   // applied or failed
  uint64_t queries = 0;
  uint64_t commits = 0;  // batches with at least one applied event
  uint32_t connections = 0;
};

class StatsLine {
 public:
  // `state` and `durability` must outlive it; it starts an interval now.
  StatsLine(const vm::State& state, const Durability& durability);
  // Prints the figures of the interval since the last line and starts a
  // new one; `commits` holds this interval's commit latencies and is
  // emptied.
  void print(std::FILE* err, double seconds, const StatsCounts& totals, storage::LatencyHistogram& commits);

 private:
  uint64_t copied() const;
  uint64_t recycled() const;

  const vm::State& state_;
  const Durability& durability_;
  StatsCounts last_;
  uint64_t last_log_bytes_ = 0, last_copied_ = 0, last_recycled_ = 0;
  double last_cpu_ = 0;
};

}  // namespace aup::runtime

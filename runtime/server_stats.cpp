#include "runtime/server_stats.h"

#include <fmt/format.h>
#include <time.h>

namespace aup::runtime {

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

StatsLine::StatsLine(const vm::State& state, const Durability& durability)
    : state_(state), durability_(durability) {
  last_log_bytes_ = durability_.log_bytes();
  last_copied_ = copied();
  last_recycled_ = recycled();
  last_cpu_ = thread_cpu_seconds();
}

uint64_t StatsLine::copied() const {
  uint64_t n = 0;
  for (uint32_t t = 0; t < state_.table_count(); ++t) n += state_.table(t).nodes_copied();
  return n;
}

uint64_t StatsLine::recycled() const {
  uint64_t n = 0;
  for (uint32_t t = 0; t < state_.table_count(); ++t) n += state_.table(t).nodes_recycled();
  return n;
}

void StatsLine::print(std::FILE* err, double seconds, const StatsCounts& totals, storage::LatencyHistogram& commits) {
  double cpu = thread_cpu_seconds();
  uint64_t log_bytes = durability_.log_bytes(), now_copied = copied(), now_recycled = recycled();
  uint64_t events = totals.events - last_.events, batches = totals.commits - last_.commits;
  fmt::print(err,
             "aup: stats {{\"events_per_s\":{:.0f},\"queries_per_s\":{:.0f},\"batch\":{:.1f},\"commit_p50_us\":{:.1f},"
             "\"commit_p99_us\":{:.1f},\"owner_busy\":{:.2f},\"nodes_copied\":{},\"nodes_recycled\":{},"
             "\"log_bytes\":{},\"connections\":{}}}\n",
             static_cast<double>(events) / seconds, static_cast<double>(totals.queries - last_.queries) / seconds,
             batches ? static_cast<double>(events) / static_cast<double>(batches) : 0.0,
             static_cast<double>(commits.percentile_ns(0.5)) / 1000.0,
             static_cast<double>(commits.percentile_ns(0.99)) / 1000.0, (cpu - last_cpu_) / seconds,
             now_copied - last_copied_, now_recycled - last_recycled_, log_bytes - last_log_bytes_,
             totals.connections);
  std::fflush(err);
  commits = storage::LatencyHistogram{};
  last_ = totals;
  last_cpu_ = cpu;
  last_log_bytes_ = log_bytes;
  last_copied_ = now_copied;
  last_recycled_ = now_recycled;
}

}  // namespace aup::runtime

// What a run measures, and how a measured run reports to the bench driver.
//
// Memory has two views that must not be confused: peak managed bytes (what
// the experiment requested: fixed space, live and pooled buffers; exact)
// and VmHWM, the kernel's peak resident set of the process (approximate,
// includes the program itself). VmHWM is read from /proc/self/status and
// not from getrusage: ru_maxrss survives exec, so a process started by a
// bigger parent can report the parent's peak (docs/retention.md, "ru_maxrss").
// Each measured run is its own process so that both start from nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "bench/retention/status.h"

namespace aup::retention {

// Monotonic nanoseconds (steady clock).
int64_t now_ns();

// Nearest-rank percentile: the smallest sample that at least permille/1000
// of the samples do not exceed. Sorts `samples`; 0 when empty.
int64_t percentile(std::span<int64_t> samples, uint32_t permille);

// The value in kB of a "Key:   123 kB" line of /proc/<pid>/status text.
std::optional<uint64_t> parse_status_kib(std::string_view status_text, std::string_view key);
Result<uint64_t> read_vm_hwm_kib();
uint64_t rusage_maxrss_kib();

// One list of the numeric fields a run reports: the
// struct, the key=value line and its parser are all generated from it.
// clang-format off
#define AUP_RETENTION_STATS_FIELDS(X)                                                     \
  X(uint64_t, records)            /* records read completely */                           \
  X(uint64_t, outputs)            /* frames written */                                    \
  X(bool, interrupted)            /* stopped by SIGTERM/SIGINT */                         \
  X(bool, reclaimed)              /* no buffer live or pooled at the end */               \
  X(int64_t, elapsed_ns)          /* first read to last output and cleanup */             \
  X(int64_t, latency_p50_ns)      /* record header read to its frame written */           \
  X(int64_t, latency_p99_ns)                                                              \
  X(int64_t, latency_max_ns)                                                              \
  X(uint64_t, budget_bytes)                                                               \
  X(uint64_t, fixed_bytes)        /* queue slots, header, scratch */                      \
  X(uint64_t, peak_managed_bytes) /* fixed + live + pooled, at its highest */             \
  X(uint64_t, peak_live_bytes)    /* live buffers only: the pool's free ones aside */     \
  X(uint64_t, peak_live_buffers)                                                          \
  X(uint64_t, peak_queue_depth)                                                           \
  X(uint64_t, copies)             /* selections copied out of a source */                 \
  X(uint64_t, bytes_copied)       /* explicit memcpy bytes, nothing else */               \
  X(uint64_t, allocation_calls)   /* buffers from the system allocator */                 \
  X(uint64_t, free_calls)                                                                 \
  X(uint64_t, reuses)             /* buffers served from the pool */                      \
  X(uint64_t, evictions)          /* pooled buffers freed to make room */                 \
  X(uint64_t, space_waits)        /* times a record waited for an output to free room */  \
  X(uint64_t, sleeps)             /* times the run slept until the head result was due */ \
  X(uint64_t, input_bytes_read)                                                           \
  X(uint64_t, output_bytes)                                                               \
  X(uint64_t, vm_hwm_kib)         /* /proc/self/status VmHWM at the end */                \
  X(uint64_t, rusage_maxrss_kib)  /* kept only to show how it differs */
// clang-format on

struct RunStats {
  std::string policy;
#define AUP_X(type, name) type name = {};
  AUP_RETENTION_STATS_FIELDS(AUP_X)
#undef AUP_X
};

// One line: `policy=copy records=2048 ...`, no newline.
std::string format_stats(const RunStats& stats);
Result<RunStats> parse_stats(std::string_view line);

}  // namespace aup::retention

// One run: the reader, the bounded queue, the budgeted pool and the slow
// consumer, with one policy. Everything but the policy is shared.
//
// It is one thread stepping between the reader and the consumer, run on
// one pinned CPU: each step either writes the head result if it
// is due, or reads the next record if the queue has a slot and the budget
// has room, or else sleeps until the head is due and writes it. So the
// reader is stopped only by a full queue or a full budget, and the
// interleaving, the peaks and the allocation counts are reproducible. When
// a record cannot get room and no output is queued to free some, the run
// fails with "budget too small" instead of waiting for ever.
#pragma once

#include <cstdint>

#include "bench/retention/consumer.h"
#include "bench/retention/instrumentation.h"
#include "bench/retention/policy.h"
#include "bench/retention/signals.h"
#include "bench/retention/status.h"

namespace aup::retention {

// project's scratch for the bytes it reads and drops: small next to the
// 64 KiB records, big enough that skipping one takes a handful of reads.
inline constexpr size_t kScratchBytes = 16 * 1024;

struct RunConfig {
  Policy policy = Policy::copy;
  uint64_t budget_bytes = 8u << 20;
  uint32_t queue_limit = 512;
  ConsumerTiming timing;
};

// The fixed space a configuration counts against its budget.
uint64_t fixed_bytes(const RunConfig& config);

// Reads the fixture on in_fd and writes the frames to out_fd (neither is
// closed). A stop signal on `signals` ends the run early: the result then
// has interrupted = true, every output written is a whole frame, and every
// buffer is reclaimed. VmHWM is the caller's to read (it is per process).
Result<RunStats> run_pipeline(const RunConfig& config, int in_fd, int out_fd, SignalWatch& signals);

}  // namespace aup::retention

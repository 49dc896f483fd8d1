// The bare rate of 4 KiB writes each made durable with fdatasync on the
// volume measured: the most a server that syncs once per transfer could
// answer one client.
#pragma once

#include <string>

#include "bench/common/block_device.h"

namespace aup::bench::peers {

using bench::BlockDevice;

struct SyncRate {
  double seconds = 0;
  double syncs_per_s = 0;
  double p50_us = 0, p99_us = 0;     // of one pwrite + fdatasync
  double device_bytes_per_sync = -1; // -1: no block device found
};

// pwrite of 4 KiB at offset 0 + fdatasync, in a loop for `seconds`, on a
// file in `dir` written whole and synced first (so no sync has to extend
// it or allocate blocks); the file is removed. With `keep_cpu_busy`, a
// thread spins on this thread's CPUs meanwhile: on a virtual machine an
// idle vCPU may learn of a finished sync only at its next timer tick, and
// a server whose CPU is busy does not wait for that (measured here: 4 ms
// idle against under 0.5 ms busy). Throws std::runtime_error when the
// directory refuses.
SyncRate measure_fdatasync(const std::string& dir, double seconds, const BlockDevice& device, bool keep_cpu_busy);

}  // namespace aup::bench::peers

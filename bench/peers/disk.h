// The volume under a data directory: the block device that holds it, whose
// sectors-written counter says what the device was asked to write (every
// process's writes, metadata and journal included), and the bare rate of
// 4 KiB writes each made durable with fdatasync there: the most a server
// that syncs once per transfer could answer one client.
#pragma once

#include <optional>
#include <string>

namespace aup::bench::peers {

class BlockDevice {
 public:
  // The whole disk holding `dir` (the parent of a partition), found from
  // the directory's st_dev through /sys/dev/block/MAJ:MIN. None when it is
  // not a block device (tmpfs, overlayfs): then bytes_written() is empty.
  explicit BlockDevice(const std::string& dir);
  const std::string& name() const { return name_; }  // "vda"; empty: none
  // Sectors written since boot × 512 (/sys/block/DEV/stat, field 7).
  std::optional<double> bytes_written() const;

 private:
  std::string name_;
  std::string stat_path_;
};

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

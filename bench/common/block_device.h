// The block device under a data directory, and what it was asked to write:
// its sectors-written counter counts every process's writes, metadata and
// the file system's journal included, which a process's own write_bytes
// (/proc/PID/io) does not. bench/peers and aup-tpcc report both.
#pragma once

#include <optional>
#include <string>

namespace aup::bench {

class BlockDevice {
 public:
  // The whole disk holding `dir` (the parent of a partition), found from
  // the directory's st_dev through /sys/dev/block/MAJ:MIN. None when it is
  // not a block device (tmpfs, overlayfs): then bytes_written() is empty.
  // Throws std::runtime_error when `dir` cannot be looked at.
  explicit BlockDevice(const std::string& dir);
  const std::string& name() const { return name_; }  // "vda"; empty: none
  // Sectors written since boot × 512 (/sys/block/DEV/stat, field 7).
  std::optional<double> bytes_written() const;

 private:
  std::string name_;
  std::string stat_path_;
};

}  // namespace aup::bench

#include "bench/common/block_device.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace aup::bench {

namespace {
constexpr double kSectorBytes = 512;  // the unit of /sys/block/DEV/stat, whatever the device's own
}

BlockDevice::BlockDevice(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw std::runtime_error("cannot stat " + dir + ": " + std::strerror(errno));
  std::error_code ec;
  std::filesystem::path sys = std::filesystem::canonical(
      "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)), ec);
  if (ec) return;  // not a block device
  if (std::filesystem::exists(sys / "partition")) sys = sys.parent_path();
  if (!std::filesystem::exists(sys / "stat")) return;
  name_ = sys.filename().string();
  stat_path_ = (sys / "stat").string();
}

std::optional<double> BlockDevice::bytes_written() const {
  if (stat_path_.empty()) return std::nullopt;
  std::ifstream in(stat_path_);
  // reads, reads merged, sectors read, ms reading, writes, writes merged, sectors written
  double field = 0;
  for (int i = 0; i < 7; ++i) in >> field;
  if (!in) throw std::runtime_error("cannot parse " + stat_path_);
  return field * kSectorBytes;
}

}  // namespace aup::bench

#include "bench/peers/disk.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench/common/measure.h"
#include "bench/peers/percentile.h"

namespace aup::bench::peers {

namespace {

constexpr size_t kBlock = 4096;

std::string disk_errno_text() { return std::strerror(errno); }

// A file descriptor closed however the measurement ends.
class File {
 public:
  explicit File(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw std::runtime_error("cannot create " + path + ": " + disk_errno_text());
  }
  ~File() { ::close(fd_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  // One 4 KiB write at offset 0, then fdatasync; throws on failure.
  void write_sync(const char* block) const {
    if (::pwrite(fd_, block, kBlock, 0) != static_cast<ssize_t>(kBlock)) throw std::runtime_error("pwrite: " + disk_errno_text());
    if (::fdatasync(fd_) != 0) throw std::runtime_error("fdatasync: " + disk_errno_text());
  }
  void sync() const {
    if (::fsync(fd_) != 0) throw std::runtime_error("fsync: " + disk_errno_text());
  }

 private:
  int fd_;
};

// A thread that spins until it goes (on the CPUs its creator may use).
class Spinner {
 public:
  Spinner()
      : thread_([this] {
          while (!stop_.load(std::memory_order_relaxed)) {
          }
        }) {}
  ~Spinner() {
    stop_.store(true, std::memory_order_relaxed);
    thread_.join();
  }
  Spinner(const Spinner&) = delete;
  Spinner& operator=(const Spinner&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

SyncRate measure_fdatasync(const std::string& dir, double seconds, const BlockDevice& device, bool keep_cpu_busy) {
  std::optional<Spinner> spinner;
  if (keep_cpu_busy) spinner.emplace();
  std::string path = dir + "/fdatasync.probe";
  std::vector<double> latencies;
  SyncRate r;
  alignas(kBlock) static const char block[kBlock] = {'a'};
  {
    File f(path);
    f.write_sync(block);
    f.sync();  // the size and blocks are on disk: each later sync writes data only
    std::optional<double> bytes_before = device.bytes_written();
    double start = now_ns(CLOCK_MONOTONIC), end = start;
    while (end - start < seconds * 1e9) {
      f.write_sync(block);
      double at = now_ns(CLOCK_MONOTONIC);
      latencies.push_back((at - end) / 1e3);
      end = at;
    }
    std::optional<double> bytes_after = device.bytes_written();
    r.seconds = (end - start) / 1e9;
    r.syncs_per_s = static_cast<double>(latencies.size()) / r.seconds;
    if (bytes_before && bytes_after) r.device_bytes_per_sync = (*bytes_after - *bytes_before) / static_cast<double>(latencies.size());
  }
  std::filesystem::remove(path);
  r.p99_us = percentile(latencies, 0.99);
  r.p50_us = percentile(latencies, 0.50);
  return r;
}

}  // namespace aup::bench::peers

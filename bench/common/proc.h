// What /proc says about a process: its CPU time (every thread) and lines of
// its key-value files. Shared by the benchmarks that measure another
// process (the aup server) or themselves.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace aup::bench {

struct ProcessCpu {
  double user_ns = 0;
  double system_ns = 0;
  double total() const { return user_ns + system_ns; }
};

// utime and stime of /proc/PID/stat (PID 0: this process), in nanoseconds
// (clock ticks, 10 ms on most kernels). Throws std::runtime_error when the
// file cannot be read or parsed.
ProcessCpu process_cpu(pid_t pid);

// The whole of /proc/PID/NAME (PID 0: this process); throws when unreadable.
std::string proc_file(pid_t pid, const std::string& name);

// The number after `key` at the start of a line ("write_bytes:",
// "VmRSS:"); 0 when no line starts with it.
uint64_t proc_field(const std::string& text, const std::string& key);

}  // namespace aup::bench

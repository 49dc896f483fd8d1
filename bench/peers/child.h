// One server under test as a child process: aup, redis-server or
// tarantool, each started the same way (posix_spawnp under `taskset -c`,
// its stdout and stderr into a log file), ready once its Unix socket
// accepts a connection, measured from /proc, and stopped with SIGTERM.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/common/proc.h"

namespace aup::bench::peers {

struct ChildSpec {
  std::string name;               // "aup", "redis-server": for messages
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::string cpus;               // a `taskset -c` list; empty: not pinned
  std::string log;                // stdout and stderr go to this file
  std::string socket;             // ready when this accepts a connection
};

class Child {
 public:
  // Starts it and waits until its socket accepts; throws std::runtime_error
  // with the end of its log when it exits first or takes over 60 s.
  explicit Child(ChildSpec spec);
  // A child still running here is being abandoned after an error: killed.
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // utime + stime of every thread (/proc/PID/stat).
  ProcessCpu cpu() const { return process_cpu(pid_); }
  // write_bytes of /proc/PID/io: what it caused to be written to storage.
  uint64_t write_bytes() const;
  // SIGTERM, then waits; throws unless it exits with status 0 within 20 s.
  void stop();

 private:
  // Waits up to `limit_ns` for it to end: true with its wait status.
  bool wait_exit(double limit_ns, int& status);
  // The last lines of its log, for an error message.
  std::string log_tail() const;

  ChildSpec spec_;
  pid_t pid_ = -1;
};

}  // namespace aup::bench::peers

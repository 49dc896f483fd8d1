// One `aup run --listen unix:PATH --stats` process (under `taskset -c`
// when asked): started with posix_spawnp, ready once it prints "aup: listening on", its CPU time read
// from /proc, its --stats lines kept with the time they arrived, and
// stopped with SIGTERM, which must end it with status 0 within seconds.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace aup::bench::server {

struct ServerConfig {
  std::string aup;
  std::string module;
  std::string socket;    // the path after "unix:"
  std::string data_dir;  // --data; empty: --memory
  uint32_t io_threads = 2;
  // A CPU list for `taskset -c` ("1", "0-3"): the server runs only there,
  // so a benchmark can keep its load generator off the server's cores.
  // Empty: no taskset. taskset execs aup, so pid() is still the server's.
  // (The initializers keep -Wmissing-field-initializers quiet for callers
  // that brace-initialize only the fields above.)
  std::string cpus = "";
  // Appended to the command line as they are (`--max-batch`, `--max-line`).
  std::vector<std::string> extra_args = {};
  // Also listen on `:0` (the line protocol over TCP) and `http://:0`.
  bool tcp = false;
  bool http = false;
};

// User and system CPU of a whole process (every thread), in nanoseconds.
struct CpuTimes {
  double user_ns = 0;
  double system_ns = 0;
  double total() const { return user_ns + system_ns; }
};

// One line of `--stats` (runtime/server.cpp prints one a second).
struct StatsLine {
  double at_ns = 0;  // CLOCK_MONOTONIC when it was read
  double events_per_s = 0;
  double batch = 0;
  double commit_p50_us = 0;
  double commit_p99_us = 0;
  double owner_busy = 0;
};

class ServerProcess {
 public:
  // Starts the server and waits until it listens; throws std::runtime_error
  // with what it printed when it exits first or takes too long.
  explicit ServerProcess(const ServerConfig& config);
  // A server still running here is being abandoned after an error: killed.
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The port of the address announced as `prefix` + "127.0.0.1:PORT"
  // ("" for TCP, "http://" for HTTP); 0 when there is none.
  uint16_t port(const std::string& prefix) const;
  // Read from /proc/PID/stat (clock ticks: 10 ms on most kernels).
  CpuTimes cpu() const;
  // The --stats lines read in [from_ns, to_ns].
  std::vector<StatsLine> stats_between(double from_ns, double to_ns) const;
  // SIGTERM, then waits; throws unless it exits with status 0 in time.
  void stop();

 private:
  // Kills a server still running and waits for it and the reader.
  void abandon();
  // Waits up to `limit_ns` for the server to end: its wait status, or
  // nothing when it still runs.
  std::optional<int> wait_exit(double limit_ns);
  void read_stderr(int fd);
  void take_line(const std::string& line);
  std::string stderr_text() const;

  pid_t pid_ = -1;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool listening_ = false;
  uint32_t listeners_ = 1;               // addresses to be announced
  std::vector<std::string> announced_;   // "aup: listening on ADDR": each ADDR
  bool eof_ = false;
  std::vector<std::string> lines_;  // everything else it printed, for errors
  std::vector<StatsLine> stats_;
};

}  // namespace aup::bench::server

// Runs one timed command: `cat INPUT | CONSUMER > OUTPUT`, or the consumer
// alone with its input from a file, as processes started with posix_spawn
// (no shell, whose start-up would be timed too).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aup::bench::events {

struct Timing {
  double wall_ns = 0;         // first spawn to last exit
  double consumer_cpu_ns = 0;  // user + system time of the consumer (wait4)
  double consumer_user_ns = 0;
  long consumer_max_rss_kb = 0;
};

struct Command {
  std::vector<std::string> consumer;  // argv; found on PATH if it has no '/'
  std::string input;                  // file fed to the consumer
  bool through_pipe = true;           // `cat input |`, else stdin is the file itself
  std::string output = "/dev/null";   // the consumer's stdout
};

// Throws std::runtime_error if a process cannot start or exits non-zero.
Timing run(const Command& c);

}  // namespace aup::bench::events

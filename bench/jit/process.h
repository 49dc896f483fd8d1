// Runs one command as a child process (posix_spawnp, no shell) with its
// stdin, stdout and stderr on files, and takes its CPU time from wait4:
// user + system of the child alone, every thread, whatever else the
// machine ran meanwhile.
#pragma once

#include <string>
#include <vector>

namespace aup::bench::jit {

struct Child {
  std::vector<std::string> argv;  // argv[0] without '/' is looked up in PATH
  std::string input = "/dev/null";
  std::string output = "/dev/null";
  std::string errors = "/dev/null";  // stderr
};

struct Usage {
  double cpu_ns = 0;   // user + system (wait4)
  double user_ns = 0;
  double wall_ns = 0;  // spawn to exit
  long max_rss_kb = 0;
};

// Runs `c` to its end; throws std::runtime_error when it cannot start or
// does not exit with status 0 (with the end of what it printed on stderr,
// when that went to a file).
Usage run_child(const Child& c);

// The whole of a file; "" when it cannot be read.
std::string read_text(const std::string& path);

// `argv` as one line, for messages and reports.
std::string command_text(const std::vector<std::string>& argv);

}  // namespace aup::bench::jit

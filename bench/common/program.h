// The command-line plumbing every benchmark shares: the options they all
// take, stepping through the arguments, a flag's value, counts, the usage
// error (exit status 2), and the exit status of a run that threw or failed
// its smoke check. What a benchmark's own flags mean stays in its main.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace aup::bench {

// What every benchmark is told alike; each benchmark's Options adds its own.
struct RunOptions {
  uint32_t reps = 7;    // repetitions of every timed measurement
  uint64_t seed = 92;   // for every random input
  std::string out_dir;  // where NAME.json and NAME.md go; empty: nowhere
  std::string command;  // the command line, for the report
  bool smoke = false;   // the meson test: small, checked, never timings
};

class CommandLine {
 public:
  // `program` names the benchmark in messages and in the command; `synopsis`
  // follows the name on the usage line.
  CommandLine(int argc, char** argv, std::string program, std::string synopsis);

  // Reads every argument in order, so a later flag overrides an earlier one:
  // --help prints the usage line to stdout and exits 0;
  // --reps N and --seed N (counts in [min, max]) and --out DIR go into `o`;
  // any other is given to `own`, which takes it (and its value(), if it has
  // one) or returns false, a usage error. Then sets o.command.
  void parse(RunOptions& o, uint64_t min, uint64_t max, const std::function<bool(const std::string&)>& own);

  // The argument after the flag being read, consumed as its value; a usage
  // error when there is none.
  std::string value();
  // `text` as a whole number in [min, max]; anything else is a usage error
  // naming the flag being read.
  uint64_t count(const std::string& text, uint64_t min, uint64_t max) const;
  // value() read as count().
  uint64_t count_value(uint64_t min, uint64_t max) { return count(value(), min, max); }

  // Prints why and the usage line to stderr and exits with status 2.
  [[noreturn]] void usage(const std::string& why) const;

 private:
  // The flag being read.
  const std::string& arg() const { return args_[at_]; }

  std::string program_;
  std::string synopsis_;
  std::vector<std::string> args_;  // argv[1..]
  size_t at_ = 0;                  // arg() is args_[at_]
  size_t taken_ = 0;               // the last argument taken: a flag or its value
  std::string command_;            // the program name and every argument
};

// Runs a benchmark's `body` and returns its exit status; an exception
// becomes "PROGRAM: what" on stderr and status 1, so a run that cannot
// finish says why instead of ending in std::terminate.
int run_benchmark(const std::string& program, const std::function<int()>& body);

// The smoke check's failure: says so on stderr and returns exit status 1.
int smoke_failure(const std::string& program);

}  // namespace aup::bench

#include "bench/common/program.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <utility>

namespace aup::bench {

CommandLine::CommandLine(int argc, char** argv, std::string program, std::string synopsis)
    : program_(std::move(program)), synopsis_(std::move(synopsis)), command_(program_) {
  for (int i = 1; i < argc; ++i) {
    args_.emplace_back(argv[i]);
    command_ += " " + args_.back();
  }
}

void CommandLine::parse(RunOptions& o, uint64_t min, uint64_t max,
                        const std::function<bool(const std::string&)>& own) {
  for (; taken_ < args_.size(); ++taken_) {
    at_ = taken_;
    const std::string& a = arg();
    if (a == "--help" || a == "-h") {
      std::printf("usage: %s %s\n(each flag is described in the opening comment of this benchmark's main.cpp under "
                  "bench/)\n",
                  program_.c_str(), synopsis_.c_str());
      std::exit(0);
    } else if (a == "--reps") {
      o.reps = static_cast<uint32_t>(count_value(min, max));
    } else if (a == "--seed") {
      o.seed = count_value(min, max);
    } else if (a == "--out") {
      o.out_dir = value();
    } else if (!own(a)) {
      usage("unknown argument `" + a + "`");
    }
  }
  o.command = command_;
}

std::string CommandLine::value() {
  if (taken_ + 1 >= args_.size()) usage(arg() + " needs a value");
  return args_[++taken_];
}

uint64_t CommandLine::count(const std::string& text, uint64_t min, uint64_t max) const {
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < min || v > max) usage(fmt::format("bad value for {}: `{}`", arg(), text));
  return v;
}

void CommandLine::usage(const std::string& why) const {
  std::fprintf(stderr, "%s: %s\nusage: %s %s\n", program_.c_str(), why.c_str(), program_.c_str(), synopsis_.c_str());
  std::exit(2);
}

int run_benchmark(const std::string& program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return 1;
  }
}

int smoke_failure(const std::string& program) {
  std::fprintf(stderr, "%s: a figure is missing or not a positive number\n", program.c_str());
  return 1;
}

}  // namespace aup::bench

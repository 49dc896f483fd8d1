// retention: the buffer retention comparison (docs/retention.md).
//
//   retention bench [--quick] ...   the whole comparison -> bench/results/
//   retention run ...               one measured run (what bench starts)
//   retention gen ...               write a fixture and its expected output
//
// Exit status: 0 done, 1 an operating error (input, output, budget),
// 2 a usage error, 128 + the signal number when stopped by SIGTERM/SIGINT.
#include <unistd.h>

#include <charconv>
#include <climits>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/retention/conditions.h"
#include "bench/retention/driver.h"
#include "bench/retention/fixture.h"
#include "bench/retention/hash.h"
#include "bench/retention/instrumentation.h"
#include "bench/retention/io.h"
#include "bench/retention/pipeline.h"
#include "bench/retention/report.h"
#include "bench/retention/signals.h"

#ifndef AUP_RETENTION_RESULTS_DIR
#define AUP_RETENTION_RESULTS_DIR "bench/results"
#endif

namespace aup::retention {
namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
// The quick run for CI: every condition and policy, few records, one
// repetition. It checks that the bench works, not how fast anything is.
constexpr uint32_t kQuickRecords = 64;

constexpr const char* kUsage =
    "usage:\n"
    "  retention bench [--quick] [--records N] [--reps N] [--seed N] [--baseline POLICY]\n"
    "                  [--cpu N] [--out-dir DIR] [--work-dir DIR] [--keep-work]\n"
    "  retention run --input FILE --output FILE --policy POLICY [--budget BYTES] [--queue N]\n"
    "                [--hold-us N] [--gap-us N] [--stats FILE|-]\n"
    "  retention gen --shape small|large|mixed --records N [--seed N] --out FILE [--expect FILE]\n"
    "policies: borrow copy threshold2 threshold4 threshold8 pressure project copy_no_pool\n"
    "sizes take a KiB, MiB or GiB suffix (--budget 2MiB)\n";

// `--name value` and `--switch` arguments of one command.
class Args {
 public:
  static Result<Args> parse(const std::vector<std::string>& argv, const std::set<std::string>& with_value,
                            const std::set<std::string>& switches) {
    Args a;
    for (size_t i = 0; i < argv.size(); ++i) {
      const std::string& key = argv[i];
      if (switches.count(key)) {
        a.values_[key] = "";
      } else if (with_value.count(key)) {
        if (i + 1 >= argv.size()) return error("{} needs a value", key);
        a.values_[key] = argv[++i];
      } else {
        return error("unknown argument `{}`", key);
      }
    }
    return a;
  }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  std::string get(const std::string& key, const std::string& fallback = "") const {
    auto it = values_.find(key);
    return it == values_.end() ? fallback : it->second;
  }

 private:
  std::map<std::string, std::string> values_;
};

template <class T>
Result<T> parse_uint(const std::string& text, const char* what, T max) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > max) {
    return error("{} must be a whole number up to {}, not `{}`", what, max, text);
  }
  return value;
}

// "2097152", "64KiB", "2MiB".
Result<uint64_t> parse_bytes(const std::string& text, const char* what) {
  uint64_t unit = 1;
  std::string digits = text;
  for (auto [suffix, scale] : {std::pair{"KiB", uint64_t{1} << 10}, std::pair{"MiB", uint64_t{1} << 20},
                               std::pair{"GiB", uint64_t{1} << 30}}) {
    std::string_view s(suffix);
    if (digits.size() > s.size() && digits.compare(digits.size() - s.size(), s.size(), s) == 0) {
      digits.resize(digits.size() - s.size());
      unit = scale;
    }
  }
  auto n = parse_uint<uint64_t>(digits, what, UINT64_MAX / unit);
  if (!n.ok()) return error("{} must be a byte count like 2097152, 64KiB or 2MiB, not `{}`", what, text);
  return n.value() * unit;
}

std::string shell_quote(const std::string& arg) {
  if (!arg.empty() &&
      arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:+,") ==
          std::string::npos) {
    return arg;
  }
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

int usage_error(const std::string& message) {
  fmt::print(stderr, "retention: {}\n{}", message, kUsage);
  return kExitUsage;
}

int fail(const std::string& message) {
  fmt::print(stderr, "retention: {}\n", message);
  return kExitError;
}

int command_run(const std::vector<std::string>& argv) {
  auto args = Args::parse(
      argv, {"--input", "--output", "--policy", "--budget", "--queue", "--hold-us", "--gap-us", "--stats"},
      {});
  if (!args.ok()) return usage_error(args.message());
  const Args& a = args.value();
  if (!a.has("--input") || !a.has("--output") || !a.has("--policy")) {
    return usage_error("run needs --input, --output and --policy");
  }
  RunConfig config;
  auto policy = parse_policy(a.get("--policy"));
  if (!policy) return usage_error(fmt::format("unknown policy `{}`", a.get("--policy")));
  config.policy = *policy;
  auto budget = parse_bytes(a.get("--budget", "8MiB"), "--budget");
  auto queue = parse_uint<uint32_t>(a.get("--queue", "512"), "--queue", UINT32_MAX);
  // An hour of hold or gap is already absurd; the bound keeps ns in range.
  constexpr uint64_t kMaxWaitUs = 3'600'000'000;
  auto hold = parse_uint<uint64_t>(a.get("--hold-us", "5000"), "--hold-us", kMaxWaitUs);
  auto gap = parse_uint<uint64_t>(a.get("--gap-us", "20"), "--gap-us", kMaxWaitUs);
  if (!budget.ok()) return usage_error(budget.message());
  if (!queue.ok()) return usage_error(queue.message());
  if (!hold.ok()) return usage_error(hold.message());
  if (!gap.ok()) return usage_error(gap.message());
  config.budget_bytes = budget.value();
  config.queue_limit = queue.value();
  config.timing =
      ConsumerTiming{static_cast<int64_t>(hold.value() * 1000), static_cast<int64_t>(gap.value() * 1000)};

  // Before anything slow, so a stop signal is never lost to the default
  // action once the run has begun.
  SignalWatch signals({SIGTERM, SIGINT});
  auto input = File::open_read(a.get("--input"));
  if (!input.ok()) return fail(input.message());
  auto output = File::open_write(a.get("--output"));
  if (!output.ok()) return fail(output.message());

  auto result = run_pipeline(config, input.value().fd(), output.value().fd(), signals);
  if (!result.ok()) return fail(result.message());
  RunStats& stats = result.value();
  auto hwm = read_vm_hwm_kib();
  if (!hwm.ok()) return fail(hwm.message());
  stats.vm_hwm_kib = hwm.value();
  stats.rusage_maxrss_kib = rusage_maxrss_kib();

  if (a.has("--stats")) {
    std::string line = format_stats(stats) + "\n";
    if (a.get("--stats") == "-") {
      fmt::print("{}", line);
    } else {
      auto file = File::open_write(a.get("--stats"));
      if (!file.ok()) return fail(file.message());
      auto bytes = std::as_bytes(std::span(line.data(), line.size()));
      if (Status s = write_all(file.value().fd(), bytes); !s.ok())
        return fail("writing the stats: " + s.message());
    }
  }
  if (stats.interrupted) {
    int signo = signals.stop_signal();
    fmt::print(stderr, "retention: stopped by {} after {} records read and {} outputs written; {}\n",
               signo == SIGTERM ? "SIGTERM" : "SIGINT", stats.records, stats.outputs,
               stats.reclaimed ? "all buffers reclaimed" : "BUFFERS NOT RECLAIMED");
    return 128 + signo;
  }
  return 0;
}

int command_gen(const std::vector<std::string>& argv) {
  auto args = Args::parse(argv, {"--shape", "--records", "--seed", "--out", "--expect"}, {});
  if (!args.ok()) return usage_error(args.message());
  const Args& a = args.value();
  if (!a.has("--shape") || !a.has("--records") || !a.has("--out")) {
    return usage_error("gen needs --shape, --records and --out");
  }
  auto shape = parse_shape(a.get("--shape"));
  if (!shape) return usage_error(fmt::format("unknown shape `{}`", a.get("--shape")));
  auto records = parse_uint<uint32_t>(a.get("--records"), "--records", kMaxRecords);
  if (!records.ok()) return usage_error(records.message());
  if (records.value() == 0) return usage_error("--records must be at least 1");
  auto seed = parse_uint<uint64_t>(a.get("--seed", std::to_string(kSeedRecordSeed)), "--seed", UINT64_MAX);
  if (!seed.ok()) return usage_error(seed.message());

  auto out = File::open_write(a.get("--out"));
  if (!out.ok()) return fail(out.message());
  File expect;
  if (a.has("--expect")) {
    auto e = File::open_write(a.get("--expect"));
    if (!e.ok()) return fail(e.message());
    expect = std::move(e.value());
  }
  auto info =
      write_fixture(FixtureSpec{*shape, records.value(), seed.value()}, out.value().fd(), expect.fd());
  if (!info.ok()) return fail(info.message());
  const FixtureInfo& i = info.value();
  fmt::print("records={} file_bytes={} file_hash={} output_bytes={} output_hash={}\n", i.records,
             i.file_bytes, hex64(i.file_hash), i.output_bytes, hex64(i.output_hash));
  return 0;
}

int command_bench(const std::vector<std::string>& argv, const std::string& command_line) {
  auto args =
      Args::parse(argv, {"--records", "--reps", "--seed", "--baseline", "--cpu", "--out-dir", "--work-dir"},
                  {"--quick", "--keep-work"});
  if (!args.ok()) return usage_error(args.message());
  const Args& a = args.value();
  BenchOptions o;
  o.quick = a.has("--quick");
  auto records = parse_uint<uint32_t>(
      a.get("--records", std::to_string(o.quick ? kQuickRecords : kSeedRecords)), "--records", kMaxRecords);
  auto reps = parse_uint<uint32_t>(a.get("--reps", o.quick ? "1" : "5"), "--reps", kMaxRepetitions);
  auto seed = parse_uint<uint64_t>(a.get("--seed", std::to_string(kSeedRecordSeed)), "--seed", UINT64_MAX);
  auto cpu = parse_uint<uint32_t>(a.get("--cpu", "0"), "--cpu", CPU_SETSIZE - 1);
  if (!records.ok()) return usage_error(records.message());
  if (!reps.ok()) return usage_error(reps.message());
  if (!seed.ok()) return usage_error(seed.message());
  if (!cpu.ok()) return usage_error(cpu.message());
  if (records.value() == 0 || reps.value() == 0)
    return usage_error("--records and --reps must be at least 1");
  auto baseline = parse_policy(a.get("--baseline", "copy"));
  if (!baseline) return usage_error(fmt::format("unknown policy `{}`", a.get("--baseline")));
  o.records = records.value();
  o.repetitions = reps.value();
  o.seed = seed.value();
  o.baseline = *baseline;
  o.cpu = a.has("--cpu") ? static_cast<int>(cpu.value()) : -1;
  o.work_dir = a.get("--work-dir");
  o.keep_work = a.has("--keep-work");
  o.command_line = command_line;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return fail("cannot find this program's path in /proc/self/exe");
  o.self_exe.assign(exe, static_cast<size_t>(n));

  SignalWatch signals({SIGTERM, SIGINT, SIGCHLD});
  auto results = run_bench(o, signals);
  if (!results.ok()) {
    if (signals.stop_signal() != 0) {
      fmt::print(stderr, "retention: stopped by signal {}; no results written\n", signals.stop_signal());
      return 128 + signals.stop_signal();
    }
    return fail(results.message() + "; no results written");
  }
  std::string out_dir = a.get("--out-dir", AUP_RETENTION_RESULTS_DIR);
  std::string stem = o.quick ? "retention-quick" : "retention";
  if (Status s = write_reports(results.value(), out_dir, stem); !s.ok()) return fail(s.message());
  fmt::print("retention: wrote {0}/{1}.json and {0}/{1}.md\nretention: produced by: {2}\n", out_dir, stem,
             command_line);
  return 0;
}

int run_main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    fmt::print("{}", kUsage);
    return args.empty() ? kExitUsage : 0;
  }
  std::string command = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "run") return command_run(rest);
  if (command == "gen") return command_gen(rest);
  if (command == "bench") {
    char cwd[PATH_MAX];
    std::string line = getcwd(cwd, sizeof cwd) ? fmt::format("cd {} && ", shell_quote(cwd)) : "";
    for (int i = 0; i < argc; ++i) line += (i ? " " : "") + shell_quote(argv[i]);
    return command_bench(rest, line);
  }
  return usage_error(fmt::format("unknown command `{}`", command));
}

}  // namespace
}  // namespace aup::retention

int main(int argc, char** argv) { return aup::retention::run_main(argc, argv); }

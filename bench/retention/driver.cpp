#include "bench/retention/driver.h"

#include <sched.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/retention/hash.h"
#include "bench/retention/io.h"

extern char** environ;  // POSIX: the environment passed on to each run

namespace aup::retention {
namespace {

// The slowest full run takes about half a second; a run still going after this is
// stuck, and the bench stops rather than wait for ever.
constexpr int64_t kRunTimeoutNs = 300'000'000'000;
// How long the driver sleeps between looks at a run when no SIGCHLD comes.
constexpr int64_t kChildPollNs = 100'000'000;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string first_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  // Bounded by the file: one line a turn.
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown";
}

// Waits for run `pid`; a stop signal is passed on to it.
Result<int> wait_for_run(pid_t pid, SignalWatch& signals) {
  int64_t deadline = now_ns() + kRunTimeoutNs;
  int status = 0;
  for (;;) {
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return error("waitpid: {}", errno_text(errno));
    if (signals.stop_signal() != 0) {
      kill(pid, SIGTERM);
      waitpid(pid, &status, 0);
      return error("stopped by signal {}", signals.stop_signal());
    }
    if (now_ns() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return error("a run took longer than {} s and was killed", kRunTimeoutNs / 1'000'000'000);
    }
    signals.wait_ns(kChildPollNs);  // SIGCHLD ends it early
  }
}

class Bench {
 public:
  Bench(const BenchOptions& options, SignalWatch& signals) : options_(options), signals_(signals) {}
  Result<BenchResults> run();

 private:
  Result<std::string> make_work_dir();
  Status make_fixtures();
  const FixtureRecord& fixture(Shape shape) const;
  std::string fixture_path(Shape shape) const;
  Result<MeasuredRun> measure(uint32_t condition, Policy policy);

  void clean_work_dir();

  const BenchOptions& options_;
  SignalWatch& signals_;
  std::string work_dir_;
  bool created_work_dir_ = false;
  BenchResults results_;
};

Result<std::string> Bench::make_work_dir() {
  if (!options_.work_dir.empty()) {
    std::error_code ec;
    created_work_dir_ = std::filesystem::create_directories(options_.work_dir, ec);
    if (ec) return error("cannot create {}: {}", options_.work_dir, ec.message());
    return options_.work_dir;
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/aup-retention-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr)
    return error("cannot create a work directory: {}", errno_text(errno));
  created_work_dir_ = true;
  return pattern;
}

// Removes only what the bench wrote, and the directory only if the bench
// made it: a --work-dir the user already had is never emptied wholesale.
void Bench::clean_work_dir() {
  std::error_code ec;
  for (Shape shape : {Shape::small_selection, Shape::large_selection, Shape::mixed}) {
    std::filesystem::remove(fixture_path(shape), ec);
  }
  std::filesystem::remove(work_dir_ + "/output", ec);
  std::filesystem::remove(work_dir_ + "/stats", ec);
  if (created_work_dir_) std::filesystem::remove(work_dir_, ec);  // fails, harmlessly, if not empty
}

std::string Bench::fixture_path(Shape shape) const {
  return work_dir_ + "/" + std::string(shape_name(shape)) + ".fixture";
}

const FixtureRecord& Bench::fixture(Shape shape) const {
  for (const FixtureRecord& f : results_.fixtures) {
    if (f.shape == shape) return f;
  }
  assert(false && "fixtures are made for every shape a condition uses");
  return results_.fixtures.front();
}

Status Bench::make_fixtures() {
  for (Shape shape : {Shape::small_selection, Shape::large_selection, Shape::mixed}) {
    FixtureSpec spec{shape, options_.records, options_.seed};
    auto file = File::open_write(fixture_path(shape));
    if (!file.ok()) return file.take_error();
    auto info = write_fixture(spec, file.value().fd(), -1);
    if (!info.ok()) return info.take_error();
    // Read back what was written: the runs read the file, not the generator.
    auto on_disk = hash_file(fixture_path(shape));
    if (!on_disk.ok()) return on_disk.take_error();
    if (on_disk.value() != info.value().file_hash)
      return error("fixture {} changed on disk", fixture_path(shape));
    results_.fixtures.push_back(FixtureRecord{shape, spec, info.value()});
  }
  return {};
}

Result<MeasuredRun> Bench::measure(uint32_t condition, Policy policy) {
  const Condition& c = kSeedConditions[condition];
  const FixtureRecord& fx = fixture(c.shape);
  std::string output = work_dir_ + "/output";
  std::string stats_path = work_dir_ + "/stats";
  // clang-format off: one flag and its value a line
  std::vector<std::string> args = {
      options_.self_exe, "run",
      "--input",         fixture_path(c.shape),
      "--output",        output,
      "--policy",        std::string(policy_name(policy)),
      "--budget",        std::to_string(c.budget_bytes),
      "--queue",         std::to_string(c.queue_limit),
      "--hold-us",       std::to_string(c.timing.hold_ns / 1000),
      "--gap-us",        std::to_string(c.timing.gap_ns / 1000),
      "--stats",         stats_path,
  };
  // clang-format on
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::filesystem::remove(stats_path);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, options_.self_exe.c_str(), nullptr, nullptr, argv.data(), environ);
  if (rc != 0) return error("cannot start {}: {}", options_.self_exe, errno_text(rc));
  auto status = wait_for_run(pid, signals_);
  if (!status.ok()) return status.take_error();
  std::string what = fmt::format("{} on {}", policy_name(policy), c.name);
  if (!WIFEXITED(status.value()) || WEXITSTATUS(status.value()) != 0) {
    return error("the run of {} failed (wait status {})", what, status.value());
  }
  auto stats = parse_stats(read_text(stats_path));
  if (!stats.ok()) return error("the run of {}: {}", what, stats.message());
  auto output_hash = hash_file(output);
  if (!output_hash.ok()) return output_hash.take_error();
  std::filesystem::remove(output);

  const RunStats& s = stats.value();
  if (output_hash.value() != fx.info.output_hash) {
    return error("{}: the output hash {} differs from the expected {}", what, hex64(output_hash.value()),
                 hex64(fx.info.output_hash));
  }
  if (s.input_bytes_read != fx.info.file_bytes || s.records != fx.info.records ||
      s.outputs != fx.info.records) {
    return error("{}: read {} of {} input bytes, {} records, {} outputs", what, s.input_bytes_read,
                 fx.info.file_bytes, s.records, s.outputs);
  }
  if (!s.reclaimed || s.interrupted) return error("{}: buffers not reclaimed or run interrupted", what);
  return MeasuredRun{condition, 0, 0, output_hash.value(), s};
}

Result<BenchResults> Bench::run() {
  results_.options = options_;
  results_.environment = describe_environment();
  if (options_.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<size_t>(options_.cpu), &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      return error("cannot pin to CPU {}: {}", options_.cpu, errno_text(errno));
    }
  }
  auto dir = make_work_dir();
  if (!dir.ok()) return dir.take_error();
  work_dir_ = dir.value();
  fmt::print(stderr, "retention: fixtures in {}\n", work_dir_);
  Status outcome = make_fixtures();
  for (uint32_t ci = 0; outcome.ok() && ci < kSeedConditions.size(); ++ci) {
    const Condition& c = kSeedConditions[ci];
    // Warm-up: page cache, allocator and CPU frequency settle; checked, not kept.
    for (Policy p : kAllPolicies) {
      auto warm = measure(ci, p);
      if (!warm.ok()) {
        outcome = warm.take_error();
        break;
      }
    }
    for (uint32_t rep = 1; outcome.ok() && rep <= options_.repetitions; ++rep) {
      std::vector<Policy> order = shuffled_policies(options_.seed, ci, rep);
      std::string line;
      for (uint32_t pos = 0; pos < order.size(); ++pos) {
        auto run = measure(ci, order[pos]);
        if (!run.ok()) {
          outcome = run.take_error();
          break;
        }
        run.value().repetition = rep;
        run.value().position = pos + 1;
        double finish_ms = static_cast<double>(run.value().stats.elapsed_ns) / 1e6;
        line += fmt::format(" {} {:.1f}", policy_name(order[pos]), finish_ms);
        results_.runs.push_back(std::move(run.value()));
      }
      if (outcome.ok()) {
        fmt::print(stderr, "retention: {} rep {}/{} (ms):{}\n", c.name, rep, options_.repetitions, line);
      }
    }
  }
  if (!options_.keep_work) clean_work_dir();
  if (!outcome.ok()) return outcome.take_error();
  return std::move(results_);
}

}  // namespace

Environment describe_environment() {
  Environment env;
  env.cpu_model = first_cpu_model();
  utsname u{};
  if (uname(&u) == 0) env.kernel = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  env.compiler = "g++ " __VERSION__;
#if defined(__SANITIZE_ADDRESS__)
  constexpr const char* kSanitized = ", AddressSanitizer";
#else
  constexpr const char* kSanitized = "";
#endif
#if defined(NDEBUG)
  constexpr const char* kAsserts = "asserts off";
#else
  constexpr const char* kAsserts = "asserts on";
#endif
#if defined(__OPTIMIZE__)
  constexpr const char* kOptimized = "optimized";
#else
  constexpr const char* kOptimized = "not optimized";
#endif
  env.build = fmt::format("{}, {}{}", kOptimized, kAsserts, kSanitized);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  env.online_cpus = cpus > 0 ? static_cast<uint32_t>(cpus) : 0;
  int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  env.timer_slack_ns = slack > 0 ? static_cast<uint64_t>(slack) : 0;
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  env.generated_utc = buf;
  return env;
}

std::vector<Policy> shuffled_policies(uint64_t seed, uint32_t condition, uint32_t repetition) {
  std::vector<Policy> order(kAllPolicies.begin(), kAllPolicies.end());
  SplitMix64 rng(seed ^ (uint64_t{condition} << 32) ^ repetition);
  for (size_t i = order.size() - 1; i > 0; --i) {
    size_t j = rng.below(static_cast<uint32_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

Result<BenchResults> run_bench(const BenchOptions& options, SignalWatch& signals) {
  assert(options.records >= 1 && options.records <= kMaxRecords);
  assert(options.repetitions >= 1 && options.repetitions <= kMaxRepetitions);
  Bench bench(options, signals);
  return bench.run();
}

}  // namespace aup::retention

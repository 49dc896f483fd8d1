// events_bench: requests per second through `aup run --memory` on a pipe,
// beside the cost of the pipe itself (`cat`) and of a trivial line reader
// (`wc -l`) in the same run. See docs/benchmarks.md, "Events on a pipe".
//
// Usage: events_bench --aup PATH --bank BANK.aup --ledger LEDGER.aup
//          [--accounts 10000] [--transfers 1000000] [--adds 500000]
//          [--views 200000] [--reps 7] [--seed 92] [--out DIR] [--keep] [--smoke]
//
// --smoke: small inputs, one repetition; checks aup's answers and that the
// figures are positive numbers; writes nothing (the meson test).
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/common/program.h"
#include "bench/events/measure.h"
#include "bench/events/report.h"

namespace {

namespace ev = aup::bench::events;

constexpr const char* kProgram = "events_bench";
// The largest value any flag takes; zero is let through here and refused
// below only where it makes no sense.
constexpr uint64_t kMaxCount = uint64_t{1} << 40;

ev::Options parse_args(int argc, char** argv) {
  aup::bench::CommandLine args(argc, argv, kProgram,
                               "--aup PATH --bank BANK.aup --ledger LEDGER.aup [--accounts N] [--transfers N] "
                               "[--adds N] [--views N] [--reps N] [--seed N] [--out DIR] [--keep] [--smoke]");
  ev::Options o;
  args.parse(o, 0, kMaxCount, [&](const std::string& a) {
    if (a == "--smoke") {
      o.smoke = true;
      o.bank_shape = ev::BankShape{100, 3000};
      o.ledger_shape = ev::LedgerShape{3000, 300, 100};
      o.reps = 1;
    } else if (a == "--aup") {
      o.aup = args.value();
    } else if (a == "--bank") {
      o.bank = args.value();
    } else if (a == "--ledger") {
      o.ledger = args.value();
    } else if (a == "--accounts") {
      o.bank_shape.accounts = args.count_value(0, kMaxCount);
    } else if (a == "--transfers") {
      o.bank_shape.transfers = args.count_value(0, kMaxCount);
    } else if (a == "--adds") {
      o.ledger_shape.adds = args.count_value(0, kMaxCount);
    } else if (a == "--views") {
      o.ledger_shape.views = args.count_value(0, kMaxCount);
    } else if (a == "--keep") {
      o.keep = true;
    } else {
      return false;
    }
    return true;
  });
  if (o.aup.empty() || o.bank.empty() || o.ledger.empty()) args.usage("--aup, --bank and --ledger are required");
  if (o.reps == 0 || o.bank_shape.accounts == 0 || o.ledger_shape.adds == 0) args.usage("counts must be positive");
  return o;
}

// A private directory for the generated inputs, removed at the end unless
// --keep.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/aup-events-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) throw std::runtime_error("cannot create a directory like " + pattern);
    path_ = buf.data();
  }
  ~TempDir() {
    if (keep_) return;
    for (const std::string& f : files_) std::remove(f.c_str());
    ::rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  void track(const std::string& file) { files_.push_back(file); }
  void keep() { keep_ = true; }

 private:
  std::string path_;
  std::vector<std::string> files_;
  bool keep_ = false;
};

bool sane(const ev::Results& r, const ev::Options& o) {
  if (r.workloads.size() != 3) return false;
  for (const ev::WorkloadResult& w : r.workloads) {
    if (w.aup.size() != o.reps || w.pipe.size() != o.reps || w.lines.size() != o.reps) return false;
    for (const auto* ts : {&w.aup, &w.pipe, &w.lines}) {
      for (const ev::Timing& t : *ts) {
        if (!std::isfinite(t.wall_ns) || t.wall_ns <= 0) return false;
      }
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  ev::Options o = parse_args(argc, argv);
  return aup::bench::run_benchmark(kProgram, [&] {
    aup::bench::Environment env = aup::bench::environment();
    TempDir dir;
    if (o.keep) {
      dir.keep();
      std::fprintf(stderr, "events_bench: inputs kept in %s\n", dir.path().c_str());
    }
    std::vector<ev::Workload> workloads;
    workloads.push_back(ev::make_bank(dir.path(), o.bank, o.bank_shape, o.seed));
    auto [adds, views] = ev::make_ledger(dir.path(), o.ledger, o.ledger_shape, o.seed + 1);
    workloads.push_back(adds);
    workloads.push_back(views);
    for (const ev::Workload& w : workloads) {
      dir.track(w.input);
      dir.track(w.input + ".out");
    }
    ev::Results r = ev::measure(o, workloads);
    aup::bench::publish(o.out_dir, "events", ev::to_json(env, o, r), ev::to_markdown(env, o, r));
    if (o.smoke && !sane(r, o)) return aup::bench::smoke_failure(kProgram);
    return 0;
  });
}

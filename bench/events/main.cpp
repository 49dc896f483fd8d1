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
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "measure.h"
#include "report.h"

namespace {

namespace ev = aup::bench::events;

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "events_bench: %s\nusage: events_bench --aup PATH --bank BANK.aup --ledger LEDGER.aup "
               "[--accounts N] [--transfers N] [--adds N] [--views N] [--reps N] [--seed N] [--out DIR] "
               "[--keep] [--smoke]\n",
               why.c_str());
  std::exit(2);
}

uint64_t parse_count(const std::string& s, const std::string& flag) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v > (1ull << 40)) usage(fmt::format("bad value for {}: `{}`", flag, s));
  return v;
}

ev::Options parse_args(int argc, char** argv) {
  ev::Options o;
  std::string command = "events_bench";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    command += " " + a;
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      command += std::string(" ") + argv[i + 1];
      return argv[++i];
    };
    if (a == "--smoke") {
      o.smoke = true;
      o.bank_shape = ev::BankShape{100, 3000};
      o.ledger_shape = ev::LedgerShape{3000, 300, 100};
      o.reps = 1;
    } else if (a == "--aup") {
      o.aup = value();
    } else if (a == "--bank") {
      o.bank = value();
    } else if (a == "--ledger") {
      o.ledger = value();
    } else if (a == "--accounts") {
      o.bank_shape.accounts = parse_count(value(), a);
    } else if (a == "--transfers") {
      o.bank_shape.transfers = parse_count(value(), a);
    } else if (a == "--adds") {
      o.ledger_shape.adds = parse_count(value(), a);
    } else if (a == "--views") {
      o.ledger_shape.views = parse_count(value(), a);
    } else if (a == "--reps") {
      o.reps = static_cast<uint32_t>(parse_count(value(), a));
    } else if (a == "--seed") {
      o.seed = parse_count(value(), a);
    } else if (a == "--out") {
      o.out_dir = value();
    } else if (a == "--keep") {
      o.keep = true;
    } else {
      usage("unknown argument `" + a + "`");
    }
  }
  if (o.aup.empty() || o.bank.empty() || o.ledger.empty()) usage("--aup, --bank and --ledger are required");
  if (o.reps == 0 || o.bank_shape.accounts == 0 || o.ledger_shape.adds == 0) usage("counts must be positive");
  o.command = command;
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
  try {
    ev::Environment env = ev::environment();
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
    std::string md = ev::to_markdown(env, o, r);
    if (!o.out_dir.empty()) {
      ev::write_file(o.out_dir, "events.json", ev::to_json(env, o, r));
      ev::write_file(o.out_dir, "events.md", md);
    }
    std::fputs(md.c_str(), stdout);
    if (o.smoke && !sane(r, o)) {
      std::fprintf(stderr, "events_bench: a figure is missing or not a positive number\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "events_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

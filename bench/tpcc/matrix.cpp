// The matrix's loop: media, then W, then repetitions, then cells. Each
// (medium, W, layout) template is loaded on first use and removed when its
// W is done, so at most one W's templates take room at a time; each run
// gets a fresh copy in a run directory removed after it. Everything lives
// in <medium dir>/aup-tpcc-<pid>, removed however the matrix ends.
#include "bench/tpcc/matrix.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>

#include "bench/common/report.h"
#include "bench/tpcc/matrix_dirs.h"
#include "bench/tpcc/matrix_figures.h"
#include "bench/tpcc/matrix_report.h"
#include "bench/tpcc/measure.h"
#include "bench/tpcc/plots.h"

namespace aup::tpcc {

namespace {

// Bounds what one matrix may ask: media x W x cells x repetitions runs. The
// full matrix is 2 x 2 x 8 = 32; 10,000 runs of the default 22 s would be
// two and a half days, beyond any sensible use.
constexpr uint64_t kMaxRuns = 10'000;
constexpr size_t kMaxMedia = 8;

void progress(const std::string& line) {
  std::fprintf(stderr, "\raup-tpcc: %-78s", line.c_str());
  std::fflush(stderr);
}

// Ends a progress line with the line that stays.
void progress_done(const std::string& line) { std::fprintf(stderr, "\raup-tpcc: %-78s\n", line.c_str()); }

void check_options(const MatrixOptions& o) {
  if (o.media.empty() || o.media.size() > kMaxMedia) throw std::invalid_argument("the matrix needs 1 to 8 media");
  if (o.warehouses.empty() || o.cells.empty()) throw std::invalid_argument("the matrix needs W values and cells");
  for (int64_t w : o.warehouses) {
    if (w < 1 || w > kMaxWarehouses) {
      throw std::invalid_argument(fmt::format("W={} is outside 1..{}", w, kMaxWarehouses));
    }
  }
  for (const MatrixCell& c : o.cells) {
    if (c.terminals < 1 || c.terminals > kMaxTerminals) {
      throw std::invalid_argument(fmt::format("{} terminals is outside 1..{}", c.terminals, kMaxTerminals));
    }
    BackendConfig b;
    b.kind = c.kind;
    b.terminals = c.terminals;
    b.connections = c.connections;
    check_connections(b);
  }
  uint64_t runs = o.media.size() * o.warehouses.size() * o.cells.size() * uint64_t{o.reps};
  if (o.reps < 1 || runs > kMaxRuns) {
    throw std::invalid_argument(fmt::format("the matrix asks for {} runs (1..{})", runs, kMaxRuns));
  }
}

// Which stored form a kind runs on. The page size is fixed when SQLite
// creates the file, so the tuned kinds on disk need their own template with
// 1 KiB pages; in memory they use the default page size and open sqlite's
// (their other settings are per connection, and WAL is set in both).
std::string layout_of(const std::string& kind, bool on_disk) {
  if (kind == "aup" || kind == "sqlite") return kind;
  return on_disk ? "sqlite-1k" : "sqlite";
}

// The kind that loads a layout.
std::string loader_of(const std::string& layout) { return layout == "sqlite-1k" ? "sqlite-tuned" : layout; }

BackendConfig config_for(const MatrixOptions& o, const MatrixMedium& m, const std::string& kind, const std::string& dir,
                         int64_t w, uint32_t terminals, uint32_t connections) {
  BackendConfig c;
  c.kind = kind;
  c.dir = dir;
  c.warehouses = w;
  c.terminals = terminals;
  c.on_disk = m.on_disk;
  c.aup = o.aup;
  c.module = o.module;
  c.io_threads = o.io_threads;
  c.engine = o.engine;
  c.connections = connections;
  return c;
}

// Pins a load as measure() pins a run: aup's server on plan.server and this
// thread on plan.client; SQLite, in this thread, on plan.server.
void pin_for_load(BackendConfig& c, const std::optional<bench::CpuPlan>& cpus) {
  if (!cpus) return;
  if (c.kind == "aup") {
    bench::pin_this_thread(cpus->client);
    c.server_cpus = cpus->server;
  } else {
    bench::pin_this_thread(cpus->server);
  }
}

// The templates of one (medium, W): each loaded on first use, all removed
// when this goes. `scratch` and `results` must outlive it.
class Templates {
 public:
  Templates(const MatrixOptions& o, const MatrixMedium& m, const std::string& scratch, int64_t w,
            MatrixResults& results)
      : o_(o), m_(m), scratch_(scratch), w_(w), results_(results) {}
  Templates(const Templates&) = delete;
  Templates& operator=(const Templates&) = delete;

  // The loaded template that `kind` starts from.
  const std::string& for_kind(const std::string& kind) {
    std::string layout = layout_of(kind, m_.on_disk);
    auto it = dirs_.find(layout);
    if (it == dirs_.end()) it = dirs_.emplace(layout, load(layout)).first;
    return it->second->path();
  }

 private:
  std::unique_ptr<ScratchDir> load(const std::string& layout) {
    auto dir = std::make_unique<ScratchDir>(scratch_, fmt::format("template-{}-w{}", layout, w_));
    BackendConfig c = config_for(o_, m_, loader_of(layout), dir->path(), w_, 1, 0);
    pin_for_load(c, o_.cpus);
    std::string what = fmt::format("{} W={} load {}", m_.label, w_, layout);
    auto started = std::chrono::steady_clock::now();
    std::unique_ptr<Backend> backend = make_backend(c);
    backend->load(LoadConfig{w_, o_.seed, kDefaultBatchRows, kDefaultLoadTimeMs},
                  [&](uint64_t rows) { progress(fmt::format("{}: {} rows", what, bench::grouped(rows))); });
    backend->close();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    LoadRecord record{m_.label, w_, layout, c.kind, seconds, tree_bytes(dir->path())};
    progress_done(
        fmt::format("{} (by {}): {:.1f} s, {:.1f} MB", what, c.kind, seconds, static_cast<double>(record.bytes) / 1e6));
    results_.loads.push_back(std::move(record));
    return dir;
  }

  const MatrixOptions& o_;
  const MatrixMedium& m_;
  std::string scratch_;
  int64_t w_;
  MatrixResults& results_;
  std::map<std::string, std::unique_ptr<ScratchDir>> dirs_;
};

std::string run_labels(const CellKey& k, uint32_t rep) { return cell_labels_json(k) + fmt::format(",\"rep\":{}", rep); }

// One run on a fresh copy of `template_dir`; its figures, or its
// consistency problems, go into `results`.
void run_cell(const MatrixOptions& o, const MatrixMedium& m, const std::string& scratch, const CellKey& key,
              uint32_t rep, const std::string& template_dir, MatrixResults& results) {
  std::string what = fmt::format("{} W={} {} {} terminals{}, rep {}/{}", m.label, key.warehouses, key.kind,
                                 key.terminals, connections_text(key), rep, o.reps);
  Measured measured;
  {
    ScratchDir run(scratch, "run");
    progress(what + ": copying the template");
    copy_template(template_dir, run.path());
    RunSpec spec{key.warehouses, key.terminals, o.seed, o.warmup, o.seconds, 0};
    BackendConfig config = config_for(o, m, key.kind, run.path(), key.warehouses, key.terminals, key.connections);
    measured = measure(config, spec, o.cpus,
                       [&](const std::string& line) { progress(what + ": " + line); });
  }
  if (!measured.problems.empty()) {
    progress_done(fmt::format("{}: consistency FAILED, {} problems; left out", what, measured.problems.size()));
    for (const std::string& p : measured.problems) std::fprintf(stderr, "  %s\n", p.c_str());
    results.failed.push_back(FailedRun{key, rep, std::move(measured.problems)});
    return;
  }
  RunFigures f = figures_of(measured);
  progress_done(fmt::format("{}: {} tx/s, p99 {:.2f} ms, {:.1f} µs CPU/tx", what,
                            bench::grouped(static_cast<uint64_t>(f.transactions_per_s)), f.p99_us_all / 1e3,
                            f.cpu_us_per_transaction));
  results.runs.push_back(RunRecord{key, rep, std::move(f), measured_json(measured, run_labels(key, rep))});
}

void run_medium(const MatrixOptions& o, const MatrixMedium& m, MatrixResults& results) {
  // Absolute: the aup server is started with paths inside it.
  ScratchDir scratch(std::filesystem::absolute(m.dir).string(), fmt::format("aup-tpcc-{}", ::getpid()));
  for (int64_t w : o.warehouses) {
    Templates templates(o, m, scratch.path(), w, results);
    for (uint32_t rep = 1; rep <= o.reps; ++rep) {
      for (const MatrixCell& c : o.cells) {
        CellKey key{m.label, w, c.kind, c.terminals, c.connections};
        run_cell(o, m, scratch.path(), key, rep, templates.for_kind(c.kind), results);
      }
    }
  }
}

}  // namespace

std::vector<MatrixCell> default_cells() {
  return {{"aup", 16},         {"aup", 64},         {"sqlite", 1},          {"sqlite", 4},
          {"sqlite-tuned", 1}, {"sqlite-tuned", 4}, {"sqlite-grouped", 16}, {"sqlite-grouped", 64}};
}

std::vector<MatrixCell> with_connections(const std::vector<MatrixCell>& cells,
                                         const std::vector<uint32_t>& connections) {
  if (connections.empty()) return cells;
  std::vector<MatrixCell> out;
  for (const MatrixCell& c : cells) {
    if (c.kind != "aup") {
      out.push_back(c);
      continue;
    }
    size_t first = out.size();
    for (uint32_t n : connections) {
      MatrixCell e{c.kind, c.terminals, n >= c.terminals ? 0 : n};
      if (std::none_of(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                       [&](const MatrixCell& x) { return x.connections == e.connections; })) {
        out.push_back(e);
      }
    }
  }
  return out;
}

int run_matrix(const MatrixOptions& o) {
  check_options(o);
  // Made first, so that an output directory that cannot be written fails
  // before the runs rather than after.
  if (!o.out_dir.empty()) std::filesystem::create_directories(o.out_dir);
  bench::Environment env = bench::environment();  // before the runs: the load average they started under
  MatrixResults results;
  for (const MatrixMedium& m : o.media) run_medium(o, m, results);

  std::vector<Ratio> r = ratios(o, results);
  std::string plots = o.out_dir.empty() ? "" : write_plots(o, results);
  bench::publish(o.out_dir, "tpcc", matrix_json(env, o, results, r), matrix_markdown(env, o, results, r, plots));
  if (!results.failed.empty()) {
    std::fprintf(stderr, "aup-tpcc: %zu run(s) failed the consistency check and are left out\n", results.failed.size());
    return 1;
  }
  return 0;
}

}  // namespace aup::tpcc

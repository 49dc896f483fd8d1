#include "bench/tpcc/matrix_figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "bench/common/measure.h"
#include "bench/common/report.h"

namespace aup::tpcc {

namespace {

// The CDF kept per run: kCdfBodyPoints fractions evenly over [0, 0.99),
// then kCdfTailPoints with 1 - fraction spaced evenly on a log scale from
// 10^-2 down to 10^-kCdfTailDecades, then the maximum. 200 points draw a
// smooth curve and keep a run's CDF at under 2 KB.
constexpr int kCdfBodyPoints = 150;
constexpr int kCdfTailPoints = 49;
constexpr double kCdfBodyEnd = 0.99;
constexpr double kCdfTailDecades = 5;  // 0.99999: beyond a 20 s run's rank precision at lower rates

// The goals the report sets the ratios against; it states them beside the
// ratios (docs/benchmarks.md, "TPC-C against SQLite").
constexpr Goal kRamOverBestTuned{4.0, true};
constexpr Goal kDiskOverGrouped{7.0, true};
constexpr uint32_t kDiskGoalTerminals = 64;
constexpr Goal kResidentOverState{2.2, false};

// Nearest rank, as KindFigures::percentile_us.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

std::vector<double> make_cdf_fractions() {
  std::vector<double> f;
  for (int i = 0; i < kCdfBodyPoints; ++i) f.push_back(kCdfBodyEnd * i / kCdfBodyPoints);
  for (int i = 0; i < kCdfTailPoints; ++i) {
    double decades = 2 + (kCdfTailDecades - 2) * i / (kCdfTailPoints - 1);
    f.push_back(1 - std::pow(10.0, -decades));
  }
  f.push_back(1.0);
  return f;
}

std::vector<const RunRecord*> runs_of(const MatrixResults& results, const CellKey& cell) {
  std::vector<const RunRecord*> out;
  for (const RunRecord& r : results.runs) {
    if (r.cell == cell) out.push_back(&r);
  }
  return out;
}

double median_of(const std::vector<const RunRecord*>& runs, const std::function<double(const RunFigures&)>& f) {
  std::vector<double> v;
  for (const RunRecord* r : runs) v.push_back(f(r->figures));
  return bench::median(std::move(v));
}

std::string rate(double tx_per_s) { return bench::grouped(static_cast<uint64_t>(std::llround(tx_per_s))); }

// aup at `terminals` over the best sqlite-tuned cell of (medium, W).
std::optional<Ratio> over_best_tuned(const MatrixOptions& o, const MatrixResults& results, const MatrixMedium& m,
                                     const CellKey& aup, double aup_tx) {
  int64_t w = aup.warehouses;
  double best = 0;
  uint32_t best_terminals = 0;
  for (const MatrixCell& c : o.cells) {
    if (c.kind != "sqlite-tuned") continue;
    std::optional<CellFigures> f = cell_figures(results, CellKey{m.label, w, c.kind, c.terminals, 0});
    if (f && f->median.transactions_per_s > best) {
      best = f->median.transactions_per_s;
      best_terminals = c.terminals;
    }
  }
  if (best <= 0) return std::nullopt;
  Ratio r{m.label, w, aup.terminals, connections_of(aup), "tx/s over the best sqlite-tuned", "", aup_tx / best,
          std::nullopt};
  r.detail = fmt::format("aup {} tx/s, sqlite-tuned {} tx/s at {} terminal{}", rate(aup_tx), rate(best), best_terminals,
                         best_terminals == 1 ? "" : "s");
  if (!m.on_disk) r.goal = kRamOverBestTuned;
  return r;
}

// aup at `terminals` over sqlite-grouped at the same count.
std::optional<Ratio> over_grouped(const MatrixMedium& m, const MatrixResults& results, const CellKey& aup,
                                  double aup_tx) {
  std::optional<CellFigures> g =
      cell_figures(results, CellKey{m.label, aup.warehouses, "sqlite-grouped", aup.terminals, 0});
  if (!g || g->median.transactions_per_s <= 0) return std::nullopt;
  double grouped_tx = g->median.transactions_per_s;
  Ratio r{m.label, aup.warehouses, aup.terminals, connections_of(aup), "tx/s over sqlite-grouped at the same terminals",
          "",      aup_tx / grouped_tx, std::nullopt};
  r.detail = fmt::format("aup {} tx/s, sqlite-grouped {} tx/s", rate(aup_tx), rate(grouped_tx));
  if (m.on_disk && aup.terminals == kDiskGoalTerminals) r.goal = kDiskOverGrouped;
  return r;
}

std::optional<Ratio> resident_over_state(const MatrixMedium& m, const CellKey& aup, const RunFigures& f) {
  if (f.state_bytes <= 0) return std::nullopt;
  Ratio r{m.label,
          aup.warehouses,
          aup.terminals,
          connections_of(aup),
          "resident memory over state bytes",
          "",
          f.resident_bytes / f.state_bytes,
          kResidentOverState};
  r.detail = fmt::format("aup resident {:.1f} MB, state {:.1f} MB", f.resident_bytes / 1e6, f.state_bytes / 1e6);
  return r;
}

}  // namespace

uint32_t connections_of(const CellKey& k) { return server_connections(k.kind, k.terminals, k.connections); }

std::string cell_labels_json(const CellKey& k) {
  uint32_t n = connections_of(k);
  return fmt::format("\"medium\":{},\"warehouses\":{},\"kind\":{},\"terminals\":{},\"connections\":{}",
                     bench::json_string(k.medium), k.warehouses, bench::json_string(k.kind), k.terminals,
                     n ? std::to_string(n) : "null");
}

std::string connections_text(const CellKey& k) {
  uint32_t n = connections_of(k);
  return n != 0 && n != k.terminals ? fmt::format(" over {} connections", n) : "";
}

const std::vector<double>& cdf_fractions() {
  static const std::vector<double> fractions = make_cdf_fractions();
  return fractions;
}

RunFigures figures_of(const Measured& m) {
  const RunResult& r = m.result;
  RunFigures f;
  f.transactions_per_s = r.transactions_per_s();
  f.new_orders_per_min = r.new_orders_per_min();
  for (int k = 0; k < kTxKinds; ++k) {
    f.p50_us[k] = r.kinds[k].percentile_us(0.5);
    f.p99_us[k] = r.kinds[k].percentile_us(0.99);
  }
  f.cpu_us_per_transaction = r.cpu_us_per_transaction();
  f.user_us_per_transaction = r.user_us_per_transaction();
  f.system_us_per_transaction = r.system_us_per_transaction();
  f.write_bytes_per_transaction = r.write_bytes_per_transaction();
  f.device_bytes_per_transaction = r.device_bytes_per_transaction();
  f.resident_bytes = static_cast<double>(m.resident_bytes);
  f.state_bytes = static_cast<double>(m.state_bytes);
  std::vector<double> all = r.all_latencies_us();
  f.p99_us_all = percentile(all, 0.99);
  for (double p : cdf_fractions()) f.cdf_us.push_back(percentile(all, p));
  return f;
}

std::optional<CellFigures> cell_figures(const MatrixResults& results, const CellKey& cell) {
  std::vector<const RunRecord*> runs = runs_of(results, cell);
  if (runs.empty()) return std::nullopt;
  // Latencies come from the runs that completed a transaction: a run that
  // completed none (a stall as long as the timed phase) has no latency to
  // give, and its zeros would pull the medians down. Its rate of 0 counts.
  std::vector<const RunRecord*> timed;
  for (const RunRecord* r : runs) {
    if (r->figures.transactions_per_s > 0) timed.push_back(r);
  }
  CellFigures c;
  c.runs = static_cast<uint32_t>(runs.size());
  RunFigures& m = c.median;
  m.transactions_per_s = median_of(runs, [](const RunFigures& f) { return f.transactions_per_s; });
  m.new_orders_per_min = median_of(runs, [](const RunFigures& f) { return f.new_orders_per_min; });
  for (int k = 0; k < kTxKinds; ++k) {
    m.p50_us[k] = median_of(timed, [k](const RunFigures& f) { return f.p50_us[k]; });
    m.p99_us[k] = median_of(timed, [k](const RunFigures& f) { return f.p99_us[k]; });
  }
  m.p99_us_all = median_of(timed, [](const RunFigures& f) { return f.p99_us_all; });
  m.cpu_us_per_transaction = median_of(runs, [](const RunFigures& f) { return f.cpu_us_per_transaction; });
  m.user_us_per_transaction = median_of(runs, [](const RunFigures& f) { return f.user_us_per_transaction; });
  m.system_us_per_transaction = median_of(runs, [](const RunFigures& f) { return f.system_us_per_transaction; });
  m.write_bytes_per_transaction = median_of(runs, [](const RunFigures& f) { return f.write_bytes_per_transaction; });
  m.device_bytes_per_transaction =
      median_of(runs, [](const RunFigures& f) { return f.device_bytes_per_transaction; });  // -1 in all, or none
  m.resident_bytes = median_of(runs, [](const RunFigures& f) { return f.resident_bytes; });
  m.state_bytes = median_of(runs, [](const RunFigures& f) { return f.state_bytes; });
  for (size_t i = 0; i < cdf_fractions().size(); ++i) {
    m.cdf_us.push_back(median_of(timed, [i](const RunFigures& f) { return i < f.cdf_us.size() ? f.cdf_us[i] : 0; }));
  }
  auto [lo, hi] = std::minmax_element(runs.begin(), runs.end(), [](const RunRecord* a, const RunRecord* b) {
    return a->figures.transactions_per_s < b->figures.transactions_per_s;
  });
  c.transactions_per_s_min = (*lo)->figures.transactions_per_s;
  c.transactions_per_s_max = (*hi)->figures.transactions_per_s;
  return c;
}

std::vector<CellKey> cell_keys(const MatrixOptions& o) {
  std::vector<CellKey> keys;
  for (const MatrixMedium& m : o.media) {
    for (int64_t w : o.warehouses) {
      for (const MatrixCell& c : o.cells) keys.push_back(CellKey{m.label, w, c.kind, c.terminals, c.connections});
    }
  }
  return keys;
}

std::vector<Ratio> ratios(const MatrixOptions& o, const MatrixResults& results) {
  std::vector<Ratio> out;
  for (const MatrixMedium& m : o.media) {
    for (int64_t w : o.warehouses) {
      for (const MatrixCell& c : o.cells) {
        if (c.kind != "aup") continue;
        CellKey key{m.label, w, c.kind, c.terminals, c.connections};
        std::optional<CellFigures> a = cell_figures(results, key);
        if (!a) continue;
        double tx = a->median.transactions_per_s;
        for (std::optional<Ratio> r : {over_best_tuned(o, results, m, key, tx), over_grouped(m, results, key, tx),
                                       resident_over_state(m, key, a->median)}) {
          if (r) out.push_back(std::move(*r));
        }
      }
    }
  }
  return out;
}

std::string ratio_text(const Ratio& r) {
  std::string over = r.connections != 0 && r.connections != r.terminals
                         ? fmt::format(" over {} connections", r.connections)
                         : "";
  std::string out = fmt::format("{} W={}, aup at {} terminals{}: {:.2f}x {} ({})", r.medium, r.warehouses, r.terminals,
                                over, r.value, r.what, r.detail);
  if (r.goal) {
    out += fmt::format("; goal {} {:.1f}x: {}", r.goal->at_least ? "≥" : "≤", r.goal->bound,
                       r.goal->met(r.value) ? "met" : "missed");
  }
  return out;
}

}  // namespace aup::tpcc

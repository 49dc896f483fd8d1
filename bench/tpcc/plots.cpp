#include "bench/tpcc/plots.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "bench/common/report.h"

namespace aup::tpcc {

namespace {

// A panel's size in the SVG, in pixels: readable side by side on a screen.
constexpr int kPanelWidthPx = 640;
constexpr int kPanelHeightPx = 400;
// Gnuplot's exit status when it could not be started (the child's _exit).
constexpr int kExecFailed = 127;

const char* kThroughput = "tpcc-throughput";
const char* kLatency = "tpcc-latency";

// A backend's colour, the same in both plots.
std::string colour_of(const std::string& kind) {
  if (kind == "aup") return "#d62728";
  if (kind == "sqlite") return "#7f7f7f";
  if (kind == "sqlite-tuned") return "#1f77b4";
  if (kind == "sqlite-grouped") return "#2ca02c";
  return "#9467bd";
}

// A line of the throughput plot: a backend, and for aup how many
// connections its terminals share (MatrixCell::connections; 0 a connection
// per terminal).
struct Series {
  std::string kind;
  uint32_t connections = 0;
  bool operator==(const Series&) const = default;
  std::string title() const {
    return connections == 0 ? kind : fmt::format("{} over {} connections", kind, connections);
  }
};

// The backends of o.cells in their first-seen order.
std::vector<std::string> kinds_of(const MatrixOptions& o) {
  std::vector<std::string> kinds;
  for (const MatrixCell& c : o.cells) {
    if (std::find(kinds.begin(), kinds.end(), c.kind) == kinds.end()) kinds.push_back(c.kind);
  }
  return kinds;
}

// The series of o.cells in their first-seen order.
std::vector<Series> series_of(const MatrixOptions& o) {
  std::vector<Series> series;
  for (const MatrixCell& c : o.cells) {
    Series s{c.kind, c.connections};
    if (std::find(series.begin(), series.end(), s) == series.end()) series.push_back(s);
  }
  return series;
}

// Data blocks in gnuplot's `index` sense (separated by two blank lines) and
// the plot clauses that draw them, built side by side so the indices agree.
struct PlotData {
  std::string dat;
  int blocks = 0;

  // Appends a block; returns its index.
  int add(const std::string& comment, const std::string& rows) {
    dat += (blocks ? "\n\n" : "") + std::string("# ") + comment + "\n" + rows;
    return blocks++;
  }
};

struct Panel {
  std::string title;
  std::vector<std::string> clauses;  // "'file.dat' index 0 ... title 'aup'"
};

std::string script_head(const std::string& name, const std::string& title, int panels, int cols) {
  int rows = (panels + cols - 1) / cols;
  return fmt::format(
      "# Draws {0}.svg from {0}.dat: cd to this directory, then `gnuplot {0}.gp`.\n"
      "set terminal svg size {1},{2} dynamic enhanced font 'sans,11' background rgb 'white'\n"
      "set output '{0}.svg'\n"
      "set multiplot layout {3},{4} title '{5}'\n"
      "set grid\n",
      name, kPanelWidthPx * cols, kPanelHeightPx * rows, rows, cols, title);
}

std::string panels_script(const std::vector<Panel>& panels) {
  std::string out;
  for (const Panel& p : panels) {
    out += fmt::format("set title '{}'\nplot ", p.title);
    for (size_t i = 0; i < p.clauses.size(); ++i) out += (i ? ", \\\n     " : "") + p.clauses[i];
    out += "\n";
  }
  return out + "unset multiplot\n";
}

std::optional<Panel> throughput_panel(const MatrixOptions& o, const MatrixResults& results, PlotData& data,
                                      const MatrixMedium& m, int64_t w) {
  Panel panel{fmt::format("{}, W={}", m.label, w), {}};
  std::map<std::string, int> dashes;  // a backend's first series solid, the next dashed, ...
  for (const Series& series : series_of(o)) {
    std::string rows;
    for (const MatrixCell& c : o.cells) {
      if (Series{c.kind, c.connections} != series) continue;
      std::optional<CellFigures> f = cell_figures(results, CellKey{m.label, w, c.kind, c.terminals, c.connections});
      if (f) {
        rows += fmt::format("{} {:.1f} {:.1f} {:.1f}\n", c.terminals, f->median.transactions_per_s,
                            f->transactions_per_s_min, f->transactions_per_s_max);
      }
    }
    if (rows.empty()) continue;
    int index =
        data.add(fmt::format("{} W={} {}: terminals, tx/s (median, min, max)", m.label, w, series.title()), rows);
    panel.clauses.push_back(
        fmt::format("'{}.dat' index {} using 1:2 with linespoints lw 2 dt {} pt 7 lc rgb '{}' title '{}'", kThroughput,
                    index, ++dashes[series.kind], colour_of(series.kind), series.title()));
  }
  if (panel.clauses.empty()) return std::nullopt;
  return panel;
}

// The x axis of the throughput plot: a tic at each terminal count, and a
// margin of kTerminalsMargin either side on the log scale.
std::string terminals_axis(const MatrixOptions& o) {
  constexpr double kTerminalsMargin = 1.4;
  std::vector<uint32_t> t;
  for (const MatrixCell& c : o.cells) t.push_back(c.terminals);
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  std::string tics;
  for (size_t i = 0; i < t.size(); ++i) tics += fmt::format("{}{}", i ? ", " : "", t[i]);
  return fmt::format("set logscale x 2\nset xtics ({})\nset xrange [{:.2f}:{:.2f}]\n", tics,
                     t.front() / kTerminalsMargin, t.back() * kTerminalsMargin);
}

// The latencies a plot spans, in ms, so that every panel gets the same axis.
struct Span {
  double low = 0, high = 0;  // 0: nothing yet
  void add(double v) {
    low = low > 0 ? std::min(low, v) : v;
    high = std::max(high, v);
  }
  // Whole decades around the span: "set xrange [0.01:100]".
  std::string xrange() const {
    return fmt::format("set xrange [{:g}:{:g}]\n", std::pow(10.0, std::floor(std::log10(low))),
                       std::pow(10.0, std::ceil(std::log10(high))));
  }
};

// The latency CDF's rows: latency in ms (log scale: zeros left out), fraction.
std::string cdf_rows(const RunFigures& f, Span& span) {
  std::string rows;
  const std::vector<double>& fractions = cdf_fractions();
  for (size_t i = 0; i < f.cdf_us.size() && i < fractions.size(); ++i) {
    if (f.cdf_us[i] <= 0) continue;
    rows += fmt::format("{:.4f} {:.6f}\n", f.cdf_us[i] / 1e3, fractions[i]);
    span.add(f.cdf_us[i] / 1e3);
  }
  return rows;
}

std::optional<Panel> latency_panel(const MatrixOptions& o, const MatrixResults& results, PlotData& data, Span& span,
                                   const MatrixMedium& m, int64_t w) {
  Panel panel{fmt::format("{}, W={}", m.label, w), {}};
  for (const std::string& kind : kinds_of(o)) {
    int dash = 1;  // the kind's first cell solid, the next dashed, ...
    for (const MatrixCell& c : o.cells) {
      if (c.kind != kind) continue;
      CellKey key{m.label, w, kind, c.terminals, c.connections};
      std::optional<CellFigures> f = cell_figures(results, key);
      std::string rows = f ? cdf_rows(f->median, span) : "";
      if (rows.empty()) continue;
      std::string title = fmt::format("{} {}{}", kind, c.terminals, connections_text(key));
      int index =
          data.add(fmt::format("{} W={} {} terminals: latency ms, cumulative fraction", m.label, w, title), rows);
      panel.clauses.push_back(fmt::format("'{}.dat' index {} using 1:2 with lines lw 2 dt {} lc rgb '{}' title '{}'",
                                          kLatency, index, dash++, colour_of(kind), title));
    }
  }
  if (panel.clauses.empty()) return std::nullopt;
  return panel;
}

// The throughput plot's data and script; nullopt when there is no data.
std::optional<std::pair<std::string, std::string>> throughput_plot(const MatrixOptions& o,
                                                                   const MatrixResults& results) {
  PlotData data;
  std::vector<Panel> panels;
  for (const MatrixMedium& m : o.media) {
    for (int64_t w : o.warehouses) {
      if (std::optional<Panel> p = throughput_panel(o, results, data, m, w)) panels.push_back(std::move(*p));
    }
  }
  if (panels.empty()) return std::nullopt;
  int cols = static_cast<int>(std::min(panels.size(), o.warehouses.size()));
  std::string gp =
      script_head(kThroughput, "TPC-C: transactions/s by terminals", static_cast<int>(panels.size()), cols);
  gp += terminals_axis(o) +
        "set logscale y 10\nset format y '%.0s%c'\nset xlabel 'terminals'\nset ylabel 'transactions/s (log scale)'\n"
        "set key outside right top vertical\n";
  return std::make_pair(data.dat, gp + panels_script(panels));
}

std::optional<std::pair<std::string, std::string>> latency_plot(const MatrixOptions& o, const MatrixResults& results) {
  if (o.warehouses.empty()) return std::nullopt;
  int64_t w = *std::min_element(o.warehouses.begin(), o.warehouses.end());
  PlotData data;
  Span span;
  std::vector<Panel> panels;
  for (const MatrixMedium& m : o.media) {
    if (std::optional<Panel> p = latency_panel(o, results, data, span, m, w)) panels.push_back(std::move(*p));
  }
  if (panels.empty()) return std::nullopt;
  std::string gp = script_head(kLatency, "TPC-C: latency of all transactions (CDF)", static_cast<int>(panels.size()),
                               static_cast<int>(panels.size()));
  gp += span.xrange() +
        "set logscale x 10\nset xlabel 'latency, ms (log scale)'\nset ylabel 'fraction of transactions at or below'\n"
        "set yrange [0:1]\nset key outside right top vertical\n";
  return std::make_pair(data.dat, gp + panels_script(panels));
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t colon = dirs.find(':', begin);
    std::string dir = dirs.substr(begin, colon == std::string::npos ? std::string::npos : colon - begin);
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    if (colon == std::string::npos) break;
    begin = colon + 1;
  }
  return false;
}

// `gnuplot NAME.gp` in `dir`; its exit status (kExecFailed when it did not start).
int run_gnuplot(const std::string& dir, const std::string& script) {
  pid_t pid = ::fork();
  if (pid < 0) return kExecFailed;
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) ::_exit(kExecFailed);
    ::execlp("gnuplot", "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(kExecFailed);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return kExecFailed;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : kExecFailed;
}

// Writes NAME.dat and NAME.gp, draws NAME.svg; a sentence on how it went.
std::string draw(const MatrixOptions& o, const std::string& name, const std::string& what,
                 const std::optional<std::pair<std::string, std::string>>& plot, bool have_gnuplot) {
  if (!plot) return fmt::format("{}: skipped, no run to draw.", what);
  bench::write_file(o.out_dir, name + ".dat", plot->first);
  bench::write_file(o.out_dir, name + ".gp", plot->second);
  if (!have_gnuplot) {
    return fmt::format("{}: skipped, no gnuplot on PATH (`{}.dat` and `{}.gp` are written; `gnuplot {}.gp` draws it).",
                       what, name, name, name);
  }
  int status = run_gnuplot(o.out_dir, name + ".gp");
  if (status != 0) {
    std::fprintf(stderr, "aup-tpcc: gnuplot %s.gp in %s ended with status %d\n", name.c_str(), o.out_dir.c_str(),
                 status);
    return fmt::format("{}: gnuplot failed (status {}) on `{}.gp`.", what, status, name);
  }
  return fmt::format("{}: ![{}]({}.svg) (`{}.gp`, `{}.dat`).", what, what, name, name, name);
}

}  // namespace

std::string write_plots(const MatrixOptions& o, const MatrixResults& results) {
  bool have_gnuplot = on_path("gnuplot");
  std::string out = "Plots (gnuplot scripts and their data beside them):\n\n";
  out += "- " + draw(o, kThroughput, "Throughput by terminals", throughput_plot(o, results), have_gnuplot) + "\n";
  out += "- " + draw(o, kLatency, "Latency CDF", latency_plot(o, results), have_gnuplot) + "\n";
  return out;
}

}  // namespace aup::tpcc

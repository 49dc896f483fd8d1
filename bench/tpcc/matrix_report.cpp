#include "bench/tpcc/matrix_report.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

namespace aup::tpcc {

namespace {

using bench::grouped;
using bench::json_string;

std::string count(double v) { return grouped(static_cast<uint64_t>(std::llround(std::max(v, 0.0)))); }

// Milliseconds with about three significant digits: 0.123, 1.23, 12.3, 123.
std::string ms(double us) {
  double v = us / 1e3;
  if (v < 1) return fmt::format("{:.3f}", v);
  if (v < 10) return fmt::format("{:.2f}", v);
  if (v < 100) return fmt::format("{:.1f}", v);
  return fmt::format("{:.0f}", v);
}

// A path as results show it: relative to the working directory when inside
// it, so committed results name no one's checkout.
std::string shown_path(const std::string& p) {
  std::string here = std::filesystem::current_path().string() + "/";
  return p.rfind(here, 0) == 0 ? p.substr(here.size()) : p;
}

std::string options_json(const MatrixOptions& o) {
  std::string out = fmt::format(
      "  \"options\": {{\"seconds\": {}, \"warmup_seconds\": {}, \"seed\": {}, \"repetitions\": {}, "
      "\"io_threads\": {}, \"aup\": {}, \"module\": {},\n    \"warehouses\": [",
      o.seconds, o.warmup, o.seed, o.reps, o.io_threads, json_string(shown_path(o.aup)),
      json_string(shown_path(o.module)));
  for (size_t i = 0; i < o.warehouses.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", o.warehouses[i]);
  out += "],\n    \"cells\": [";
  for (size_t i = 0; i < o.cells.size(); ++i) {
    out += fmt::format("{}{{\"kind\": {}, \"terminals\": {}, \"connections\": {}}}", i ? ", " : "",
                       json_string(o.cells[i].kind), o.cells[i].terminals, o.cells[i].connections);
  }
  out += "],\n    \"media\": [";
  for (size_t i = 0; i < o.media.size(); ++i) {
    const MatrixMedium& m = o.media[i];
    out += fmt::format("{}{{\"label\": {}, \"dir\": {}, \"on_disk\": {}}}", i ? ", " : "", json_string(m.label),
                       json_string(m.dir), m.on_disk ? "true" : "false");
  }
  out += "],\n    \"cpus\": ";
  out += o.cpus ? fmt::format("{{\"client\": {}, \"server\": {}}}", json_string(o.cpus->client),
                              json_string(o.cpus->server))
                : "null";
  return out + "},\n";
}

std::string loads_json(const std::vector<LoadRecord>& loads) {
  std::string out = "  \"loads\": [";
  for (size_t i = 0; i < loads.size(); ++i) {
    const LoadRecord& l = loads[i];
    out += fmt::format(
        "{}\n    {{\"medium\": {}, \"warehouses\": {}, \"layout\": {}, \"kind\": {}, \"seconds\": {:.2f}, "
        "\"bytes\": {}}}",
        i ? "," : "", json_string(l.medium), l.warehouses, json_string(l.layout), json_string(l.kind), l.seconds,
        l.bytes);
  }
  return out + "],\n";
}

std::string runs_json(const MatrixResults& results) {
  std::string out = "  \"runs\": [";
  for (size_t i = 0; i < results.runs.size(); ++i) out += (i ? ",\n    " : "\n    ") + results.runs[i].json;
  out += "],\n  \"failed_runs\": [";
  for (size_t i = 0; i < results.failed.size(); ++i) {
    const FailedRun& f = results.failed[i];
    out += fmt::format("{}\n    {{{},\"rep\":{},\"problems\":[", i ? "," : "", cell_labels_json(f.cell), f.rep);
    for (size_t p = 0; p < f.problems.size(); ++p) out += (p ? "," : "") + json_string(f.problems[p]);
    out += "]}";
  }
  return out + "],\n";
}

std::string per_type_json(const RunFigures& f) {
  std::string out = "{";
  for (int k = 0; k < kTxKinds; ++k) {
    out += fmt::format("{}\"{}\":{{\"p50_us\":{:.1f},\"p99_us\":{:.1f}}}", k ? "," : "",
                       name_of(static_cast<TxKind>(k)), f.p50_us[k], f.p99_us[k]);
  }
  return out + "}";
}

std::string cells_json(const MatrixOptions& o, const MatrixResults& results) {
  std::string out = "  \"cells\": [";
  bool first = true;
  for (const CellKey& key : cell_keys(o)) {
    std::optional<CellFigures> c = cell_figures(results, key);
    if (!c) continue;
    const RunFigures& m = c->median;
    out += fmt::format(
        "{}\n    {{{},\"runs\":{},\"median\":{{\"transactions_per_s\":{:.1f},\"transactions_per_s_min\":{:.1f},"
        "\"transactions_per_s_max\":{:.1f},\"new_orders_per_min\":{:.0f},\"cpu_us_per_transaction\":{:.2f},"
        "\"user_us_per_transaction\":{:.2f},\"system_us_per_transaction\":{:.2f},\"write_bytes_per_transaction\":{:.1f},"
        "\"device_bytes_per_transaction\":{},\"resident_bytes\":{:.0f},\"state_bytes\":{:.0f},\"per_type\":{}}}}}",
        first ? "" : ",", cell_labels_json(key), c->runs, m.transactions_per_s, c->transactions_per_s_min,
        c->transactions_per_s_max, m.new_orders_per_min, m.cpu_us_per_transaction, m.user_us_per_transaction,
        m.system_us_per_transaction, m.write_bytes_per_transaction,
        m.device_bytes_per_transaction < 0 ? std::string("null") : fmt::format("{:.1f}", m.device_bytes_per_transaction),
        m.resident_bytes, m.state_bytes, per_type_json(m));
    first = false;
  }
  return out + "],\n";
}

std::string ratios_json(const std::vector<Ratio>& ratios) {
  std::string out = "  \"ratios\": [";
  for (size_t i = 0; i < ratios.size(); ++i) {
    const Ratio& r = ratios[i];
    std::string goal = r.goal
                           ? fmt::format("{{\"bound\":{},\"at_least\":{},\"met\":{}}}", r.goal->bound,
                                         r.goal->at_least ? "true" : "false", r.goal->met(r.value) ? "true" : "false")
                           : "null";
    out += fmt::format(
        "{}\n    {{\"medium\":{},\"warehouses\":{},\"aup_terminals\":{},\"aup_connections\":{},\"what\":{},"
        "\"value\":{:.3f},\"detail\":{},\"goal\":{}}}",
        i ? "," : "", json_string(r.medium), r.warehouses, r.terminals, r.connections, json_string(r.what), r.value,
        json_string(r.detail), goal);
  }
  return out + "]\n";
}

std::string media_text(const MatrixOptions& o) {
  std::string out;
  for (size_t i = 0; i < o.media.size(); ++i) {
    const MatrixMedium& m = o.media[i];
    out += fmt::format("{}*{}* is a fresh directory under `{}` ({})", i ? "; " : "", m.label, m.dir,
                       m.on_disk ? "a block device" : "memory, tmpfs");
  }
  return out;
}

std::string pinning_text(const MatrixOptions& o) {
  if (!o.cpus) return "Pinning: none (`--cpus none`, or fewer than two CPUs online).";
  return fmt::format(
      "Pinning: for aup, the terminals on CPU {0}, the system under test (the `aup run --listen` process) on CPU "
      "{1}; SQLite runs in this process, so its terminals, generator and SQLite all run on CPU {1}. Loads are "
      "pinned the same way.",
      o.cpus->client, o.cpus->server);
}

std::string load_text(const MatrixOptions& o) {
  return fmt::format(
      "Load: TPC-C as examples/tpcc/tpcc.aup has it, the same seeded transactions (seed {}) for every backend in the "
      "45/43/4/4/4 mix. No keying or think time: each terminal waits for its answer and sends its next "
      "transaction at once, so the figures are transactions per second, not tpmC. 60% of Payment and Order-Status "
      "customers are chosen by last name through a secondary index, a Delivery delivers all ten districts, every "
      "column of clause 1.3 is held with its strings, money in integer cents. "
      "Each (medium, W, storage layout) is loaded once into a template (layouts: *aup*; *sqlite*, the default "
      "page size, which sqlite-tuned and sqlite-grouped share in memory; *sqlite-1k*, 1 KiB pages, for "
      "sqlite-tuned and sqlite-grouped on disk); every run starts from a fresh copy of it, flushed to its device "
      "before the run. Per run: a {} s warm-up, a {} s timed phase, then TPC-C consistency conditions 1-4 "
      "(clause 3.3.2.1-3.3.2.4) for every warehouse; a run that fails them is left out. aup is `aup run "
      "--listen` with --io-threads {}, reached over a Unix-socket connection per terminal, or, where the connections "
      "column says fewer, the terminals sharing that many pipelined connections (terminal i on connection i mod C, "
      "each terminal waiting for its own answer); the SQLite backends run in this process, a database connection "
      "per terminal (–). "
      "Media: {}.",
      o.seed, o.warmup, o.seconds, o.io_threads, media_text(o));
}

std::string figures_text(const MatrixOptions& o) {
  std::string reps = o.reps == 1 ? "One run per cell."
                                 : fmt::format(
                                       "{} repetitions per cell, in turn; every figure is the median over "
                                       "them (tx/s with min-max; latencies over the runs that completed transactions).",
                                       o.reps);
  return "Figures: tx/s is the transactions completed in the timed phase (rolled-back New-Orders included) over "
         "its length; NO/min the New-Orders among them per minute; latencies from sending a transaction to its "
         "final answer, in ms; server CPU is utime + stime of the working process (the aup server, or this whole "
         "process for SQLite, terminals included) per transaction, and apart: user (utime) and system (stime, the "
         "kernel's work for it: sockets, wake-ups, writes); bytes written is /proc/PID/io write_bytes of "
         "that process per transaction, and device the sectors written × 512 of the block device holding the data "
         "(/sys/block/DEV/stat: every process's writes, the file system's journal included; – in memory); resident is its VmRSS after the run, state the rows' size as data (8 "
         "bytes a number). " +
         reps;
}

std::string ratios_text(const std::vector<Ratio>& ratios) {
  if (ratios.empty()) return "No ratios: the matrix has no aup cell with a SQLite cell to set it against.\n";
  std::string out;
  for (const Ratio& r : ratios) out += "- " + ratio_text(r) + "\n";
  return out;
}

std::string loads_table(const std::vector<LoadRecord>& loads) {
  std::string out = "| medium | W | layout | loaded by | seconds | size MB |\n|---|---:|---|---|---:|---:|\n";
  for (const LoadRecord& l : loads) {
    out += fmt::format("| {} | {} | {} | {} | {:.1f} | {:.1f} |\n", l.medium, l.warehouses, l.layout, l.kind, l.seconds,
                       static_cast<double>(l.bytes) / 1e6);
  }
  return out;
}

std::string table_row(const CellKey& key, const CellFigures& c, bool with_range) {
  const RunFigures& m = c.median;
  constexpr int kNewOrder = static_cast<int>(TxKind::new_order);
  constexpr int kPayment = static_cast<int>(TxKind::payment);
  std::string tx = count(m.transactions_per_s);
  if (with_range) tx += fmt::format(" ({}-{})", count(c.transactions_per_s_min), count(c.transactions_per_s_max));
  std::string device = m.device_bytes_per_transaction < 0 ? "–" : count(m.device_bytes_per_transaction);
  uint32_t n = connections_of(key);
  return fmt::format(
      "| {} | {} | {} | {} | {} | {} | {} | {} / {} | {} / {} | {:.1f} | {:.1f} | {:.1f} | {} | {} | {:.1f} | {:.1f} | "
      "{:.2f} |\n",
      key.medium, key.warehouses, key.kind, key.terminals, n ? std::to_string(n) : "–", tx,
      count(m.new_orders_per_min), ms(m.p50_us[kNewOrder]), ms(m.p99_us[kNewOrder]), ms(m.p50_us[kPayment]),
      ms(m.p99_us[kPayment]), m.cpu_us_per_transaction, m.user_us_per_transaction, m.system_us_per_transaction,
      count(m.write_bytes_per_transaction), device, m.resident_bytes / 1e6, m.state_bytes / 1e6,
      m.state_bytes > 0 ? m.resident_bytes / m.state_bytes : 0.0);
}

}  // namespace

std::string matrix_table(const MatrixOptions& o, const MatrixResults& results) {
  std::string out =
      "| medium | W | backend | terminals | connections | tx/s | NO/min | New-Order p50 / p99 ms | "
      "Payment p50 / p99 ms | "
      "server CPU µs/tx | user µs/tx | system µs/tx | bytes written/tx: process | device | resident MB | state MB | "
      "resident ÷ state |\n"
      "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const CellKey& key : cell_keys(o)) {
    std::optional<CellFigures> c = cell_figures(results, key);
    if (c) out += table_row(key, *c, o.reps > 1);
  }
  return out;
}

std::string matrix_json(const bench::Environment& env, const MatrixOptions& o, const MatrixResults& results,
                        const std::vector<Ratio>& ratios) {
  std::string out = bench::json_opening("tpcc", env, o.command);
  out += fmt::format("  \"compiler\": {},\n  \"build\": {},\n  \"load_average_at_start\": {:.2f},\n",
                     json_string(env.compiler), json_string(env.build), env.load_average);
  out += options_json(o);
  out += loads_json(results.loads);
  out += runs_json(results);
  out += cells_json(o, results);
  out += ratios_json(ratios);
  return out + "}\n";
}

std::string matrix_markdown(const bench::Environment& env, const MatrixOptions& o, const MatrixResults& results,
                            const std::vector<Ratio>& ratios, const std::string& plots) {
  std::string md = bench::markdown_opening("TPC-C: aup against SQLite", env, o.command);
  md += fmt::format("Machine: {}; built {} ({}); 1-minute load average at the start {:.2f}.\n\n", env.machine,
                    env.build, env.compiler, env.load_average);
  md += load_text(o) + "\n\n" + pinning_text(o) + "\n\n" + figures_text(o) + "\n\n";
  md += matrix_table(o, results) + "\n";
  if (!results.failed.empty()) {
    md +=
        fmt::format("{} run{} failed the consistency check and {} left out (see tpcc.json).\n\n", results.failed.size(),
                    results.failed.size() == 1 ? "" : "s", results.failed.size() == 1 ? "is" : "are");
  }
  md +=
      "Ratios (medians), against the goals: in RAM aup ≥ 4x the best tuned SQLite; on disk ≥ 7x sqlite-grouped "
      "at 64 terminals; aup's resident memory ≤ 2.2x its state bytes.\n\n";
  md += ratios_text(ratios) + "\n";
  md += "Template loads:\n\n" + loads_table(results.loads) + "\n";
  if (!plots.empty()) md += plots + "\n";
  return md;
}

}  // namespace aup::tpcc

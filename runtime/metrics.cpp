#include "runtime/metrics.h"

#include <fmt/format.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "runtime/durability.h"
#include "runtime/json.h"
#include "storage/key_tables.h"
#include "vm/state.h"
#include "vm/text_pool.h"

namespace aup::runtime {

std::string_view fail_code_name(size_t i) {
  assert(i < kFailCodes);
  return code_name(static_cast<Code>(i));
}

// ---- the table ------------------------------------------------------------------------

using K = MetricKind;
// docs/operations.md ("Monitoring") says the same of each, at more length.
const std::vector<MetricDesc> kMetrics = {
    {"uptime_seconds", K::Gauge, "seconds", "Seconds since `aup run` started (before it opened the store)."},
    {"events_applied", K::Counter, "events",
     "Events whose handler ran to its end (answered ok once their batch is durable)."},
    {"events_replayed", K::Counter, "events",
     "Of events_applied, retries answered again for their idempotency key, applying nothing."},
    {"events_failed", K::Counter, "events", "Events that failed and were undone, or were refused, by error code.",
     true},
    {"queries", K::Counter, "queries", "Queries answered (schema and stats requests are not counted)."},
    {"schema_requests", K::Counter, "requests",
     "Schema requests answered (`aup call` asks for the schema before each request, `aup shell` once)."},
    {"reads", K::Counter, "reads", "Read requests answered: rows by key or range, without a query."},
    {"requests_invalid", K::Counter, "requests",
     "Requests answered bad_request, unknown_event, unknown_query or bad_args by the request decoder."},
    {"commits", K::Counter, "commits", "Batches with at least one applied event that were committed or tried."},
    {"commit_failures", K::Counter, "commits", "Commits that failed (their events answered unavailable)."},
    {"store_unavailable", K::Gauge, "flag",
     "1 when the last batch left every event refused as unavailable (a failed write or sync: until a restart)."},
    {"events_per_commit", K::Gauge, "events", "Mean applied events per commit over the last minute (0: no commit)."},
    {"commit_latency_p50_seconds", K::Gauge, "seconds",
     "Median time of a commit (log write and fdatasync) over the last minute."},
    {"commit_latency_p99_seconds", K::Gauge, "seconds", "99th percentile commit time over the last minute."},
    {"commit_latency_max_seconds", K::Gauge, "seconds", "Longest commit over the last minute."},
    {"commit_duration_seconds", K::Histogram, "seconds",
     "Time of each commit (log write and fdatasync) since the start."},
    {"event_duration_seconds", K::Histogram, "seconds",
     "Time from taking each event to its answer formed, its commit apart, since the start."},
    {"query_duration_seconds", K::Histogram, "seconds",
     "Time from taking each query to its answer formed, since the start."},
    {"log_written_bytes", K::Counter, "bytes",
     "Log entry bytes written since the store was opened (0 with --memory)."},
    {"log_bytes", K::Gauge, "bytes", "Bytes of log entries in the segments kept now (0 with --memory)."},
    {"image_bytes", K::Gauge, "bytes",
     "Bytes of the current images of every table and the vars (0 with --memory)."},
    {"checkpoints", K::Counter, "checkpoints",
     "Checkpoints finished since the store was opened (0 with --memory)."},
    {"checkpoint_age_seconds", K::Gauge, "seconds",
     "Seconds since the last checkpoint finished, or since the store was opened if none has (0 with --memory)."},
    {"snapshot_age_seconds", K::Gauge, "seconds",
     "Seconds since the snapshot queries read was published (0 without I/O threads: queries read the live state)."},
    {"connections", K::Gauge, "connections", "Connections open (0 over stdin)."},
    {"events_queued", K::Gauge, "events",
     "Events read by I/O threads and waiting for the owner (0 without I/O threads)."},
    {"answer_bytes_waiting", K::Gauge, "bytes",
     "Answer bytes formed and not yet taken by their clients (0 over stdin)."},
    {"state_bytes", K::Gauge, "bytes",
     "Bytes the tables' and indexes' tree nodes hold (the texts their rows point to apart)."},
    {"memory_bytes", K::Gauge, "bytes",
     "Where memory goes, by part (rows, leaf_free, inner, keys, texts, index, node_copies, journal, jit_code, "
     "malloc_in_use, malloc_free) and table; only when asked (?memory, {\"stats\":{\"memory\":true}}).",
     false, false, true},
    {"process_resident_memory_bytes", K::Gauge, "bytes", "Resident memory of the process (/proc/self/statm).",
     false, true},
    {"process_cpu_seconds", K::Counter, "seconds", "User and system CPU time of the process, every thread.", false,
     true},
    {"process_open_fds", K::Gauge, "files", "Files the process has open (/proc/self/fd).", false, true},
    {"process_max_fds", K::Gauge, "files", "The most files the process may open (RLIMIT_NOFILE).", false, true},
    {"process_start_time_seconds", K::Gauge, "seconds", "When the process started, in seconds since the Unix epoch.",
     false, true},
    {"replication_role", K::Gauge, "role",
     "0 a lone node, 1 a primary, 2 a replica, 3 a cluster's node with no role yet (docs/replication.md)."},
    {"replication_term", K::Gauge, "term", "The term this node is in: its primary's (0 on a lone node)."},
    {"replication_save", K::Gauge, "save", "The last save this node's state holds (0 in memory)."},
    {"replication_primary_save", K::Gauge, "save",
     "A replica's primary's last durable save, as it last said (a primary: its own)."},
    {"replication_lag_entries", K::Gauge, "entries", "Saves the primary holds that this replica does not yet."},
    {"replication_lag_seconds", K::Gauge, "seconds",
     "How long this replica has not held its primary's last save (0 when it does)."},
    {"replicas_connected", K::Gauge, "replicas", "Replicas following this primary now."},
    {"replicas_synchronous", K::Gauge, "replicas",
     "Of those, the ones whose acknowledgements an answer waits for (--sync-replicas)."},
    {"build_info", K::Info, "labels", "The version of aup and the engine that runs the module (vm or jit), as labels."},
};

int metric_index(std::string_view name) {
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    if (kMetrics[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string prometheus_name(const MetricDesc& d) {
  return fmt::format("{}{}{}", d.process ? "" : "aup_", d.name, d.kind == K::Counter ? "_total" : "");
}

size_t latency_bucket(uint64_t ns) {
  // Bounds in nanoseconds, compared as integers: exact at every bound.
  static const std::array<uint64_t, kLatencyBoundsSeconds.size()> bounds_ns = [] {
    std::array<uint64_t, kLatencyBoundsSeconds.size()> b{};
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint64_t>(std::llround(kLatencyBoundsSeconds[i] * 1e9));
    return b;
  }();
  return static_cast<size_t>(std::lower_bound(bounds_ns.begin(), bounds_ns.end(), ns) - bounds_ns.begin());
}

// ---- the answers ----------------------------------------------------------------------

namespace {

// The histograms and the build info are objects in the JSON answer:
//   {"count":N,"sum":S,"le":[BOUNDS],"buckets":[CUMULATIVE COUNTS]}
//   {"version":"0.1.0","engine":"vm"}
void histogram_json(const HistogramSample& h, std::string& out) {
  out += "{\"count\":";
  json_append_number(out, h.count());
  out += ",\"sum\":";
  json_append_number(out, h.sum_seconds);
  out += ",\"le\":[";
  for (size_t b = 0; b < kLatencyBoundsSeconds.size(); ++b) {
    if (b) out += ',';
    json_append_number(out, kLatencyBoundsSeconds[b]);
  }
  out += "],\"buckets\":[";
  for (size_t b = 0; b < kLatencyBoundsSeconds.size(); ++b) {
    if (b) out += ',';
    json_append_number(out, h.cumulative[b]);
  }
  out += "]}";
}

void by_code_json(const MetricSample& s, std::string& out) {
  out += '{';
  for (size_t c = 0; c < kFailCodes; ++c) {
    if (c) out += ',';
    json_append_string(out, fail_code_name(c));
    out += ':';
    json_append_number(out, s.by_code[c]);
  }
  out += '}';
}

// [{"part":"rows","table":"items","bytes":N}, {"part":"index","table":
// "customers","index":"by_name","bytes":N}, {"part":"malloc_free","bytes":N}]
void memory_json(const MetricSample& s, std::string& out) {
  out += '[';
  for (size_t i = 0; i < s.memory.size(); ++i) {
    const MemoryPart& p = s.memory[i];
    out += i ? ",{\"part\":" : "{\"part\":";
    json_append_string(out, p.part);
    if (!p.table.empty()) {
      out += ",\"table\":";
      json_append_string(out, p.table);
    }
    if (!p.index.empty()) {
      out += ",\"index\":";
      json_append_string(out, p.index);
    }
    out += ",\"bytes\":";
    json_append_number(out, p.bytes);
    out += '}';
  }
  out += ']';
}

}  // namespace

void stats_json(const MetricSample& s, std::string& out) {
  out += '{';
  size_t h = 0;
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    if (i) out += ',';
    json_append_string(out, kMetrics[i].name);
    out += ':';
    if (kMetrics[i].kind == K::Histogram) {
      histogram_json(s.histograms[h++], out);
    } else if (kMetrics[i].kind == K::Info) {
      out += "{\"version\":";
      json_append_string(out, s.version);
      out += ",\"engine\":";
      json_append_string(out, s.engine);
      out += '}';
    } else if (kMetrics[i].per_code) {
      by_code_json(s, out);
    } else if (kMetrics[i].per_part) {
      memory_json(s, out);
    } else {
      json_append_number(out, s.values[i]);
    }
  }
  out += '}';
}

namespace {
bool number_at(const JsonDoc& doc, uint32_t obj, std::string_view key, double& v, std::string& error) {
  uint32_t n = doc.member(obj, key);
  if (!n || doc.node(n).kind != JsonNode::Kind::Number) {
    error = fmt::format("the stats answer has no number `{}`", key);
    return false;
  }
  v = doc.node(n).num;
  return true;
}

bool string_at(const JsonDoc& doc, uint32_t obj, std::string_view key, std::string& v, std::string& error) {
  uint32_t n = doc.member(obj, key);
  if (!n || doc.node(n).kind != JsonNode::Kind::String) {
    error = fmt::format("the stats answer has no text `{}`", key);
    return false;
  }
  v = doc.node(n).str;
  return true;
}

bool histogram_from_json(const JsonDoc& doc, uint32_t obj, std::string_view name, HistogramSample& h,
                         std::string& error) {
  double count = 0;
  if (!number_at(doc, obj, "count", count, error) || !number_at(doc, obj, "sum", h.sum_seconds, error)) return false;
  uint32_t b = doc.member(obj, "buckets");
  if (!b || doc.node(b).kind != JsonNode::Kind::Array || doc.node(b).count != kLatencyBoundsSeconds.size()) {
    error = fmt::format("the stats answer's `{}` has not {} buckets", name, kLatencyBoundsSeconds.size());
    return false;
  }
  uint32_t item = doc.first_child(b);
  for (size_t i = 0; i < kLatencyBoundsSeconds.size(); ++i, item = doc.after(item)) h.cumulative[i] = doc.node(item).num;
  h.cumulative.back() = count;
  return true;
}

// An answer's memory_bytes (memory_json's array); a part's table and
// index may be absent.
bool memory_from_json(const JsonDoc& doc, std::string_view name, MetricSample& s, std::string& error) {
  uint32_t arr = doc.member(doc.root(), name);
  if (!arr || doc.node(arr).kind != JsonNode::Kind::Array) {
    error = fmt::format("the stats answer has no array `{}`", name);
    return false;
  }
  uint32_t item = doc.first_child(arr);
  for (uint32_t i = 0; i < doc.node(arr).count; ++i, item = doc.after(item)) {
    MemoryPart p;
    if (doc.node(item).kind != JsonNode::Kind::Object || !string_at(doc, item, "part", p.part, error) ||
        !number_at(doc, item, "bytes", p.bytes, error)) {
      if (error.empty()) error = fmt::format("the stats answer's `{}` holds a non-object", name);
      return false;
    }
    if (doc.member(item, "table") && !string_at(doc, item, "table", p.table, error)) return false;
    if (doc.member(item, "index") && !string_at(doc, item, "index", p.index, error)) return false;
    s.memory.push_back(std::move(p));
  }
  return true;
}

bool metric_from_json(const JsonDoc& doc, size_t i, size_t& h, MetricSample& s, std::string& error) {
  const MetricDesc& d = kMetrics[i];
  if (d.per_part) return memory_from_json(doc, d.name, s, error);
  if (d.kind != K::Histogram && d.kind != K::Info && !d.per_code) {
    return number_at(doc, doc.root(), d.name, s.values[i], error);
  }
  uint32_t obj = doc.member(doc.root(), d.name);
  if (!obj || doc.node(obj).kind != JsonNode::Kind::Object) {
    error = fmt::format("the stats answer has no object `{}`", d.name);
    return false;
  }
  if (d.kind == K::Histogram) return histogram_from_json(doc, obj, d.name, s.histograms[h++], error);
  if (d.kind == K::Info) return string_at(doc, obj, "version", s.version, error) &&
                                string_at(doc, obj, "engine", s.engine, error);
  for (size_t c = 0; c < kFailCodes; ++c) {
    if (!number_at(doc, obj, fail_code_name(c), s.by_code[c], error)) return false;
  }
  return true;
}
}  // namespace

bool sample_from_json(std::string_view result, MetricSample& s, std::string& error) {
  JsonDoc doc;
  if (!doc.parse(result, error)) return false;
  if (doc.node(doc.root()).kind != JsonNode::Kind::Object) {
    error = "the stats answer's result is not an object";
    return false;
  }
  size_t h = 0;
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    if (!metric_from_json(doc, i, h, s, error)) return false;
  }
  return true;
}

namespace {
// A histogram's lines: a bucket a bound, +Inf last, then _sum and _count.
void histogram_text(const std::string& name, const HistogramSample& h, std::string& out) {
  for (size_t b = 0; b < kLatencyBuckets; ++b) {
    if (b + 1 < kLatencyBuckets) {
      out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, kLatencyBoundsSeconds[b], h.cumulative[b]);
    } else {
      out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, h.cumulative[b]);
    }
  }
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, h.sum_seconds, name, h.count());
}

std::string_view prometheus_type(MetricKind k) {
  switch (k) {
    case K::Counter: return "counter";
    case K::Histogram: return "histogram";
    case K::Gauge:
    case K::Info: return "gauge";  // an info metric is a gauge of 1 (the text format has no info type)
  }
  return "untyped";
}
}  // namespace

void prometheus_text(const MetricSample& s, std::string& out) {
  size_t h = 0;
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    const MetricDesc& d = kMetrics[i];
    std::string name = prometheus_name(d);
    // Help text escapes only `\` and newlines, neither of which ours hold.
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, d.help, name, prometheus_type(d.kind));
    if (d.kind == K::Histogram) {
      histogram_text(name, s.histograms[h++], out);
    } else if (d.kind == K::Info) {
      // Label values are the version and an engine's name: no quote,
      // backslash or newline to escape.
      out += fmt::format("{}{{version=\"{}\",engine=\"{}\"}} 1\n", name, s.version, s.engine);
    } else if (d.per_code) {
      for (size_t c = 0; c < kFailCodes; ++c) {
        out += fmt::format("{}{{code=\"{}\"}} {}\n", name, fail_code_name(c), s.by_code[c]);
      }
    } else if (d.per_part) {
      // Label values are part names and the module's table and index
      // names (identifiers, `$keys`): nothing to escape.
      for (const MemoryPart& p : s.memory) {
        out += fmt::format("{}{{part=\"{}\"", name, p.part);
        if (!p.table.empty()) out += fmt::format(",table=\"{}\"", p.table);
        if (!p.index.empty()) out += fmt::format(",index=\"{}\"", p.index);
        out += fmt::format("}} {}\n", p.bytes);
      }
    } else {
      out += fmt::format("{} {}\n", name, s.values[i]);
    }
  }
}

// ---- health ---------------------------------------------------------------------------

namespace {
constexpr std::string_view kRoles[] = {"standalone", "primary", "replica", "joining"};
double value_of(const MetricSample& s, std::string_view name) {
  return s.values[static_cast<size_t>(metric_index(name))];
}
}  // namespace

bool health_json(const MetricSample& s, std::string& out) {
  double role = value_of(s, "replication_role");
  size_t r = role >= 0 && role < 4 ? static_cast<size_t>(role) : 3;
  std::string_view why;
  if (r == 3) {
    why = "this node of a cluster neither leads nor follows a primary yet (docs/replication.md)";
  } else if (value_of(s, "store_unavailable") > 0) {
    why = s.unavailable_why.empty() ? std::string_view("the store refuses every event") : s.unavailable_why;
  }
  out += why.empty() ? "{\"ready\":true" : "{\"ready\":false";
  out += ",\"role\":";
  json_append_string(out, kRoles[r]);
  out += ",\"save\":";
  json_append_number(out, value_of(s, "replication_save"));
  out += ",\"uptime_seconds\":";
  json_append_number(out, value_of(s, "uptime_seconds"));
  if (!why.empty()) {
    out += ",\"why\":";
    json_append_string(out, why);
  }
  out += '}';
  return why.empty();
}

// ---- for people ----------------------------------------------------------------------

namespace {

std::string duration_text(double seconds) {
  if (seconds == 0) return "0 s";
  if (seconds < 1e-3) return fmt::format("{:.1f} µs", seconds * 1e6);
  if (seconds < 1) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.2f} s", seconds);
}

// Binary units: a store's sizes are pages and segments of 2^k bytes.
std::string bytes_text(double bytes) {
  if (bytes < 1024) return fmt::format("{:.0f} B", bytes);
  if (bytes < 1024.0 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024);
  if (bytes < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
}

// The bound a fraction p of the durations are at or under, as the
// histogram can tell it: "≤ 2.50 ms" (or "> 10.00 s" past the last).
std::string quantile_text(const HistogramSample& h, double p) {
  double want = p * h.count();
  for (size_t b = 0; b < kLatencyBoundsSeconds.size(); ++b) {
    if (h.cumulative[b] >= want) return "≤ " + duration_text(kLatencyBoundsSeconds[b]);
  }
  return "> " + duration_text(kLatencyBoundsSeconds.back());
}

std::string histogram_line(const HistogramSample& h) {
  if (h.count() == 0) return "none";
  return fmt::format("{:.0f}, mean {}, median {}, 99% {}", h.count(), duration_text(h.sum_seconds / h.count()),
                     quantile_text(h, 0.5), quantile_text(h, 0.99));
}

std::string codes_line(const MetricSample& s) {
  std::string line;
  for (size_t c = 0; c < kFailCodes; ++c) {
    if (s.by_code[c] == 0) continue;
    line += fmt::format("{}{} {:.0f}", line.empty() ? "" : ", ", fail_code_name(c), s.by_code[c]);
  }
  return line.empty() ? "0" : line;
}

// The total, then a line a table (its parts side by side, and how full
// its leaves are), an index, and a process's part:
//   customers  rows 3.2 MiB (97% of the leaves), inner 35.1 KiB, keys 1.4 MiB, texts 17.2 MiB
std::string memory_lines(const MetricSample& s) {
  if (s.memory.empty()) return "not asked (aup stats --memory)";
  double total = 0;
  std::vector<std::pair<std::string, std::string>> lines;  // name, parts
  for (size_t i = 0; i < s.memory.size(); ++i) {
    const MemoryPart& p = s.memory[i];
    // malloc_in_use holds the rest, and more: not added again.
    if (p.part != "malloc_in_use") total += p.bytes;
    bool table = p.part == "rows" && i + 4 < s.memory.size() && s.memory[i + 1].part == "leaf_free" &&
                 s.memory[i + 4].part == "texts";  // table_parts' five
    if (table) {
      double free = s.memory[i + 1].bytes, all = p.bytes + free;
      lines.emplace_back(p.table, fmt::format("rows {} ({:.0f}% of the leaves), inner {}, keys {}, texts {}",
                                              bytes_text(p.bytes), all > 0 ? 100 * p.bytes / all : 0.0,
                                              bytes_text(s.memory[i + 2].bytes), bytes_text(s.memory[i + 3].bytes),
                                              bytes_text(s.memory[i + 4].bytes)));
      for (size_t j = i + 1; j <= i + 4; ++j) total += s.memory[j].bytes;
      i += 4;
    } else {
      lines.emplace_back(p.index.empty() ? p.part : p.table + "." + p.index, bytes_text(p.bytes));
    }
  }
  size_t width = 0;
  for (const auto& l : lines) width = std::max(width, l.first.size());
  std::string out = bytes_text(total) + " in these parts (malloc_in_use apart: it holds most of them)";
  for (const auto& l : lines) out += fmt::format("\n  {:<{}}  {}", l.first, width, l.second);
  return out;
}

std::string value_line(const MetricSample& s, size_t i) {
  const MetricDesc& d = kMetrics[i];
  double v = s.values[i];
  if (d.name == "replication_role") {
    return v >= 0 && v < 4 ? std::string(kRoles[static_cast<size_t>(v)]) : fmt::format("{}", v);
  }
  if (d.name == "process_start_time_seconds") {
    auto t = static_cast<std::time_t>(v);
    std::tm tm{};
    gmtime_r(&t, &tm);
    return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                       tm.tm_hour, tm.tm_min, tm.tm_sec);
  }
  if (d.name == "process_cpu_seconds") {
    double up = value_of(s, "uptime_seconds");
    return fmt::format("{} ({:.1f}% of a core since the start)", duration_text(v), up > 0 ? 100 * v / up : 0.0);
  }
  if (d.unit == "seconds") return duration_text(v);
  if (d.unit == "bytes") return bytes_text(v);
  if (v == std::floor(v)) return fmt::format("{:.0f}", v);
  return fmt::format("{:.2f}", v);
}

}  // namespace

void stats_text(const MetricSample& s, std::string& out) {
  size_t width = 0;
  for (const MetricDesc& d : kMetrics) width = std::max(width, d.name.size());
  size_t h = 0;
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    const MetricDesc& d = kMetrics[i];
    std::string value = d.kind == K::Histogram ? histogram_line(s.histograms[h++])
                        : d.kind == K::Info    ? fmt::format("version {}, engine {}", s.version, s.engine)
                        : d.per_code           ? codes_line(s)
                        : d.per_part           ? memory_lines(s)
                                               : value_line(s, i);
    out += fmt::format("{:<{}}  {}\n", d.name, width, value);
  }
}

// ---- LatencyWindow --------------------------------------------------------------------

LatencyWindow::LatencyWindow() : slots_(kSeconds) {}

void LatencyWindow::add(uint64_t second, uint64_t ns, uint64_t events) {
  Slot& s = slots_[second % kSeconds];
  if (s.second != second) {
    // A second a minute or more ago: it leaves the window now.
    s.second = second;
    s.events = 0;
    s.latency = storage::LatencyHistogram{};
  }
  s.events += events;
  s.latency.add(ns);
}

LatencyWindow::Summary LatencyWindow::over(uint64_t now) const {
  storage::LatencyHistogram all;
  Summary sum;
  for (const Slot& s : slots_) {
    if (s.second == UINT64_MAX || s.second > now || now - s.second >= kSeconds) continue;
    all.merge(s.latency);
    sum.events += s.events;
  }
  sum.commits = all.count();
  sum.p50_ns = all.percentile_ns(0.5);
  sum.p99_ns = all.percentile_ns(0.99);
  sum.max_ns = all.max_ns();
  return sum;
}

// ---- Metrics --------------------------------------------------------------------------

double Metrics::monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Metrics::Metrics(Clock clock) : clock_(std::move(clock)) {
  started_ = clock_();
  last_checkpoint_ = started_;
  start_time_ = process_start_time_seconds();
}

void Metrics::watch(const ServiceCounters* c) {
  std::lock_guard<std::mutex> lock(mu_);
  services_.push_back(c);
}

void Metrics::unwatch(const ServiceCounters* c) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase(services_, c);
}

std::atomic<int64_t>* Metrics::answer_gauge() {
  std::lock_guard<std::mutex> lock(mu_);
  return &answer_gauges_.emplace_back(0);
}

void Metrics::after_batch(uint64_t latency_ns, uint64_t events, bool committed, const vm::State& state,
                          const Durability& durability) {
  StoreFigures f = durability.store_figures();
  uint64_t bytes = state_bytes(state);
  uint64_t journal = state.journal_bytes();
  double now = clock_();
  std::lock_guard<std::mutex> lock(mu_);
  if (events > 0) {
    ++commits_;
    if (!committed) ++commit_failures_;
    window_.add(static_cast<uint64_t>(now), latency_ns, events);
    ++commit_buckets_[latency_bucket(latency_ns)];
    commit_sum_ns_ += latency_ns;
  }
  has_store_ = f.store;
  log_bytes_written_ = f.log_bytes_written;
  log_bytes_ = f.log_bytes;
  image_bytes_ = f.image_bytes;
  if (f.checkpoints != checkpoints_) last_checkpoint_ = now;
  checkpoints_ = f.checkpoints;
  state_bytes_ = bytes;
  journal_bytes_ = journal;
  last_save_ = f.store ? durability.applied_save() : 0;
  const std::string* refusing = durability.refusing();
  if (refusing && durability.refusing_code() == Code::Unavailable) {
    unavailable_why_ = *refusing;
  } else {
    unavailable_why_.clear();
  }
}

void Metrics::snapshot_published() { snapshot_at_.store(clock_(), std::memory_order_relaxed); }

namespace {
// Counts a bucket each into cumulative counts.
template <class Bucket>
HistogramSample cumulative(Bucket bucket, uint64_t sum_ns) {
  HistogramSample h;
  double total = 0;
  for (size_t b = 0; b < kLatencyBuckets; ++b) {
    total += static_cast<double>(bucket(b));
    h.cumulative[b] = total;
  }
  h.sum_seconds = static_cast<double>(sum_ns) * 1e-9;
  return h;
}
}  // namespace

MetricSample Metrics::sample() const {
  MetricSample s;
  auto set = [&s](std::string_view name, double v) { s.values[static_cast<size_t>(metric_index(name))] = v; };
  double now = clock_();
  uint64_t resident = resident_bytes();  // file reads: not while the owner may wait for the lock
  ProcessFigures p = process_figures();
  ReplicationFigures r = replication_ ? replication_() : ReplicationFigures{};
  // Held for about a merge of the window's 60 histograms (tens of
  // microseconds), once per stats request.
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t applied = 0, replayed = 0, queries = 0, reads = 0, schemas = 0, invalid = 0;
  std::array<uint64_t, kLatencyBuckets> events{}, query{};
  uint64_t events_ns = 0, query_ns = 0;
  for (const ServiceCounters* c : services_) {
    applied += c->events_ok.get();
    replayed += c->events_replayed.get();
    queries += c->queries.get();
    reads += c->reads.get();
    schemas += c->schemas.get();
    invalid += c->bad_requests.get();
    for (size_t i = 0; i < kFailCodes; ++i) s.by_code[i] += static_cast<double>(c->failed_by_code[i].get());
    for (size_t b = 0; b < kLatencyBuckets; ++b) {
      events[b] += c->event_latency.bucket(b);
      query[b] += c->query_latency.bucket(b);
    }
    events_ns += c->event_latency.sum_ns();
    query_ns += c->query_latency.sum_ns();
  }
  s.histograms[static_cast<size_t>(Latency::Commit)] =
      cumulative([this](size_t b) { return commit_buckets_[b]; }, commit_sum_ns_);
  s.histograms[static_cast<size_t>(Latency::Event)] = cumulative([&](size_t b) { return events[b]; }, events_ns);
  s.histograms[static_cast<size_t>(Latency::Query)] = cumulative([&](size_t b) { return query[b]; }, query_ns);
  s.version = version_;
  s.engine = engine_;
  LatencyWindow::Summary w = window_.over(static_cast<uint64_t>(now));
  int64_t waiting = 0;
  for (const auto& g : answer_gauges_) waiting += g.load(std::memory_order_relaxed);
  double snapshot = snapshot_at_.load(std::memory_order_relaxed);
  set("uptime_seconds", now - started_);
  set("events_applied", static_cast<double>(applied));
  set("events_replayed", static_cast<double>(replayed));
  set("queries", static_cast<double>(queries));
  set("reads", static_cast<double>(reads));
  set("schema_requests", static_cast<double>(schemas));
  set("requests_invalid", static_cast<double>(invalid));
  set("commits", static_cast<double>(commits_));
  set("commit_failures", static_cast<double>(commit_failures_));
  set("events_per_commit", w.commits ? static_cast<double>(w.events) / static_cast<double>(w.commits) : 0.0);
  set("commit_latency_p50_seconds", static_cast<double>(w.p50_ns) * 1e-9);
  set("commit_latency_p99_seconds", static_cast<double>(w.p99_ns) * 1e-9);
  set("commit_latency_max_seconds", static_cast<double>(w.max_ns) * 1e-9);
  set("log_written_bytes", static_cast<double>(log_bytes_written_));
  set("log_bytes", static_cast<double>(log_bytes_));
  set("image_bytes", static_cast<double>(image_bytes_));
  set("checkpoints", static_cast<double>(checkpoints_));
  set("checkpoint_age_seconds", has_store_ ? now - last_checkpoint_ : 0.0);
  set("snapshot_age_seconds", snapshot < 0 ? 0.0 : now - snapshot);
  set("connections", connections.load(std::memory_order_relaxed));
  set("events_queued", static_cast<double>(events_queued.load(std::memory_order_relaxed)));
  set("answer_bytes_waiting", static_cast<double>(waiting < 0 ? 0 : waiting));
  set("state_bytes", static_cast<double>(state_bytes_));
  set("process_resident_memory_bytes", static_cast<double>(resident));
  set("process_cpu_seconds", p.cpu_seconds);
  set("process_open_fds", p.open_fds);
  set("process_max_fds", p.max_fds);
  set("process_start_time_seconds", start_time_);
  set("store_unavailable", unavailable_why_.empty() ? 0.0 : 1.0);
  s.unavailable_why = unavailable_why_;
  set_replication_figures(r, s);
  // Microseconds are as fine as any clock here means: shorter numbers.
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    if (kMetrics[i].unit == "seconds") s.values[i] = std::round(s.values[i] * 1e6) / 1e6;
  }
  return s;
}

namespace {
// A table's parts: its rows in the leaves, the leaves' room besides, its
// inner nodes, its keys' texts and its fields' texts.
void table_parts(const std::string& table, const vm::BTree::Memory& m, std::vector<MemoryPart>& out) {
  out.push_back({"rows", table, "", static_cast<double>(m.row_bytes)});
  out.push_back({"leaf_free", table, "", static_cast<double>(m.leaf_free_bytes)});
  out.push_back({"inner", table, "", static_cast<double>(m.inner_bytes)});
  out.push_back({"keys", table, "", static_cast<double>(m.key_text_bytes)});
  out.push_back({"texts", table, "", static_cast<double>(m.text_bytes)});
}

std::string table_name(const vm::State& state, uint32_t t) {
  const vm::Module& m = state.module();
  return t < m.tables.size() ? m.tables[t].name : std::string(storage::kKeyTables[t - m.tables.size()].name);
}
}  // namespace

void Metrics::add_memory(const vm::State& state, MetricSample& s) const {
  uint64_t walked_nodes = 0;
  for (uint32_t t = 0; t < state.table_count(); ++t) {
    vm::BTree::Memory m = state.table(t).memory_under(state.table(t).root());
    walked_nodes += m.node_bytes();
    table_parts(table_name(state, t), m, s.memory);
  }
  const vm::Module& mod = state.module();
  for (uint32_t i = 0; i < mod.indexes.size(); ++i) {
    vm::BTree::Memory m = state.index(i).memory_under(state.index(i).root());
    walked_nodes += m.node_bytes();
    // The entries' slots hold their rows' key texts: the index's share of
    // them is its own (the table's key part has the rest).
    double bytes = static_cast<double>(m.node_bytes() + m.key_text_bytes + m.text_bytes);
    s.memory.push_back({"index", mod.tables[mod.indexes[i].table].name, mod.indexes[i].name, bytes});
  }
  uint64_t nodes = 0, journal = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    nodes = state_bytes_;
    journal = journal_bytes_;
  }
  // Nodes the trees hold besides those walked: copies older snapshots
  // keep (or, walking a snapshot, the live tree's copies since), spares.
  s.memory.push_back({"node_copies", "", "", static_cast<double>(nodes > walked_nodes ? nodes - walked_nodes : 0)});
  s.memory.push_back({"journal", "", "", static_cast<double>(journal)});
  s.memory.push_back({"jit_code", "", "", static_cast<double>(jit_code_bytes_)});
  // Blocks of the text pool's slabs that hold no text (vm/text_pool.h):
  // the slabs themselves are malloc's, in malloc_in_use.
  vm::TextPool::Figures pool = vm::TextPool::heap_figures();
  s.memory.push_back({"text_pool_free", "", "", static_cast<double>(pool.slab_bytes - pool.used_bytes)});
  struct mallinfo2 mi = mallinfo2();
  s.memory.push_back({"malloc_in_use", "", "", static_cast<double>(mi.uordblks + mi.hblkhd)});
  s.memory.push_back({"malloc_free", "", "", static_cast<double>(mi.fordblks)});
}

// Under mu_ (last_save_).
void Metrics::set_replication_figures(const ReplicationFigures& r, MetricSample& s) const {
  auto set = [&s](std::string_view name, double v) { s.values[static_cast<size_t>(metric_index(name))] = v; };
  set("replication_role", r.role);
  set("replication_term", r.term);
  // A node's own figure (a replica's follower, a primary's term floor)
  // or the save of its last batch, whichever is later.
  set("replication_save", std::max(r.save, static_cast<double>(last_save_)));
  set("replication_primary_save", std::max(r.primary_save, static_cast<double>(last_save_)));
  set("replication_lag_entries", r.lag_entries);
  set("replication_lag_seconds", r.lag_seconds);
  set("replicas_connected", r.replicas);
  set("replicas_synchronous", r.synchronous);
}

uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (got != 2) return 0;
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

namespace {
// Field `n` (1-based, as proc(5) numbers them) of /proc/self/stat: after
// the command's parentheses, which may hold spaces.
bool stat_field(const std::string& stat, size_t n, double& v) {
  size_t at = stat.rfind(')');
  if (at == std::string::npos) return false;
  size_t field = 2;
  for (size_t i = at + 1; i < stat.size(); ++i) {
    if (stat[i] != ' ') continue;
    if (++field == n) {
      v = std::strtod(stat.c_str() + i + 1, nullptr);
      return true;
    }
  }
  return false;
}

std::string read_small_file(const char* path) {
  std::FILE* f = std::fopen(path, "r");
  if (!f) return {};
  char buf[4096];
  size_t n = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  return std::string(buf, n);
}
}  // namespace

ProcessFigures process_figures() {
  ProcessFigures p;
  // getrusage counts in microseconds; /proc/self/stat in clock ticks (10 ms).
  rusage ru{};
  if (::getrusage(RUSAGE_SELF, &ru) == 0) {
    auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
    p.cpu_seconds = seconds(ru.ru_utime) + seconds(ru.ru_stime);
  }
  std::error_code ec;
  // Bounded by the process's own limit on open files.
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::end(it);
       it.increment(ec)) {
    p.open_fds += 1;
  }
  if (p.open_fds > 0) p.open_fds -= 1;  // the directory iterator's own
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) p.max_fds = static_cast<double>(rl.rlim_cur);
  return p;
}

// The process's start (field 22 of /proc/self/stat: clock ticks after
// boot) plus the boot time (`btime` of /proc/stat), as Prometheus's client
// libraries reckon it; once, at the start.
double process_start_time_seconds() {
  double after_boot = 0;
  auto ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  if (!stat_field(read_small_file("/proc/self/stat"), 22, after_boot) || ticks <= 0) return 0;
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return 0;
  char line[256];
  double btime = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "btime ", 6) == 0) btime = std::strtod(line + 6, nullptr);
  }
  std::fclose(f);
  return btime > 0 ? btime + after_boot / ticks : 0;
}

uint64_t state_bytes(const vm::State& state) {
  uint64_t n = 0;
  // The module's tables, the store's own (the keys), the indexes.
  for (size_t t = 0; t < state.tree_count(); ++t) n += state.tree(t).node_bytes();
  return n;
}

}  // namespace aup::runtime

#include "runtime/metrics.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "runtime/durability.h"
#include "runtime/json.h"
#include "vm/state.h"

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
    {"queries", K::Counter, "queries", "Queries and schema requests answered (stats requests are not counted)."},
    {"reads", K::Counter, "reads", "Read requests answered: rows by key or range, without a query."},
    {"requests_invalid", K::Counter, "requests",
     "Requests answered bad_request, unknown_event, unknown_query or bad_args by the request decoder."},
    {"commits", K::Counter, "commits", "Batches with at least one applied event that were committed or tried."},
    {"commit_failures", K::Counter, "commits", "Commits that failed (their events answered unavailable)."},
    {"events_per_commit", K::Gauge, "events", "Mean applied events per commit over the last minute (0: no commit)."},
    {"commit_latency_p50_seconds", K::Gauge, "seconds",
     "Median time of a commit (log write and fdatasync) over the last minute."},
    {"commit_latency_p99_seconds", K::Gauge, "seconds", "99th percentile commit time over the last minute."},
    {"commit_latency_max_seconds", K::Gauge, "seconds", "Longest commit over the last minute."},
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
    {"resident_bytes", K::Gauge, "bytes", "Resident memory of the process (/proc/self/statm)."},
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
};

int metric_index(std::string_view name) {
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    if (kMetrics[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string prometheus_name(const MetricDesc& d) {
  return fmt::format("aup_{}{}", d.name, d.kind == K::Counter ? "_total" : "");
}

// ---- the answers ----------------------------------------------------------------------

void stats_json(const MetricSample& s, std::string& out) {
  out += '{';
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    if (i) out += ',';
    json_append_string(out, kMetrics[i].name);
    out += ':';
    if (!kMetrics[i].per_code) {
      json_append_number(out, s.values[i]);
      continue;
    }
    out += '{';
    for (size_t c = 0; c < kFailCodes; ++c) {
      if (c) out += ',';
      json_append_string(out, fail_code_name(c));
      out += ':';
      json_append_number(out, s.by_code[c]);
    }
    out += '}';
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
}  // namespace

bool sample_from_json(std::string_view result, MetricSample& s, std::string& error) {
  JsonDoc doc;
  if (!doc.parse(result, error)) return false;
  if (doc.node(doc.root()).kind != JsonNode::Kind::Object) {
    error = "the stats answer's result is not an object";
    return false;
  }
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    if (!kMetrics[i].per_code) {
      if (!number_at(doc, doc.root(), kMetrics[i].name, s.values[i], error)) return false;
      continue;
    }
    uint32_t obj = doc.member(doc.root(), kMetrics[i].name);
    if (!obj || doc.node(obj).kind != JsonNode::Kind::Object) {
      error = fmt::format("the stats answer has no object `{}`", kMetrics[i].name);
      return false;
    }
    for (size_t c = 0; c < kFailCodes; ++c) {
      if (!number_at(doc, obj, fail_code_name(c), s.by_code[c], error)) return false;
    }
  }
  return true;
}

void prometheus_text(const MetricSample& s, std::string& out) {
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    const MetricDesc& d = kMetrics[i];
    std::string name = prometheus_name(d);
    // Help text escapes only `\` and newlines, neither of which ours hold.
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, d.help, name,
                       d.kind == K::Counter ? "counter" : "gauge");
    if (!d.per_code) {
      out += fmt::format("{} {}\n", name, s.values[i]);
      continue;
    }
    for (size_t c = 0; c < kFailCodes; ++c) {
      out += fmt::format("{}{{code=\"{}\"}} {}\n", name, fail_code_name(c), s.by_code[c]);
    }
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
  double now = clock_();
  std::lock_guard<std::mutex> lock(mu_);
  if (events > 0) {
    ++commits_;
    if (!committed) ++commit_failures_;
    window_.add(static_cast<uint64_t>(now), latency_ns, events);
  }
  has_store_ = f.store;
  log_bytes_written_ = f.log_bytes_written;
  log_bytes_ = f.log_bytes;
  image_bytes_ = f.image_bytes;
  if (f.checkpoints != checkpoints_) last_checkpoint_ = now;
  checkpoints_ = f.checkpoints;
  state_bytes_ = bytes;
  last_save_ = f.store ? durability.applied_save() : 0;
}

void Metrics::snapshot_published() { snapshot_at_.store(clock_(), std::memory_order_relaxed); }

MetricSample Metrics::sample() const {
  MetricSample s;
  auto set = [&s](std::string_view name, double v) { s.values[static_cast<size_t>(metric_index(name))] = v; };
  double now = clock_();
  uint64_t resident = resident_bytes();  // a file read: not while the owner may wait for the lock
  ReplicationFigures r = replication_ ? replication_() : ReplicationFigures{};
  // Held for about a merge of the window's 60 histograms (tens of
  // microseconds), once per stats request.
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t applied = 0, replayed = 0, queries = 0, reads = 0, invalid = 0;
  for (const ServiceCounters* c : services_) {
    applied += c->events_ok.get();
    replayed += c->events_replayed.get();
    queries += c->queries.get();
    reads += c->reads.get();
    invalid += c->bad_requests.get();
    for (size_t i = 0; i < kFailCodes; ++i) s.by_code[i] += static_cast<double>(c->failed_by_code[i].get());
  }
  LatencyWindow::Summary w = window_.over(static_cast<uint64_t>(now));
  int64_t waiting = 0;
  for (const auto& g : answer_gauges_) waiting += g.load(std::memory_order_relaxed);
  double snapshot = snapshot_at_.load(std::memory_order_relaxed);
  set("uptime_seconds", now - started_);
  set("events_applied", static_cast<double>(applied));
  set("events_replayed", static_cast<double>(replayed));
  set("queries", static_cast<double>(queries));
  set("reads", static_cast<double>(reads));
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
  set("resident_bytes", static_cast<double>(resident));
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
  // Microseconds are as fine as any clock here means: shorter numbers.
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    if (kMetrics[i].unit == "seconds") s.values[i] = std::round(s.values[i] * 1e6) / 1e6;
  }
  return s;
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

uint64_t state_bytes(const vm::State& state) {
  uint64_t n = 0;
  // The module's tables, the store's own (the keys), the indexes.
  for (size_t t = 0; t < state.tree_count(); ++t) n += state.tree(t).node_bytes();
  return n;
}

}  // namespace aup::runtime

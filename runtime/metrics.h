// What `{"stats":{}}` answers and `GET /metrics` exposes (docs/protocol.md,
// docs/operations.md "Monitoring"): counters, gauges and duration
// histograms of a running `aup run`, and the process's own figures, from
// one table of descriptors (kMetrics), so the JSON answer, the Prometheus
// text, `aup stats`' lines and GET /health can never disagree: all are
// written from one MetricSample (stats_json, prometheus_text, stats_text,
// health_json).
//
// Threads. The stats request is answered wherever it is read: on the owner
// (stdin, --io-threads 0) or on an I/O thread. So every figure is one that
// any thread may read:
//   - the Services' counters and duration histograms (ServiceCounters)
//     are single-writer relaxed atomics: each Service is used by one
//     thread, which increments with a plain load and store (no locked
//     instruction on the hot path);
//   - the owner publishes what only it may read (the store's figures, the
//     state's bytes, the commit latency and its histogram) once per batch
//     with events, into one mutex-guarded block: one uncontended lock a
//     batch, against tens of microseconds a transaction;
//   - the process_* figures are read from /proc and getrlimit when a
//     sample is taken, outside the lock;
//   - the servers keep their gauges (connections, events queued, answer
//     bytes waiting) in relaxed atomics; answer bytes in one per serving
//     thread, written by it alone.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/code.h"
#include "storage/latency.h"

namespace aup::vm {
class State;
}

namespace aup::runtime {

class Durability;

// A count one thread increments and any thread reads: the increment is a
// relaxed load and store, as cheap as a plain `++` (no read-modify-write).
class OwnedCounter {
 public:
  void inc() { v_.store(v_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// The codes an event can fail with (runtime/code.h): the VM's, then
// `unavailable` (refused: the store cannot write), by their Code.
inline constexpr size_t kFailCodes = kEventFailCodes;
inline constexpr size_t kUnavailableCode = static_cast<size_t>(Code::Unavailable);
std::string_view fail_code_name(size_t i);

// ---- latency histograms ----------------------------------------------------------------

// The bucket bounds of every latency histogram, in seconds: 1, 2.5 and 5
// of each decade from a microsecond (a point query's run) to 10 s (a
// commit on a disk that stalls), then +Inf. Fixed, so that histograms of
// any number of servers add up bucket by bucket (Prometheus's
// histogram_quantile over sum by (le)).
inline constexpr std::array<double, 22> kLatencyBoundsSeconds = {
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
    5e-3, 1e-2, 2.5e-2, 5e-2, 0.1,    0.25,   0.5,  1,    2.5,    5,    10};
inline constexpr size_t kLatencyBuckets = kLatencyBoundsSeconds.size() + 1;  // the last is +Inf
// The bucket a duration falls in: the first whose bound it is at or under.
size_t latency_bucket(uint64_t ns);

// Durations one thread adds and any thread reads (a Service's requests).
class OwnedHistogram {
 public:
  void add(uint64_t ns) {
    buckets_[latency_bucket(ns)].inc();
    sum_ns_.store(sum_ns_.load(std::memory_order_relaxed) + ns, std::memory_order_relaxed);
  }
  uint64_t bucket(size_t i) const { return buckets_[i].get(); }
  uint64_t sum_ns() const { return sum_ns_.load(std::memory_order_relaxed); }

 private:
  std::array<OwnedCounter, kLatencyBuckets> buckets_;
  std::atomic<uint64_t> sum_ns_{0};
};

// One reading of a histogram: the count at or under each bound
// (cumulative, as Prometheus has it; the last is every one), and the sum.
struct HistogramSample {
  std::array<double, kLatencyBuckets> cumulative{};
  double sum_seconds = 0;
  double count() const { return cumulative.back(); }
};

// ---- the table ------------------------------------------------------------------------

// Info: the build's labels, always 1 (aup_build_info).
enum class MetricKind : uint8_t { Counter, Gauge, Histogram, Info };

struct MetricDesc {
  std::string_view name;  // the JSON key; Prometheus: aup_NAME, `_total` after a counter's
  MetricKind kind;
  std::string_view unit;  // what one of it is: "events", "bytes", "seconds", ...
  std::string_view help;  // one line, as `# HELP` and docs/operations.md give it
  bool per_code = false;  // one value per fail code: a JSON object, the label `code`
  // A process_* metric: Prometheus has it under the name every client
  // library gives it (no aup_), so dashboards made for any process work.
  bool process = false;
  // The memory breakdown (memory_bytes): one value per part, a JSON array
  // of objects, the labels `part` and `table` (and `index`).
  bool per_part = false;
};

// Every metric, in the order both answers list them. docs/operations.md
// lists the same names (tests/docs/docs_test.py checks).
extern const std::vector<MetricDesc> kMetrics;
// kMetrics' index of `name`, or -1.
int metric_index(std::string_view name);
// The Prometheus name: aup_NAME (NAME for a process_* one), and `_total`
// after a counter's.
std::string prometheus_name(const MetricDesc& d);

// The histograms of kMetrics, in its order: a sample's histograms[i] is
// the i-th of them.
inline constexpr size_t kHistograms = 3;
enum class Latency : uint8_t { Commit, Event, Query };

// One part of where memory goes (memory_bytes, docs/operations.md
// "Memory"): what it is ("rows", "texts", "index", "malloc_free", ...),
// the table it belongs to and the index ("" for the process's own), and
// its bytes.
struct MemoryPart {
  std::string part, table, index;
  double bytes = 0;
};

// One reading of every metric: values[i] for kMetrics[i], by_code for the
// one per-code metric and memory for the per-part one (whose values[i]
// stay 0), the histograms, and the build's labels.
struct MetricSample {
  std::vector<double> values = std::vector<double>(kMetrics.size(), 0.0);
  std::array<double, kFailCodes> by_code{};
  std::vector<MemoryPart> memory;  // empty unless add_memory ran (not for GET /health)
  std::array<HistogramSample, kHistograms> histograms{};
  std::string version, engine;
  // Why the store refuses every event (store_unavailable 1), for
  // /health; not in the stats answer, whose gauge says that it does.
  std::string unavailable_why;
};

// The stats answer's result: one JSON object, kMetrics' order.
void stats_json(const MetricSample& s, std::string& out);
// The result read back (an answer's "result"); false with a message when
// a metric is missing or not a number.
bool sample_from_json(std::string_view result, MetricSample& s, std::string& error);
// The Prometheus text exposition format (version 0.0.4).
void prometheus_text(const MetricSample& s, std::string& out);
// GET /health (runtime/http.h), from the same figures:
//   {"ready":true,"role":"standalone","save":12,"uptime_seconds":3.2}
// role standalone, primary, replica, or joining (a cluster's node that
// neither leads nor follows yet); save the last one the state holds (0
// in memory). Not ready, with "why": a joining node (it answers no event
// and has no primary to name), or a store that refuses every event as
// unavailable after a failed write or sync (until it is started again).
// The figures are the owner's as of its last batch with events, so a
// cluster's replica whose primary is gone (events refused, no batch)
// stays ready. True when ready.
bool health_json(const MetricSample& s, std::string& out);
// For people (`aup stats`): a metric a line, each value in its unit
// (µs, ms or s; B, KiB, MiB or GiB; a histogram's count, mean and the
// bounds its median and 99th percentile fall under).
void stats_text(const MetricSample& s, std::string& out);

// ---- commit latency over the last minute --------------------------------------------

// Per-second slots over the last kSeconds seconds, fed once per commit by
// the owner; a slot older than the window is emptied when its second comes
// round again, and never counted. The caller passes the seconds (the
// clock is injected, so a test can move time).
class LatencyWindow {
 public:
  static constexpr uint64_t kSeconds = 60;
  LatencyWindow();
  void add(uint64_t second, uint64_t ns, uint64_t events);
  struct Summary {
    uint64_t commits = 0, events = 0;
    uint64_t p50_ns = 0, p99_ns = 0, max_ns = 0;
  };
  // The commits of seconds (now - kSeconds, now].
  Summary over(uint64_t now) const;

 private:
  struct Slot {
    uint64_t second = UINT64_MAX;  // which second it holds; UINT64_MAX: none
    uint64_t events = 0;
    storage::LatencyHistogram latency;
  };
  std::vector<Slot> slots_;  // kSeconds of them, by second % kSeconds
};

// ---- the figures ----------------------------------------------------------------------

struct ServiceCounters {
  OwnedCounter events_ok;        // applied, or answered again for their idempotency key
  OwnedCounter events_replayed;  // of those, answered again (runtime/keys.h)
  OwnedCounter events_failed;
  std::array<OwnedCounter, kFailCodes> failed_by_code;
  OwnedCounter queries;
  OwnedCounter reads;  // read requests answered (runtime/read.h)
  OwnedCounter schemas;  // schema requests (`aup call` makes one a call): not queries
  OwnedCounter bad_requests;
  // From the Service taking an event or a query to its answer formed (an
  // event's commit is not in it: that is the commit histogram's).
  OwnedHistogram event_latency, query_latency;
};

// What a node says of its part in replication (docs/replication.md), for
// the replication_* gauges; a lone node's are all 0. A save < 0: the last
// one the owner published (a primary's, or a lone node's).
struct ReplicationFigures {
  double role = 0;  // 0 alone, 1 primary, 2 replica, 3 a cluster's node with no role yet
  double term = 0;
  double save = -1, primary_save = -1;
  double lag_entries = 0, lag_seconds = 0;
  double replicas = 0, synchronous = 0;
};

class Metrics {
 public:
  // Seconds on a monotonic clock; tests pass their own.
  using Clock = std::function<double()>;
  static double monotonic_seconds();
  explicit Metrics(Clock clock = monotonic_seconds);
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // A Service's counters, counted from now until unwatch (its destructor).
  void watch(const ServiceCounters* c);
  void unwatch(const ServiceCounters* c);

  // Owner thread, after a batch with events: its commit (`committed` or
  // not, `latency_ns` long, `events` applied) and what the store and the
  // state hold now. Also once at the start (events 0: nothing committed).
  void after_batch(uint64_t latency_ns, uint64_t events, bool committed, const vm::State& state,
                   const Durability& durability);
  // Owner thread: a snapshot for queries was published (I/O threads).
  void snapshot_published();

  // Gauges the servers keep (relaxed; each written by one thread, or summed).
  std::atomic<uint32_t> connections{0};
  std::atomic<uint64_t> events_queued{0};  // handed to the owner, not yet taken
  // Answer bytes formed and not yet taken by a client: one gauge per
  // serving thread (Outbox::count_in), added up when read.
  std::atomic<int64_t>* answer_gauge();

  // Where the replication_* gauges come from: called on whichever thread
  // asks for a sample. Set before serving, cleared after.
  void set_replication(std::function<ReplicationFigures()> f) { replication_ = std::move(f); }
  // What aup_build_info says: the version, and the engine that runs the
  // module (vm or jit). Before serving.
  void set_build(std::string version, std::string engine) {
    version_ = std::move(version);
    engine_ = std::move(engine);
  }

  // What the module's machine code takes (`--engine jit`: its object's
  // bytes). Before serving.
  void set_jit_code_bytes(uint64_t bytes) { jit_code_bytes_ = bytes; }

  // Any thread.
  MetricSample sample() const;
  // Adds where memory goes to `s` (memory_bytes): `state` walked
  // (vm::BTree::memory_under: every node and every row's texts, so a
  // stats request costs a pass over the state: each node read once, and
  // the size of each text), with the owner's figures of its last batch and the
  // allocator's (mallinfo2). `state` is the one the asking thread may
  // read: the live state on the owner, a snapshot's view on an I/O thread.
  void add_memory(const vm::State& state, MetricSample& s) const;

 private:
  void set_replication_figures(const ReplicationFigures& r, MetricSample& s) const;

  Clock clock_;
  double started_;
  std::vector<const ServiceCounters*> services_;  // under mu_
  mutable std::mutex mu_;
  // What the owner published (under mu_).
  uint64_t commits_ = 0, commit_failures_ = 0;
  uint64_t log_bytes_written_ = 0, log_bytes_ = 0, image_bytes_ = 0, checkpoints_ = 0;
  uint64_t state_bytes_ = 0;
  uint64_t journal_bytes_ = 0;
  uint64_t jit_code_bytes_ = 0;  // set before serving
  uint64_t last_save_ = 0;  // the durability's applied_save() (0 in memory)
  std::string unavailable_why_;  // the durability's refusal of every event as `unavailable`, or ""
  std::function<ReplicationFigures()> replication_;
  bool has_store_ = false;       // --data (else the store's figures stay 0)
  double last_checkpoint_ = 0;  // when checkpoints_ last changed, or the start
  LatencyWindow window_;
  std::array<uint64_t, kLatencyBuckets> commit_buckets_{};  // every commit since the start
  uint64_t commit_sum_ns_ = 0;
  std::string version_ = AUP_VERSION, engine_ = "vm";
  double start_time_ = 0;  // the process's start, Unix seconds (process_start_time_seconds)
  std::atomic<double> snapshot_at_{-1};  // -1: none published (no I/O threads)
  std::deque<std::atomic<int64_t>> answer_gauges_;  // under mu_ (a deque: they never move)
};

// The process's resident memory in bytes (/proc/self/statm), 0 if unknown.
uint64_t resident_bytes();
// What the process_* metrics say, read from /proc and getrlimit (0 for
// what cannot be read).
struct ProcessFigures {
  double cpu_seconds = 0;       // user and system time, every thread
  double open_fds = 0, max_fds = 0;
  double start_time_seconds = 0;  // Unix seconds
};
ProcessFigures process_figures();
double process_start_time_seconds();
// The bytes the state's trees (its tables, the key tables among them, and
// its indexes) hold in nodes.
uint64_t state_bytes(const vm::State& state);

}  // namespace aup::runtime

// What `{"stats":{}}` answers and `GET /metrics` exposes (docs/protocol.md,
// docs/operations.md "Monitoring"): counters and gauges of a running
// `aup run`, from one table of descriptors (kMetrics), so the JSON answer
// and the Prometheus text can never disagree: both are written from one
// MetricSample (stats_json, prometheus_text).
//
// Threads. The stats request is answered wherever it is read: on the owner
// (stdin, --io-threads 0) or on an I/O thread. So every figure is one that
// any thread may read:
//   - the Services' counters (ServiceCounters) are single-writer relaxed
//     atomics: each Service is used by one thread, which increments with a
//     plain load and store (no locked instruction on the hot path);
//   - the owner publishes what only it may read (the store's figures, the
//     state's bytes, the commit latency) once per batch with events, into
//     one mutex-guarded block: one uncontended lock a batch, against tens
//     of microseconds a transaction;
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

// ---- the table ------------------------------------------------------------------------

enum class MetricKind : uint8_t { Counter, Gauge };

struct MetricDesc {
  std::string_view name;  // the JSON key; Prometheus: aup_NAME, `_total` after a counter's
  MetricKind kind;
  std::string_view unit;  // what one of it is: "events", "bytes", "seconds", ...
  std::string_view help;  // one line, as `# HELP` and docs/operations.md give it
  bool per_code = false;  // one value per fail code: a JSON object, the label `code`
};

// Every metric, in the order both answers list them. docs/operations.md
// lists the same names (tests/docs/docs_test.py checks).
extern const std::vector<MetricDesc> kMetrics;
// kMetrics' index of `name`, or -1.
int metric_index(std::string_view name);
// The Prometheus name: aup_NAME, and `_total` after a counter's.
std::string prometheus_name(const MetricDesc& d);

// One reading of every metric: values[i] for kMetrics[i], by_code for the
// one per-code metric (whose values[i] stays 0).
struct MetricSample {
  std::vector<double> values = std::vector<double>(kMetrics.size(), 0.0);
  std::array<double, kFailCodes> by_code{};
};

// The stats answer's result: one JSON object, kMetrics' order.
void stats_json(const MetricSample& s, std::string& out);
// The result read back (an answer's "result"); false with a message when
// a metric is missing or not a number.
bool sample_from_json(std::string_view result, MetricSample& s, std::string& error);
// The Prometheus text exposition format (version 0.0.4).
void prometheus_text(const MetricSample& s, std::string& out);

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
  OwnedCounter bad_requests;
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

  // Any thread.
  MetricSample sample() const;

 private:
  Clock clock_;
  double started_;
  std::vector<const ServiceCounters*> services_;  // under mu_
  mutable std::mutex mu_;
  // What the owner published (under mu_).
  uint64_t commits_ = 0, commit_failures_ = 0;
  uint64_t log_bytes_written_ = 0, log_bytes_ = 0, image_bytes_ = 0, checkpoints_ = 0;
  uint64_t state_bytes_ = 0;
  uint64_t last_save_ = 0;  // the durability's applied_save() (0 in memory)
  std::function<ReplicationFigures()> replication_;
  bool has_store_ = false;       // --data (else the store's figures stay 0)
  double last_checkpoint_ = 0;  // when checkpoints_ last changed, or the start
  LatencyWindow window_;
  std::atomic<double> snapshot_at_{-1};  // -1: none published (no I/O threads)
  std::deque<std::atomic<int64_t>> answer_gauges_;  // under mu_ (a deque: they never move)
};

// The process's resident memory in bytes (/proc/self/statm), 0 if unknown.
uint64_t resident_bytes();
// The bytes the state's trees (its tables, the key tables among them, and
// its indexes) hold in nodes.
uint64_t state_bytes(const vm::State& state);

}  // namespace aup::runtime

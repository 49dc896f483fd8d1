#include "bench/tpcc/driver.h"

#include "bench/common/proc.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <time.h>

namespace aup::tpcc {

namespace {

// A terminal keeps a record per transaction until the run ends. At the
// rates seen here (tens of thousands of transactions a second in all) a
// 20 s run needs about a million; this bound stops a runaway run (an hour
// at full speed) with an error instead of exhausting memory.
constexpr uint64_t kMaxRecordsPerTerminal = 50'000'000;

// How often the progress line is printed while the terminals run.
constexpr double kProgressPeriodS = 1.0;

double now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// One transaction as the figures need it; its input reduced to what the
// input shares of clause 5.5.1.5 count (RunCounts), so that a run keeps
// tens of bytes per transaction rather than the transaction.
struct Record {
  double start_ns;
  double end_ns;
  TxKind kind;
  Outcome outcome;
  uint8_t order_lines;         // New-Order
  uint8_t remote_order_lines;  // New-Order
  bool rollback;               // New-Order: the input asked for one
  bool remote_payment;         // Payment
};

Record record_of(const Transaction& tx, double start, double end, Outcome outcome) {
  RunCounts c;
  c.add(tx);
  return Record{start,
                end,
                kind_of(tx),
                outcome,
                static_cast<uint8_t>(c.order_lines),
                static_cast<uint8_t>(c.remote_order_lines),
                c.rollbacks != 0,
                c.remote_payments != 0};
}

// Adds one record's input to the counts, as RunCounts::add would its transaction.
void add_input(RunCounts& counts, const Record& r) {
  ++counts.per_kind[static_cast<int>(r.kind)];
  counts.order_lines += r.order_lines;
  counts.remote_order_lines += r.remote_order_lines;
  counts.rollbacks += r.rollback ? 1 : 0;
  counts.remote_payments += r.remote_payment ? 1 : 0;
}

// What the terminals share: the stop flag, a live count for the progress
// line, and the first error any of them met.
struct Shared {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> completed{0};
  std::mutex mu;
  std::exception_ptr error;

  void fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu);
    if (!error) error = e;
    stop.store(true);
  }
};

struct TerminalRun {
  std::unique_ptr<Terminal> terminal;
  std::vector<Record> records;
};

// One terminal's loop: its own generator, one transaction at a time.
void run_one(TerminalRun& run, uint32_t index, const RunSpec& spec, Shared& shared, const TxObserver& observer) {
  try {
    TransactionGenerator gen(RunConfig{spec.warehouses, spec.seed}, index);
    for (uint64_t seq = 0; !shared.stop.load(std::memory_order_relaxed); ++seq) {
      if (spec.transactions_per_terminal && seq == spec.transactions_per_terminal) break;
      if (seq == kMaxRecordsPerTerminal) throw std::runtime_error("a terminal ran more transactions than it can keep");
      Transaction tx = gen.next();
      double start = now_ns();
      TxResult result = run.terminal->execute(tx);
      double end = now_ns();
      run.records.push_back(record_of(tx, start, end, result.outcome));
      if (observer) observer(index, seq, tx, result);
      shared.completed.fetch_add(1, std::memory_order_relaxed);
    }
  } catch (...) {
    shared.fail(std::current_exception());
  }
}

// Sleeps until `until_ns` or until the terminals stop, printing progress.
void wait_phase(double until_ns, const char* phase, double phase_start_ns, Shared& shared,
                const std::function<void(const std::string&)>& progress) {
  uint64_t last_count = shared.completed.load();
  double last_at = now_ns();
  while (!shared.stop.load()) {
    double now = now_ns();
    if (now >= until_ns) return;
    double step = std::min(kProgressPeriodS * 1e9, until_ns - now);
    std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<int64_t>(step)));
    now = now_ns();
    uint64_t count = shared.completed.load();
    if (progress && now - last_at >= kProgressPeriodS * 1e9 * 0.99) {
      progress(fmt::format("{} {:.0f} s: {:.0f} transactions/s", phase, (now - phase_start_ns) / 1e9,
                           static_cast<double>(count - last_count) * 1e9 / (now - last_at)));
      last_count = count;
      last_at = now;
    }
  }
}

// The timed phase's figures from every terminal's records.
void collect(const std::vector<TerminalRun>& runs, double from_ns, double to_ns, RunResult& r) {
  for (const TerminalRun& run : runs) {
    for (const Record& rec : run.records) {
      if (rec.end_ns < from_ns || rec.end_ns > to_ns) continue;
      KindFigures& k = r.kinds[static_cast<int>(rec.kind)];
      ++k.completed;
      if (rec.outcome == Outcome::rolled_back) ++k.rolled_back;
      k.latencies_us.push_back((rec.end_ns - rec.start_ns) / 1e3);
      add_input(r.input, rec);
    }
  }
  for (KindFigures& k : r.kinds) std::sort(k.latencies_us.begin(), k.latencies_us.end());
}

}  // namespace

double KindFigures::percentile_us(double p) const {
  if (latencies_us.empty()) return 0;
  // Nearest rank: the smallest value with at least p of them at or below it.
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(latencies_us.size())));
  return latencies_us[std::clamp<size_t>(rank, 1, latencies_us.size()) - 1];
}

uint64_t RunResult::transactions() const {
  uint64_t n = 0;
  for (const KindFigures& k : kinds) n += k.completed;
  return n;
}

double RunResult::transactions_per_s() const { return seconds > 0 ? static_cast<double>(transactions()) / seconds : 0; }

double RunResult::new_orders_per_min() const {
  return seconds > 0 ? static_cast<double>(kinds[static_cast<int>(TxKind::new_order)].completed) * 60 / seconds : 0;
}

double RunResult::cpu_us_per_transaction() const { return user_us_per_transaction() + system_us_per_transaction(); }

double RunResult::user_us_per_transaction() const {
  uint64_t n = transactions();
  return n ? (after.user_ns - before.user_ns) / 1e3 / static_cast<double>(n) : 0;
}

double RunResult::system_us_per_transaction() const {
  uint64_t n = transactions();
  return n ? (after.system_ns - before.system_ns) / 1e3 / static_cast<double>(n) : 0;
}

double RunResult::write_bytes_per_transaction() const {
  uint64_t n = transactions();
  return n ? static_cast<double>(after.write_bytes - before.write_bytes) / static_cast<double>(n) : 0;
}

double RunResult::device_bytes_per_transaction() const {
  uint64_t n = transactions();
  if (!n || before.device_bytes < 0 || after.device_bytes < 0) return -1;
  return (after.device_bytes - before.device_bytes) / static_cast<double>(n);
}

std::vector<double> RunResult::all_latencies_us() const {
  std::vector<double> all;
  for (const KindFigures& k : kinds) all.insert(all.end(), k.latencies_us.begin(), k.latencies_us.end());
  std::sort(all.begin(), all.end());
  return all;
}

RunResult run_terminals(Backend& backend, const RunSpec& spec, const std::function<void(const std::string&)>& progress,
                        const TxObserver& observer) {
  std::vector<TerminalRun> runs(spec.terminals);
  for (uint32_t i = 0; i < spec.terminals; ++i) runs[i].terminal = backend.terminal(i);
  Shared shared;
  RunResult r;
  bool by_count = spec.transactions_per_terminal != 0;
  double start = now_ns();
  if (by_count) {
    r.before = backend.figures();
    r.driver_cpu_ns = -bench::process_cpu(0).total();
  }
  std::vector<std::thread> threads;
  threads.reserve(spec.terminals);
  for (uint32_t i = 0; i < spec.terminals; ++i) {
    threads.emplace_back(run_one, std::ref(runs[i]), i, std::cref(spec), std::ref(shared), std::cref(observer));
  }
  double end = 0;
  if (by_count) {
    for (std::thread& t : threads) t.join();
    end = now_ns();
    if (shared.error) std::rethrow_exception(shared.error);
    r.after = backend.figures();
    r.driver_cpu_ns += bench::process_cpu(0).total();
  } else {
    try {
      wait_phase(start + spec.warmup_s * 1e9, "warm-up", start, shared, progress);
      start = now_ns();
      r.before = backend.figures();
      r.driver_cpu_ns = -bench::process_cpu(0).total();
      wait_phase(start + spec.seconds * 1e9, "timed", start, shared, progress);
      end = now_ns();
      r.after = backend.figures();
      r.driver_cpu_ns += bench::process_cpu(0).total();
    } catch (...) {
      shared.fail(std::current_exception());
    }
    shared.stop.store(true);
    for (std::thread& t : threads) t.join();
    if (shared.error) std::rethrow_exception(shared.error);
  }
  r.seconds = (end - start) / 1e9;
  collect(runs, start, end, r);
  return r;
}

}  // namespace aup::tpcc

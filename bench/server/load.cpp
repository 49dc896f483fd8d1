#include "bench/server/load.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <stdexcept>
#include <vector>

#include "bench/server/client.h"
#include "bench/common/client_threads.h"
#include "bench/common/measure.h"

namespace aup::bench::server {

namespace {

// Random transfers of 1 between two different accounts: with every
// account funded far beyond what a run can move, each one succeeds.
class Transfers {
 public:
  Transfers(uint64_t seed, uint32_t accounts) : state_(splitmix(seed)), accounts_(accounts) {}
  void append(std::string& out, bool http) {
    uint64_t from = next() % accounts_;
    uint64_t to = (from + 1 + next() % (accounts_ - 1)) % accounts_;  // never `from`
    if (!http) {
      fmt::format_to(std::back_inserter(out),
                     "{{\"event\":\"transfer\",\"args\":{{\"from\":{},\"to\":{},\"amount\":1}}}}\n", from + 1,
                     to + 1);
      return;
    }
    // The same request as HTTP: its args the body.
    args_.clear();
    fmt::format_to(std::back_inserter(args_), "{{\"from\":{},\"to\":{},\"amount\":1}}", from + 1, to + 1);
    fmt::format_to(std::back_inserter(out), "POST /events/transfer HTTP/1.1\r\nHost: b\r\nContent-Length: {}\r\n\r\n{}",
                   args_.size(), args_);
  }

 private:
  static uint64_t splitmix(uint64_t x) {
    x += 0x9e3779b97f4a7c15;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
    x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
    return (x ^ (x >> 31)) | 1;  // xorshift needs a state that is not 0
  }
  uint64_t next() {  // xorshift64*
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545f4914f6cdd1d;
  }
  uint64_t state_;
  uint64_t accounts_;
  std::string args_;
};

struct Answered {
  double at_ns;      // when its read returned
  float latency_us;  // from its send
};

// What one connection saw; written by its thread only, read after join.
struct Tally {
  // A deque: growing it never copies what it holds, so recording a
  // million answers puts no multi-millisecond pause into the latencies.
  std::deque<Answered> answered;
  uint64_t ok = 0, failed = 0;
  std::string first_failure;
  std::string error;  // why the connection failed, if it did
};

// One connection's closed loop until `stop`, then its drain.
void drive(Connection& c, const LoadSpec& spec, uint64_t seed, const std::atomic<bool>& stop, Tally& t) {
  Transfers transfers(seed, spec.accounts);
  std::deque<double> sent;  // send times of the outstanding requests, oldest first
  std::string batch;
  for (;;) {
    bool stopping = stop.load(std::memory_order_relaxed);
    if (stopping && sent.empty()) break;
    if (!stopping && sent.size() < spec.window) {
      batch.clear();
      size_t n = spec.window - sent.size();
      for (size_t i = 0; i < n; ++i) transfers.append(batch, spec.http);
      double at = now_ns(CLOCK_MONOTONIC);
      c.send(batch);
      sent.insert(sent.end(), n, at);
    }
    c.receive([&](std::string_view line) {
      if (sent.empty()) throw std::runtime_error("an answer to no request: " + std::string(line));
      double at = now_ns(CLOCK_MONOTONIC);
      t.answered.push_back(Answered{at, static_cast<float>((at - sent.front()) / 1e3)});
      sent.pop_front();
      if (is_ok(line)) {
        ++t.ok;
      } else if (t.failed++ == 0) {
        t.first_failure = line;
      }
    });
  }
}


void sleep_s(double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }

// The value at fraction `p` of `v` (nearest rank); `v` is reordered.
double percentile(std::vector<float>& v, double p) {
  if (v.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  size_t at = std::min(v.size() - 1, rank == 0 ? 0 : rank - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(at), v.end());
  return v[at];
}

// Adds the tallies to `r`: the answers inside the timed phase and their
// latencies, and every answer's outcome.
void collect(const std::vector<Tally>& tallies, LoadResult& r) {
  std::vector<float> latencies;
  for (const Tally& t : tallies) {
    if (!t.error.empty()) throw std::runtime_error(t.error);
    r.ok_total += t.ok;
    if (t.failed && r.failed_total == 0) r.first_failure = t.first_failure;
    r.failed_total += t.failed;
    for (const Answered& a : t.answered) {
      if (a.at_ns >= r.start_ns && a.at_ns < r.end_ns) latencies.push_back(a.latency_us);
    }
  }
  r.events = latencies.size();
  r.max_us = latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end());
  r.p99_us = percentile(latencies, 0.99);
  r.p50_us = percentile(latencies, 0.50);
}

}  // namespace

LoadResult run_load(const LoadSpec& spec, const ServerProcess& server) {
  if (spec.accounts < 2) throw std::runtime_error("transfers need at least 2 accounts");
  std::vector<Connection> conns;
  for (uint32_t i = 0; i < spec.connections; ++i) {
    if (spec.port) {
      conns.emplace_back(spec.port, spec.http);
    } else {
      conns.emplace_back(spec.socket);
    }
  }
  LoadResult r;
  bench::ClientThreads<Tally> workers(conns.size(), [&conns, &spec](size_t i, std::atomic<bool>& stop, Tally& t) {
    drive(conns[i], spec, spec.seed * 1000003 + i, stop, t);
  });
  sleep_s(spec.warmup_s);
  r.server_before = server.cpu();
  double client_before = bench::own_cpu_ns();
  r.start_ns = now_ns(CLOCK_MONOTONIC);
  sleep_s(spec.seconds);
  r.end_ns = now_ns(CLOCK_MONOTONIC);
  r.server_after = server.cpu();
  r.client_cpu_ns = bench::own_cpu_ns() - client_before;
  workers.join();
  collect(workers.tallies(), r);
  return r;
}

}  // namespace aup::bench::server

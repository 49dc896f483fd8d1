#include "bench/peers/load.h"


#include <atomic>
#include <chrono>
#include <deque>
#include <stdexcept>
#include <vector>

#include "bench/common/client_threads.h"
#include "bench/common/measure.h"
#include "bench/peers/percentile.h"

namespace aup::bench::peers {

namespace {

// Random pairs of distinct accounts (xorshift64*, seeded by splitmix64, as
// bench/server's load does): cheap, so the client's CPU stays small.
class Pairs {
 public:
  Pairs(uint64_t seed, uint32_t accounts) : state_(splitmix(seed)), accounts_(accounts) {}
  // A pair of distinct accounts in 1..accounts.
  std::pair<uint32_t, uint32_t> next() {
    uint64_t from = random() % accounts_;
    uint64_t to = (from + 1 + random() % (accounts_ - 1)) % accounts_;  // never `from`
    return {static_cast<uint32_t>(from + 1), static_cast<uint32_t>(to + 1)};
  }

 private:
  static uint64_t splitmix(uint64_t x) {
    x += 0x9e3779b97f4a7c15;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
    x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
    return (x ^ (x >> 31)) | 1;  // xorshift needs a state that is not 0
  }
  uint64_t random() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545f4914f6cdd1d;
  }
  uint64_t state_;
  uint64_t accounts_;
};

struct Answered {
  double at_ns;      // when its answer was read
  float latency_us;  // from just before it was sent
};

// What one client saw; written by its thread only, read after join.
struct Tally {
  // A deque: growing it never copies what it holds, so recording a
  // million answers puts no long pause into the latencies.
  std::deque<Answered> answered;  // the transfers made
  uint64_t failed = 0;
  std::string first_failure;
  std::string error;  // why the connection failed, if it did
};

void drive(Teller& teller, const LoadSpec& spec, uint64_t seed, const std::atomic<bool>& stop, Tally& t) {
  Pairs pairs(seed, spec.accounts);
  std::string why;
  while (!stop.load(std::memory_order_relaxed)) {
    auto [from, to] = pairs.next();
    double sent = now_ns(CLOCK_MONOTONIC);
    bool ok = teller.transfer(from, to, spec.amount, why);
    double at = now_ns(CLOCK_MONOTONIC);
    if (ok) {
      t.answered.push_back(Answered{at, static_cast<float>((at - sent) / 1e3)});
    } else if (t.failed++ == 0) {
      t.first_failure = why;
    }
  }
}


Counters read_counters(const Peer& peer, const BlockDevice& device) {
  Counters c;
  const Child& server = peer.process();
  c.server_cpu = server.cpu();
  if (const Child* replica = peer.replica()) c.replica_cpu = replica->cpu();
  c.server_write_bytes = server.write_bytes();
  c.device_bytes = device.bytes_written();
  c.client_cpu_ns = aup::bench::own_cpu_ns();
  c.at_ns = now_ns(CLOCK_MONOTONIC);
  return c;
}

void sleep_s(double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }

// The transfers answered inside the timed phase, their latencies, and every
// answer's outcome.
void collect(const std::vector<Tally>& tallies, LoadResult& r) {
  std::vector<float> latencies;
  for (const Tally& t : tallies) {
    if (!t.error.empty()) throw std::runtime_error(t.error);
    r.ok_total += t.answered.size();
    if (t.failed && r.failed_total == 0) r.first_failure = t.first_failure;
    r.failed_total += t.failed;
    for (const Answered& a : t.answered) {
      if (a.at_ns >= r.before.at_ns && a.at_ns < r.after.at_ns) latencies.push_back(a.latency_us);
    }
  }
  r.transfers = latencies.size();
  r.max_us = latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end());
  r.p99_us = percentile(latencies, 0.99);
  r.p50_us = percentile(latencies, 0.50);
}

}  // namespace

LoadResult run_load(const LoadSpec& spec, Peer& peer, const BlockDevice& device) {
  if (spec.accounts < 2) throw std::runtime_error("transfers need at least 2 accounts");
  std::vector<std::unique_ptr<Teller>> tellers = peer.tellers(spec.clients);
  LoadResult r;
  aup::bench::ClientThreads<Tally> clients(tellers.size(),
                                           [&tellers, &spec](size_t i, std::atomic<bool>& stop, Tally& t) {
                                             drive(*tellers[i], spec, spec.seed * 1000003 + i, stop, t);
                                           });
  sleep_s(spec.warmup_s);
  r.before = read_counters(peer, device);
  sleep_s(spec.seconds);
  r.after = read_counters(peer, device);
  clients.join();
  collect(clients.tallies(), r);
  return r;
}

}  // namespace aup::bench::peers

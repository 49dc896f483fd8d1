#include "bench/table/measure.h"

#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>

#include "bench/table/ops.h"

namespace aup::bench::table {

namespace {

// Heap bytes in use (glibc): small chunks plus mmapped ones.
size_t heap_bytes() {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

void require_equal(uint64_t a, uint64_t b, const std::string& what) {
  if (a != b) throw std::runtime_error(fmt::format("{}: aup gave {}, the baseline {}", what, a, b));
}

// Times one pair in this repetition's order and checks the checksums.
void time_pair(OpResult& r, uint32_t rep, double ops, const std::function<uint64_t()>& aup,
               const std::function<uint64_t()>& base) {
  uint64_t ca = 0, cb = 0;
  Elapsed ta, tb;
  if (rep % 2 == 0) {
    ta = elapsed(aup, ca);
    tb = elapsed(base, cb);
  } else {
    tb = elapsed(base, cb);
    ta = elapsed(aup, ca);
  }
  require_equal(ca, cb, r.name);
  r.aup_ns.push_back(ta.cpu_ns / ops);
  r.base_ns.push_back(tb.cpu_ns / ops);
  r.aup_wall_ns.push_back(ta.wall_ns / ops);
  r.base_wall_ns.push_back(tb.wall_ns / ops);
}

OpResult op(std::string name, std::string aup, std::string baseline) {
  return OpResult{std::move(name), std::move(aup), std::move(baseline), {}, {}, {}, {}};
}

// Inserting every key into fresh structures, in the given order; the
// structures are destroyed outside the timed part.
OpResult measure_inserts(const Options& o, const std::vector<double>& order, std::string name,
                         SizeResult* bytes) {
  OpResult r = op(std::move(name), "BTree::insert", "std::map::emplace");
  double n = static_cast<double>(order.size());
  for (uint32_t rep = 0; rep < o.reps; ++rep) {
    auto tree = std::make_unique<vm::BTree>(row_layout());
    auto map = std::make_unique<MapTable>();
    size_t tree_bytes = 0;
    size_t map_bytes = 0;
    time_pair(
        r, rep, n,
        [&] {
          size_t h = heap_bytes();
          uint64_t c = insert_tree(*tree, order);
          tree_bytes = heap_bytes() - h;
          return c;
        },
        [&] {
          size_t h = heap_bytes();
          uint64_t c = insert_map(*map, order);
          map_bytes = heap_bytes() - h;
          return c;
        });
    if (bytes && rep == 0) {
      bytes->aup_bytes_per_row = static_cast<double>(tree_bytes) / n;
      bytes->map_bytes_per_row = static_cast<double>(map_bytes) / n;
      bytes->depth = tree_depth(*tree);
      bytes->leaf_capacity = tree->leaf_capacity();
    }
  }
  return r;
}

// Follows a random cycle through `next` (one link per 64-byte line) for
// `steps` loads, each depending on the one before.
uint64_t chase(const std::vector<uint64_t>& next, size_t steps) {
  uint64_t p = 0;
  for (size_t i = 0; i < steps; ++i) p = next[p];
  return p + 1;
}

// The machine's latency for one dependent load in a buffer of `bytes`.
std::vector<double> measure_load_latency(const Options& o, size_t bytes, std::mt19937_64& rng) {
  constexpr size_t kWordsPerLine = 64 / sizeof(uint64_t);
  size_t lines = std::max<size_t>(bytes / 64, 2);
  std::vector<uint64_t> order(lines);
  std::iota(order.begin(), order.end(), uint64_t{0});
  std::shuffle(order.begin() + 1, order.end(), rng);
  std::vector<uint64_t> next(lines * kWordsPerLine);
  for (size_t i = 0; i < lines; ++i) next[order[i] * kWordsPerLine] = order[(i + 1) % lines] * kWordsPerLine;
  size_t steps = o.probes;
  std::vector<double> ns;
  for (uint32_t rep = 0; rep < o.reps; ++rep) {
    uint64_t end = 0;
    Elapsed e = elapsed([&] { return chase(next, steps); }, end);
    if (end == 0) throw std::runtime_error("the chase ended nowhere");
    ns.push_back(e.cpu_ns / static_cast<double>(steps));
  }
  return ns;
}

// A seek by a composite key (w, d, o, n) against a seek by the same rows'
// folded number key, in two trees of the same size built alike.
OpResult measure_composite(const Options& o, const std::vector<double>& order, const std::vector<double>& probes) {
  OpResult r = op("find_composite", "BTree::find, key (w, d, o, n) encoded per probe",
                  "BTree::find, the folded number key");
  vm::BTree composite(composite_layout());
  vm::BTree folded(row_layout());
  require_equal(insert_composite(composite, order), insert_tree(folded, order), "composite build");
  std::vector<CompositeProbe> fields = composite_probes(probes);
  double ops = static_cast<double>(probes.size());
  for (uint32_t rep = 0; rep < o.reps; ++rep) {
    time_pair(r, rep, ops, [&] { return find_composite(composite, fields); },
              [&] { return find_tree(folded, probes); });
  }
  return r;
}

}  // namespace

SizeResult measure_size(size_t rows, const Options& o) {
  SizeResult res;
  res.rows = rows;
  std::mt19937_64 rng(o.seed + rows);
  std::vector<double> sorted(rows);
  for (size_t i = 0; i < rows; ++i) sorted[i] = static_cast<double>(i + 1);
  std::vector<double> shuffled = sorted;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  std::vector<double> probes(o.probes);
  std::uniform_int_distribution<size_t> pick(0, rows - 1);
  for (double& p : probes) p = sorted[pick(rng)];
  double ops = static_cast<double>(probes.size());

  res.ops.push_back(measure_inserts(o, shuffled, "insert_random", &res));
  res.ops.push_back(measure_inserts(o, sorted, "insert_ascending", nullptr));
  res.load_latency_ns =
      measure_load_latency(o, static_cast<size_t>(res.aup_bytes_per_row * static_cast<double>(rows)), rng);

  // One tree and one map for the operations below, built in the same
  // random order; both stay alive while either side is timed.
  vm::BTree tree(row_layout());
  MapTable map;
  require_equal(insert_tree(tree, shuffled), insert_map(map, shuffled), "build");

  OpResult find = op("find", "BTree::find(num_key(k))", "std::map::find");
  OpResult set = op("set", "BTree::find_mut + store a field, no snapshot", "std::map::find + store");
  OpResult set_snap = op("set_snapshot",
                         "share(), then BTree::find_mut + store for the whole batch, then drop_root",
                         "std::map::find + store");
  OpResult set_fresh = op("set_fresh_snapshot", "per write: share(), find_mut + store, drop_root",
                          "std::map::find + store");
  OpResult rank = op("rank", "BTree::rank(num_key(k))", "std::lower_bound on a sorted vector<double>");
  uint64_t stamp = 1;
  for (uint32_t rep = 0; rep < o.reps; ++rep) {
    time_pair(find, rep, ops, [&] { return find_tree(tree, probes); },
              [&] { return find_map(map, probes); });
    time_pair(set, rep, ops, [&] { return set_tree(tree, probes, stamp); },
              [&] { return set_map(map, probes, stamp); });
    stamp += probes.size();
    time_pair(set_snap, rep, ops, [&] { return set_tree_one_snapshot(tree, probes, stamp); },
              [&] { return set_map(map, probes, stamp); });
    stamp += probes.size();
    time_pair(set_fresh, rep, ops, [&] { return set_tree_fresh_snapshots(tree, probes, stamp); },
              [&] { return set_map(map, probes, stamp); });
    stamp += probes.size();
    time_pair(rank, rep, ops, [&] { return rank_tree(tree, probes); },
              [&] { return rank_sorted(sorted, probes); });
  }
  // Every write landed on both sides alike.
  require_equal(find_tree(tree, probes), find_map(map, probes), "find after the writes");
  require_equal(tree.size(), map.size(), "size");
  for (OpResult* r : {&find, &set, &set_snap, &set_fresh, &rank}) res.ops.push_back(std::move(*r));
  res.ops.push_back(measure_composite(o, shuffled, probes));
  return res;
}

double ratio_median(const OpResult& r) { return bench::ratio_median(r.aup_ns, r.base_ns); }

}  // namespace aup::bench::table

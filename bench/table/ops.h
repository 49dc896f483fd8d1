// The timed operations of the table benchmark. Each runs one batch on
// aup's B+tree or on its baseline and returns a checksum, so the two sides
// can be checked against each other and the compiler cannot drop the work.
//
// Rows are kSlots 8-byte slots, slot 0 holding the key (as aup keeps a
// table's key field in the row), as in aup::vm::RowLayout. The baseline is
// std::map<double, Row>; for `rank`, which std::map can only answer by
// walking (O(n)), it is std::lower_bound on a sorted std::vector<double>,
// the cheapest way to find a key's position.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "vm/btree.h"

namespace aup::bench::table {

inline constexpr uint32_t kSlots = 4;
using Row = std::array<uint64_t, kSlots>;
using MapTable = std::map<double, Row>;

Row make_row(double key);
vm::RowLayout row_layout();

// Inserts every key in the order given; returns rows inserted.
uint64_t insert_tree(vm::BTree& t, const std::vector<double>& keys);
uint64_t insert_map(MapTable& m, const std::vector<double>& keys);

// Finds each probe (all present) and sums slot 1 of the rows found.
uint64_t find_tree(const vm::BTree& t, const std::vector<double>& probes);
uint64_t find_map(const MapTable& m, const std::vector<double>& probes);

// Sets slot 1 of each probe's row to stamp + i; returns rows set.
uint64_t set_tree(vm::BTree& t, const std::vector<double>& probes, uint64_t stamp);
uint64_t set_map(MapTable& m, const std::vector<double>& probes, uint64_t stamp);
// The same under one snapshot: share(), every write, then drop_root(). The
// first write through a shared node copies it; later ones find it private.
uint64_t set_tree_one_snapshot(vm::BTree& t, const std::vector<double>& probes, uint64_t stamp);
// Each write under its own fresh snapshot (share, write, drop): every write
// copies its whole path, as the first write after each published snapshot.
uint64_t set_tree_fresh_snapshots(vm::BTree& t, const std::vector<double>& probes, uint64_t stamp);

// Sums the rank (rows with smaller keys) of each probe.
uint64_t rank_tree(const vm::BTree& t, const std::vector<double>& probes);
uint64_t rank_sorted(const std::vector<double>& sorted, const std::vector<double>& probes);

// The same rows keyed the way TPC-C's order lines are: the composite key
// (w, d, o, n) (vm/key.h), row i's fields from i as its folded number
// (n = i mod 15, o = i / 15 mod 3000, d = i / 45000 mod 10, w from 1). The
// tree's layout says the key is composite, so it keeps its key texts.
vm::RowLayout composite_layout();
uint64_t insert_composite(vm::BTree& t, const std::vector<double>& keys);
// The probes' key fields, split from their folded numbers before the
// timing (an event has the fields in registers already, as the folded side
// has its number).
using CompositeProbe = std::array<uint64_t, 4>;
std::vector<CompositeProbe> composite_probes(const std::vector<double>& probes);
// Finds each probe by its composite key, encoded per probe as the KEY
// instruction does (into a buffer here, the event's arena there).
uint64_t find_composite(const vm::BTree& t, const std::vector<CompositeProbe>& probes);

// Levels from the root to the leaves (1 for a lone leaf, 0 when empty).
uint32_t tree_depth(const vm::BTree& t);

}  // namespace aup::bench::table

#include "bench/table/ops.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <string>

#include "vm/key.h"
#include "vm/text.h"

namespace aup::bench::table {

Row make_row(double key) {
  uint64_t bits = std::bit_cast<uint64_t>(key);
  Row r{};
  r[0] = bits;
  for (uint32_t s = 1; s < kSlots; ++s) r[s] = bits * 31 + s;
  return r;
}

vm::RowLayout row_layout() { return vm::RowLayout{kSlots, {}, vm::KeySpec{{0}, 0}}; }

uint64_t insert_tree(vm::BTree& t, const std::vector<double>& keys) {
  uint64_t n = 0;
  for (double k : keys) {
    Row r = make_row(k);
    n += t.insert(vm::num_key(k), r.data()) ? 1 : 0;
  }
  return n;
}

namespace {

std::array<uint64_t, 4> composite_parts(double folded) {
  auto i = static_cast<uint64_t>(folded);
  double parts[4] = {static_cast<double>(i / 450000 + 1), static_cast<double>(i / 45000 % 10),
                     static_cast<double>(i / 15 % 3000), static_cast<double>(i % 15)};
  std::array<uint64_t, 4> out;
  for (int p = 0; p < 4; ++p) out[p] = std::bit_cast<uint64_t>(parts[p]);
  return out;
}

constexpr uint32_t kCompositeBytes = 4 * 17;  // four numbers, at most

}  // namespace

vm::RowLayout composite_layout() { return vm::RowLayout{kSlots, {}, vm::KeySpec{{0, 1, 2, 3}, 0}}; }

uint64_t insert_composite(vm::BTree& t, const std::vector<double>& keys) {
  uint64_t n = 0;
  std::string bytes;
  for (double k : keys) {
    std::array<uint64_t, 4> parts = composite_parts(k);
    bytes.resize(vm::key_bytes(parts.data(), 4, 0));
    vm::encode_key(parts.data(), 4, 0, bytes.data());
    vm::TextObj* text = vm::heap_text(bytes);
    Row r = make_row(k);
    n += t.insert(vm::text_key(text), r.data()) ? 1 : 0;
    vm::release(text);  // the tree holds its own reference
  }
  return n;
}

std::vector<CompositeProbe> composite_probes(const std::vector<double>& probes) {
  std::vector<CompositeProbe> out;
  out.reserve(probes.size());
  for (double k : probes) out.push_back(composite_parts(k));
  return out;
}

uint64_t find_composite(const vm::BTree& t, const std::vector<CompositeProbe>& probes) {
  alignas(vm::TextObj) char buffer[offsetof(vm::TextObj, bytes) + kCompositeBytes + 1];
  auto* key = reinterpret_cast<vm::TextObj*>(buffer);
  key->refs = 1;
  key->len = kCompositeBytes;
  key->in_arena = true;
  uint64_t sum = 0;
  for (const CompositeProbe& parts : probes) {
    key->len = static_cast<uint32_t>(vm::encode_key(parts.data(), 4, 0, key->bytes));
    const uint64_t* row = t.find(vm::text_key(key));
    sum += row ? row[1] : 0;
  }
  return sum;
}

uint64_t insert_map(MapTable& m, const std::vector<double>& keys) {
  uint64_t n = 0;
  for (double k : keys) n += m.emplace(k, make_row(k)).second ? 1 : 0;
  return n;
}

uint64_t find_tree(const vm::BTree& t, const std::vector<double>& probes) {
  uint64_t sum = 0;
  for (double k : probes) {
    const uint64_t* row = t.find(vm::num_key(k));
    sum += row ? row[1] : 0;
  }
  return sum;
}

uint64_t find_map(const MapTable& m, const std::vector<double>& probes) {
  uint64_t sum = 0;
  for (double k : probes) {
    auto it = m.find(k);
    sum += it != m.end() ? it->second[1] : 0;
  }
  return sum;
}

uint64_t set_tree(vm::BTree& t, const std::vector<double>& probes, uint64_t stamp) {
  uint64_t n = 0;
  for (double k : probes) {
    uint64_t* row = t.find_mut(vm::num_key(k));
    if (row) row[1] = stamp + n++;
  }
  return n;
}

uint64_t set_map(MapTable& m, const std::vector<double>& probes, uint64_t stamp) {
  uint64_t n = 0;
  for (double k : probes) {
    auto it = m.find(k);
    if (it != m.end()) it->second[1] = stamp + n++;
  }
  return n;
}

uint64_t set_tree_one_snapshot(vm::BTree& t, const std::vector<double>& probes, uint64_t stamp) {
  vm::Node* snapshot = t.share();
  uint64_t n = set_tree(t, probes, stamp);
  t.drop_root(snapshot);
  return n;
}

uint64_t set_tree_fresh_snapshots(vm::BTree& t, const std::vector<double>& probes, uint64_t stamp) {
  uint64_t n = 0;
  for (double k : probes) {
    vm::Node* snapshot = t.share();
    uint64_t* row = t.find_mut(vm::num_key(k));
    if (row) row[1] = stamp + n++;
    t.drop_root(snapshot);
  }
  return n;
}

uint64_t rank_tree(const vm::BTree& t, const std::vector<double>& probes) {
  uint64_t sum = 0;
  for (double k : probes) sum += t.rank(vm::num_key(k));
  return sum;
}

uint64_t rank_sorted(const std::vector<double>& sorted, const std::vector<double>& probes) {
  uint64_t sum = 0;
  for (double k : probes) {
    sum += static_cast<uint64_t>(std::lower_bound(sorted.begin(), sorted.end(), k) - sorted.begin());
  }
  return sum;
}

uint32_t tree_depth(const vm::BTree& t) {
  const vm::Node* n = t.root();
  uint32_t depth = 0;
  while (n) {
    ++depth;
    if (n->leaf) break;
    n = static_cast<const vm::Inner*>(n)->kids[0];
  }
  return depth;
}

}  // namespace aup::bench::table

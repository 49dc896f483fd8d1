// The B+tree against std::map: random inserts, erases and seeks, positions
// and range counts, iteration, snapshots, text keys; 1 to 1M rows.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "vm/btree.h"

namespace aup::vm {
namespace {

// Rows of two slots: the key (as a double) and a payload.
RowLayout two_slots() { return RowLayout{2, {}, KeySpec{{0}, 0}}; }

void check_against(const BTree& t, const std::map<double, double>& m) {
  REQUIRE(t.size() == m.size());
  // Iteration in order.
  BTree::Cursor c;
  c.seek(t, nullptr);
  auto it = m.begin();
  for (; it != m.end(); ++it) {
    REQUIRE(c.valid());
    REQUIRE(order_num(c.key().ord) == it->first);
    REQUIRE(t.row_at(c.pos())[1] == std::bit_cast<uint64_t>(it->second));
    c.next(t);
  }
  CHECK_FALSE(c.valid());
}

// ---- bulk builds: the tree's nodes read as its users would not ----

// Rows under `n` in key order (their first slots' bits).
std::vector<uint64_t> slots_under(const BTree& t, const Node* n) {
  std::vector<uint64_t> out;
  t.for_each(n, [&](const Key&, const uint64_t* row) { out.push_back(row[1]); });
  return out;
}

Key first_key(const BTree& t, const Node* n) {
  Key k;
  bool seen = false;
  t.for_each(n, [&](const Key& key, const uint64_t*) {
    if (!seen) k = key;
    seen = true;
  });
  return k;
}

// The invariants insert and erase keep, checked under `n` at `depth`: every
// leaf at one depth, within its capacity and not empty, each inner node's
// counts its children's, each separator its child's first key, unshared.
void check_node(const BTree& t, const Node* n, uint32_t depth, uint32_t& leaf_depth) {
  REQUIRE(n->refs == 1);
  REQUIRE(n->count > 0);
  if (n->leaf) {
    REQUIRE(n->count <= t.leaf_capacity());
    if (leaf_depth == UINT32_MAX) leaf_depth = depth;
    REQUIRE(depth == leaf_depth);
    return;
  }
  const Inner* in = static_cast<const Inner*>(n);
  REQUIRE(in->count <= kInnerFan);
  uint64_t rows = 0;
  for (uint32_t i = 0; i < in->count; ++i) {
    rows += BTree::rows_under(in->kids[i]);
    REQUIRE(in->cum[i] == rows);
    if (i > 0) REQUIRE(key_cmp(in->keys[i], first_key(t, in->kids[i])) == 0);
    check_node(t, in->kids[i], depth + 1, leaf_depth);
  }
}

void check_invariants(const BTree& t, size_t n) {
  REQUIRE(t.size() == n);
  REQUIRE(BTree::rows_under(t.root()) == n);
  if (n == 0) {
    CHECK(t.root() == nullptr);
    return;
  }
  uint32_t leaf_depth = UINT32_MAX;
  check_node(t, t.root(), 0, leaf_depth);
  // Every key found, ranked and reached by position.
  for (size_t i = 0; i < n; i += 1 + n / 500) {
    Key k = num_key(static_cast<double>(2 * i));
    REQUIRE(t.find(k) != nullptr);
    REQUIRE(t.rank(k) == i);
    Key at;
    REQUIRE(t.at(i, &at) != nullptr);
    REQUIRE(key_cmp(at, k) == 0);
  }
}

// Two trees of the same nodes: shape, counts, separators and rows.
void check_same_nodes(const BTree& a, const Node* x, const BTree& b, const Node* y) {
  REQUIRE(x->leaf == y->leaf);
  REQUIRE(x->count == y->count);
  if (x->leaf) {
    REQUIRE(slots_under(a, x) == slots_under(b, y));
    return;
  }
  const Inner* p = static_cast<const Inner*>(x);
  const Inner* q = static_cast<const Inner*>(y);
  for (uint32_t i = 0; i < p->count; ++i) {
    REQUIRE(p->cum[i] == q->cum[i]);
    REQUIRE(key_cmp(p->keys[i], q->keys[i]) == 0);
    check_same_nodes(a, p->kids[i], b, q->kids[i]);
  }
}

// Rows of keys 0, 2, 4, ...: slot 1 says which.
void row_of(size_t i, uint64_t (&row)[2]) {
  row[0] = std::bit_cast<uint64_t>(static_cast<double>(2 * i));
  row[1] = i * 7 + 1;
}

TEST_SUITE("btree") {
  TEST_CASE("empty tree") {
    BTree t(two_slots());
    CHECK(t.size() == 0);
    CHECK(t.find(num_key(1)) == nullptr);
    CHECK(t.rank(num_key(1)) == 0);
    CHECK(t.at(0) == nullptr);
    uint64_t out[2];
    CHECK_FALSE(t.erase(num_key(1), out));
    BTree::Cursor c;
    c.seek(t, nullptr);
    CHECK_FALSE(c.valid());
  }

  TEST_CASE("-0 and 0 are one key; order is numeric") {
    BTree t(two_slots());
    uint64_t row[2] = {0, 7};
    CHECK(t.insert(num_key(0.0), row));
    CHECK_FALSE(t.insert(num_key(-0.0), row));
    double keys[] = {-1e300, -2.5, -5e-324, 5e-324, 1, 1e21, INFINITY, -INFINITY};
    for (double k : keys) CHECK(t.insert(num_key(k), row));
    BTree::Cursor c;
    c.seek(t, nullptr);
    double last = -INFINITY;
    size_t n = 0;
    for (; c.valid(); c.next(t), ++n) {
      double k = order_num(c.key().ord);
      CHECK(k >= last);
      last = k;
    }
    CHECK(n == 9);
  }

  TEST_CASE("random operations against std::map") {
    for (uint64_t seed : {1u, 2u, 3u, 4u}) {
      CAPTURE(seed);
      std::mt19937_64 rng(seed);
      BTree t(two_slots());
      std::map<double, double> m;
      const int kKeySpace = seed % 2 ? 500 : 20000;
      for (int step = 0; step < 40000; ++step) {
        double k = static_cast<double>(rng() % kKeySpace);
        double v = static_cast<double>(rng() % 1000);
        uint64_t row[2] = {std::bit_cast<uint64_t>(k), std::bit_cast<uint64_t>(v)};
        switch (rng() % 4) {
          case 0:
          case 1: {
            bool fresh = m.emplace(k, v).second;
            REQUIRE(t.insert(num_key(k), row) == fresh);
            break;
          }
          case 2: {
            uint64_t out[2];
            bool had = m.erase(k) > 0;
            REQUIRE(t.erase(num_key(k), out) == had);
            if (had) CHECK(out[0] == row[0]);
            break;
          }
          default: {
            auto it = m.find(k);
            const uint64_t* r = t.find(num_key(k));
            REQUIRE((r != nullptr) == (it != m.end()));
            if (r) CHECK(r[1] == std::bit_cast<uint64_t>(it->second));
            // rank = rows with smaller keys
            size_t rank = static_cast<size_t>(std::distance(m.begin(), m.lower_bound(k)));
            REQUIRE(t.rank(num_key(k)) == rank);
            if (rank < m.size()) {
              Key key;
              const uint64_t* at = t.at(rank, &key);
              REQUIRE(at);
              CHECK(order_num(key.ord) == m.lower_bound(k)->first);
            }
          }
        }
        if (step % 5000 == 0) check_against(t, m);
      }
      check_against(t, m);
    }
  }

  TEST_CASE("ascending and descending bulk inserts, then erase everything") {
    for (bool ascending : {true, false}) {
      BTree t(two_slots());
      const int n = 100000;
      for (int i = 0; i < n; ++i) {
        double k = ascending ? i : n - i;
        uint64_t row[2] = {std::bit_cast<uint64_t>(k), 0};
        REQUIRE(t.insert(num_key(k), row));
      }
      CHECK(t.size() == static_cast<size_t>(n));
      for (int i = 0; i < n; i += 997) CHECK(t.rank(num_key(ascending ? i : n - i)) == static_cast<size_t>(ascending ? i : n - i - 1));
      uint64_t out[2];
      for (int i = 0; i < n; ++i) REQUIRE(t.erase(num_key(ascending ? i : n - i), out));
      CHECK(t.size() == 0);
      CHECK(t.root() == nullptr);
    }
  }

  TEST_CASE("appending fills leaves") {
    BTree t(two_slots());
    const int n = 10000;
    for (int i = 0; i < n; ++i) {
      uint64_t row[2] = {0, 0};
      t.insert(num_key(i), row);
    }
    size_t leaf_bytes = t.node_bytes();
    // Appends keep leaves full: node memory within 10% of the rows' need
    // (a number key takes its 8-byte order image).
    size_t per_row = sizeof(uint64_t) + 2 * sizeof(uint64_t);
    CHECK(leaf_bytes < n * per_row * 11 / 10 + 4096);
  }

  TEST_CASE("ascending runs inside the tree fill their leaves, as appends do; random inserts still halve") {
    // Ten runs side by side (TPC-C's districts, each taking its next
    // orders): keys d * 1e6 + i, inserted district by district in turn.
    // Splitting in half would leave each run's leaves behind half full.
    BTree t(two_slots());
    const int runs = 10, per_run = 5000;
    for (int i = 0; i < per_run; ++i) {
      for (int d = 0; d < runs; ++d) {
        double k = d * 1e6 + i;
        uint64_t row[2] = {std::bit_cast<uint64_t>(k), 0};
        REQUIRE(t.insert(num_key(k), row));
      }
    }
    BTree::Memory m = t.memory_under(t.root());
    CHECK(m.rows == static_cast<uint64_t>(runs * per_run));
    CHECK(m.fill(t.leaf_capacity()) > 0.95);
    // Random keys: the halving splits keep leaves between half and full.
    BTree r(two_slots());
    std::mt19937_64 rng(3);
    std::map<double, double> want;
    for (int i = 0; i < 50000; ++i) {
      double k = static_cast<double>(rng() % 1000000);
      uint64_t row[2] = {std::bit_cast<uint64_t>(k), std::bit_cast<uint64_t>(k + 1)};
      if (r.insert(num_key(k), row)) want.emplace(k, k + 1);
    }
    check_against(r, want);
    double fill = r.memory_under(r.root()).fill(r.leaf_capacity());
    CHECK(fill > 0.6);
    CHECK(fill < 0.8);
  }

  TEST_CASE("memory_under: rows, the leaves' room, inner nodes and texts, each once") {
    RowLayout layout{2, {1}, KeySpec{{0}, 0}};  // a num key, a text field
    BTree t(layout);
    CHECK(t.memory_under(t.root()).node_bytes() == 0);
    const int n = 20000;
    uint64_t text_chunks = 0;
    for (int i = 0; i < n; ++i) {
      TextObj* text = heap_text(std::string(static_cast<size_t>(i % 50), 'x'));
      text_chunks += text_heap_bytes(text);
      uint64_t row[2] = {std::bit_cast<uint64_t>(static_cast<double>(i)), reinterpret_cast<uint64_t>(text)};
      REQUIRE(t.insert(num_key(i), row));
    }
    BTree::Memory m = t.memory_under(t.root());
    CHECK(m.rows == static_cast<uint64_t>(n));
    CHECK(m.row_bytes == n * (sizeof(uint64_t) + 2 * sizeof(uint64_t)));  // an 8-byte number key
    CHECK(m.inners > 0);
    CHECK(m.inner_bytes == m.inners * sizeof(Inner));
    CHECK(m.node_bytes() == t.node_bytes());  // no snapshot, no spare: every node walked
    CHECK(m.key_text_bytes == 0);             // num keys
    CHECK(m.text_bytes == text_chunks);
    // A chunk holds the text, its header and malloc's size word.
    CHECK(text_chunks >= n * (sizeof(size_t) + 10));
    // A snapshot shares the nodes: walking it sees the same. Once a change
    // copies a leaf, that leaf's texts have two holders and count half in each.
    Node* snap = t.share();
    CHECK(t.memory_under(snap).node_bytes() == m.node_bytes());
    uint64_t row[2];
    REQUIRE(t.erase(num_key(0), row));
    release(reinterpret_cast<TextObj*>(row[1]));
    BTree::Memory live = t.memory_under(t.root());
    CHECK(live.rows == static_cast<uint64_t>(n - 1));
    CHECK(t.node_bytes() > live.node_bytes());  // the copies beside the snapshot's nodes
    // The erased text went, and half of each text of the one leaf copied
    // (texts of at most 49 bytes: chunks of at most 80).
    CHECK(live.text_bytes < m.text_bytes);
    CHECK(m.text_bytes - live.text_bytes < t.leaf_capacity() * 80);
    t.drop_root(snap);
  }

  TEST_CASE("a leaf keeps a number key as its 8-byte order image, a text or composite key whole") {
    // Leaves are sized near 2 KiB: a row of two slots takes 24 bytes with a
    // number key, 32 with a text key, so a number-keyed leaf holds a third more.
    BTree nums(two_slots());
    BTree texts(RowLayout{2, {}, KeySpec{{0}, 1}});
    BTree composite(RowLayout{2, {}, KeySpec{{0, 1}, 0}});
    CHECK(nums.leaf_capacity() == (2048 - sizeof(Node)) / 24);
    CHECK(texts.leaf_capacity() == (2048 - sizeof(Node)) / 32);
    CHECK(composite.leaf_capacity() == texts.leaf_capacity());
    // Every leaf operation on the narrower keys: inserts that split, erases
    // that empty leaves, positions, a cursor across leaves and keys read back.
    std::map<double, double> want;
    std::mt19937_64 rng(11);
    for (int i = 0; i < 20000; ++i) {
      double k = static_cast<double>(rng() % 30000) - 15000;
      uint64_t row[2] = {std::bit_cast<uint64_t>(k), std::bit_cast<uint64_t>(-k)};
      if (nums.insert(num_key(k), row)) want.emplace(k, -k);
    }
    for (int i = 0; i < 8000; ++i) {
      double k = static_cast<double>(rng() % 30000) - 15000;
      uint64_t row[2];
      if (nums.erase(num_key(k), row)) {
        CHECK(std::bit_cast<double>(row[0]) == k);
        want.erase(k);
      }
    }
    check_against(nums, want);
    size_t i = 0;
    for (auto [k, v] : want) {
      Key at;
      BTree::Pos pos;
      const uint64_t* row = nums.at(i, &at, &pos);
      REQUIRE(row);
      CHECK(at.ord == num_order(k));
      CHECK(at.text == nullptr);
      CHECK(nums.key_at(pos).ord == at.ord);
      CHECK(std::bit_cast<double>(row[1]) == v);
      CHECK(nums.rank(num_key(k)) == i);
      ++i;
    }
  }

  TEST_CASE("positions and range counts at 1 to 1M rows") {
    for (size_t n : {1u, 2u, 31u, 1000u, 30000u, 1000000u}) {
      CAPTURE(n);
      BTree t(two_slots());
      std::mt19937_64 rng(n);
      std::vector<double> keys(n);
      for (size_t i = 0; i < n; ++i) keys[i] = static_cast<double>(i * 2);  // even keys
      std::shuffle(keys.begin(), keys.end(), rng);
      for (double k : keys) {
        uint64_t row[2] = {std::bit_cast<uint64_t>(k), 0};
        REQUIRE(t.insert(num_key(k), row));
      }
      REQUIRE(t.size() == n);
      for (int probe = 0; probe < 2000; ++probe) {
        size_t a = rng() % (2 * n + 2), b = rng() % (2 * n + 2);
        if (a > b) std::swap(a, b);
        // rows in [a, b): the even numbers below 2n in range
        auto evens_below = [&](size_t x) { return (std::min(x, 2 * n) + 1) / 2; };
        size_t want = evens_below(b) - evens_below(a);
        REQUIRE(t.rank(num_key(static_cast<double>(b))) - t.rank(num_key(static_cast<double>(a))) == want);
        size_t pos = rng() % n;
        Key key;
        REQUIRE(t.at(pos, &key));
        CHECK(order_num(key.ord) == static_cast<double>(pos * 2));
      }
      CHECK(t.at(n) == nullptr);
    }
  }

  TEST_CASE("a snapshot keeps its rows while the tree changes") {
    BTree t(two_slots());
    std::map<double, double> m;
    for (int i = 0; i < 5000; ++i) {
      uint64_t row[2] = {std::bit_cast<uint64_t>(double(i)), std::bit_cast<uint64_t>(double(i))};
      t.insert(num_key(i), row);
      m[i] = i;
    }
    Node* snap = t.share();
    std::mt19937_64 rng(9);
    for (int step = 0; step < 20000; ++step) {
      double k = static_cast<double>(rng() % 8000);
      uint64_t out[2];
      switch (rng() % 3) {
        case 0: {
          uint64_t row[2] = {std::bit_cast<uint64_t>(k), std::bit_cast<uint64_t>(-1.0)};
          t.insert(num_key(k), row);
          break;
        }
        case 1: t.erase(num_key(k), out); break;
        default:
          if (uint64_t* r = t.find_mut(num_key(k))) r[1] = std::bit_cast<uint64_t>(-2.0);
      }
    }
    // The snapshot reads exactly what it had.
    CHECK(BTree::rows_under(snap) == m.size());
    BTree::Cursor c;
    c.seek_in(t, snap, nullptr);
    for (auto& [k, v] : m) {
      REQUIRE(c.valid());
      REQUIRE(order_num(c.key().ord) == k);
      REQUIRE(t.row_at(c.pos())[1] == std::bit_cast<uint64_t>(v));
      c.next(t);
    }
    CHECK_FALSE(c.valid());
    for (int i = 0; i < 5000; i += 37) {
      const uint64_t* r = t.find_in(snap, num_key(i));
      REQUIRE(r);
      CHECK(r[1] == std::bit_cast<uint64_t>(double(i)));
    }
    t.drop_root(snap);
  }

  // The batch encoder reads a changed row where its change left it while
  // the node epoch is the same (storage/records.h): that must be the row
  // find() gives, or nothing, through splits, frees, copies and shares.
  TEST_CASE("a leaf found at one node epoch holds a key's live row, or none, while the epoch stays") {
    BTree t(two_slots());
    struct Noted {
      BTree::Pos at;
      uint64_t epoch;
    };
    std::map<double, Noted> noted;
    std::vector<Node*> snapshots;
    std::mt19937_64 rng(11);
    uint64_t checked = 0, held = 0, moved = 0;
    for (int step = 0; step < 30000; ++step) {
      double k = static_cast<double>(rng() % 4000);
      uint64_t out[2];
      uint64_t r = rng() % 100;
      if (r < 50) {
        uint64_t row[2] = {std::bit_cast<uint64_t>(k), std::bit_cast<uint64_t>(double(step))};
        BTree::Pos at;
        uint64_t before = t.node_epoch();
        if (t.insert(num_key(k), row, &at)) {
          REQUIRE(t.row_at(at) == t.find(num_key(k)));
          // A split alone takes no node out of the tree.
          if (snapshots.empty()) CHECK(t.node_epoch() == before);
          noted[k] = Noted{at, t.node_epoch()};
        }
      } else if (r < 80) {
        t.erase(num_key(k), out);
      } else if (r < 97) {
        BTree::Pos at;
        if (uint64_t* row = t.find_mut(num_key(k), &at)) {
          row[1] = std::bit_cast<uint64_t>(-double(step));
          noted[k] = Noted{at, t.node_epoch()};
        }
      } else if (snapshots.size() < 3) {
        snapshots.push_back(t.share());
      } else {
        t.drop_root(snapshots.front());
        snapshots.erase(snapshots.begin());
      }
      if (step % 13 != 0) continue;
      for (auto& [key, n] : noted) {
        if (n.epoch != t.node_epoch()) continue;
        ++checked;
        const uint64_t* in_leaf = t.find_in_leaf(n.at, num_key(key));
        const uint64_t* found = t.find(num_key(key));
        if (in_leaf) ++held;
        if (!in_leaf && found) ++moved;
        REQUIRE((in_leaf == nullptr || in_leaf == found));
      }
    }
    for (Node* snap : snapshots) t.drop_root(snap);
    CHECK(checked > 2000);
    CHECK(held > 2000);
    CHECK(moved > 0);  // rows a split moved to another leaf: not found there, found by find()
  }

  TEST_CASE("a position knows whether its path is private: in place writes never reach a snapshot") {
    BTree t(two_slots());
    for (int i = 0; i < 5000; ++i) {
      uint64_t row[2] = {std::bit_cast<uint64_t>(double(i)), std::bit_cast<uint64_t>(double(i))};
      t.insert(num_key(i), row);
    }
    BTree::Pos pos;
    REQUIRE(t.find(num_key(10), &pos));
    CHECK(pos.private_path);
    Node* snap = t.share();
    // Every node is shared now: found again, nothing may be written in place.
    REQUIRE(t.find(num_key(10), &pos));
    CHECK_FALSE(pos.private_path);
    REQUIRE(t.find_in(snap, num_key(10), &pos));
    CHECK_FALSE(pos.private_path);
    // find_mut copies the path; then that row's path is private, and a
    // row under a node still shared is not.
    uint64_t* r = t.find_mut(num_key(10), &pos);
    REQUIRE(r);
    CHECK(pos.private_path);
    r[1] = std::bit_cast<uint64_t>(-1.0);
    REQUIRE(t.find(num_key(10), &pos));
    CHECK(pos.private_path);
    REQUIRE(t.find(num_key(4990), &pos));
    CHECK_FALSE(pos.private_path);
    // The snapshot kept its value; a view of it never calls a path private.
    CHECK(t.find_in(snap, num_key(10))[1] == std::bit_cast<uint64_t>(10.0));
    BTree view(t, snap);
    REQUIRE(view.find(num_key(20), &pos));
    CHECK_FALSE(pos.private_path);
    t.drop_root(snap);
    REQUIRE(t.find(num_key(4990), &pos));
    CHECK(pos.private_path);  // the snapshot gone, its nodes have one reference again
  }

  TEST_CASE("a cursor survives copy-on-write under it") {
    BTree t(two_slots());
    for (int i = 0; i < 3000; ++i) {
      uint64_t row[2] = {0, 0};
      t.insert(num_key(i), row);
    }
    Node* snap = t.share();
    BTree::Cursor c;
    c.seek(t, nullptr);
    int seen = 0;
    while (c.valid()) {
      double k = order_num(c.key().ord);
      CHECK(k == seen);
      // Writing the row copies its path (shared with the snapshot).
      uint64_t* r = t.find_mut(c.key());
      REQUIRE(r);
      r[1] = 1;
      ++seen;
      c.next(t);
    }
    CHECK(seen == 3000);
    t.drop_root(snap);
  }

  TEST_CASE("text keys order by bytes and keep their texts alive") {
    RowLayout layout{2, {0}, KeySpec{{0}, 1}};
    BTree t(layout);
    std::map<std::string, int> m;
    std::mt19937_64 rng(5);
    const char* prefixes[] = {"", "a", "abcdefgh", "abcdefghi", "\xC3\xA9t\xC3\xA9", "zz"};
    for (int i = 0; i < 3000; ++i) {
      std::string s = std::string(prefixes[rng() % 6]) + std::to_string(rng() % 500);
      TextObj* text = heap_text(s);
      uint64_t row[2] = {reinterpret_cast<uint64_t>(text), static_cast<uint64_t>(i)};
      if (t.insert(text_key(text), row)) {
        m.emplace(s, i);
      } else {
        release(text);
      }
    }
    REQUIRE(t.size() == m.size());
    BTree::Cursor c;
    c.seek(t, nullptr);
    for (auto& [s, v] : m) {
      REQUIRE(c.valid());
      CHECK(c.key().text->view() == s);
      c.next(t);
    }
    // Seeks: every key found with its row, and keys between them not found.
    // A third of the keys share their order image with many others (the
    // long prefixes), so the searches must settle ties on the bytes.
    for (auto& [s, v] : m) {
      TextObj* probe = heap_text(s);
      const uint64_t* row = t.find(text_key(probe));
      REQUIRE(row != nullptr);
      CHECK(row[1] == static_cast<uint64_t>(v));
      TextObj* missing = heap_text(s + "!");
      CHECK((m.count(s + "!") != 0) == (t.find(text_key(missing)) != nullptr));
      release(missing);
      release(probe);
    }
    // Erase half; the caller owns the erased row's text.
    int n = 0;
    for (auto& [s, v] : m) {
      if (n++ % 2) continue;
      TextObj* probe = heap_text(s);
      uint64_t out[2];
      REQUIRE(t.erase(text_key(probe), out));
      release(reinterpret_cast<TextObj*>(out[0]));
      release(probe);
    }
    CHECK(t.size() == m.size() / 2);
  }

  TEST_CASE("a tree built bottom up is the tree inserts in key order build, at node boundaries") {
    const uint32_t cap = BTree(two_slots()).leaf_capacity();
    const size_t level = size_t{cap} * kInnerFan;
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{cap - 1}, size_t{cap}, size_t{cap + 1}, 2 * size_t{cap},
                     level, level + 1, level * kInnerFan + 3 * cap + 5}) {
      CAPTURE(n);
      BTree inserted(two_slots()), built(two_slots());
      {
        BTree::Builder b(built);
        for (size_t i = 0; i < n; ++i) {
          uint64_t row[2];
          row_of(i, row);
          REQUIRE(inserted.insert(num_key(static_cast<double>(2 * i)), row));
          REQUIRE(b.append(num_key(static_cast<double>(2 * i)), row));
        }
        CHECK(b.rows() == n);
      }  // the builder's end finishes the tree
      check_invariants(built, n);
      check_invariants(inserted, n);
      if (n > 0) check_same_nodes(inserted, inserted.root(), built, built.root());
      CHECK(built.node_bytes() == inserted.node_bytes());
      // It goes on as any tree: inserts between, erases, appends past the end.
      uint64_t row[2] = {0, 9};
      CHECK(built.insert(num_key(-1), row));
      CHECK(built.insert(num_key(2.0 * static_cast<double>(n) + 1), row));
      uint64_t out[2];
      CHECK(built.erase(num_key(-1), out));
      if (n > 0) CHECK(built.erase(num_key(0), out));
      CHECK(built.size() == (n > 0 ? n : 1));
    }
  }

  TEST_CASE("a bottom-up build fills leaves to the fill asked for, and holds the invariants") {
    for (double fill : {0.0, 0.5, 0.9, 1.0}) {
      CAPTURE(fill);
      BTree t(two_slots());
      const size_t n = 20000;
      BTree::Builder b(t, fill);
      for (size_t i = 0; i < n; ++i) {
        uint64_t row[2];
        row_of(i, row);
        REQUIRE(b.append(num_key(static_cast<double>(2 * i)), row));
      }
      b.finish();
      check_invariants(t, n);
      uint32_t per_leaf = std::max<uint32_t>(1, static_cast<uint32_t>(fill * t.leaf_capacity()));
      const Node* leftmost = t.root();
      while (!leftmost->leaf) leftmost = static_cast<const Inner*>(leftmost)->kids[0];
      CHECK(leftmost->count == per_leaf);
      std::vector<uint64_t> want;
      for (size_t i = 0; i < n; ++i) want.push_back(i * 7 + 1);
      CHECK(slots_under(t, t.root()) == want);
    }
  }

  TEST_CASE("a bottom-up build refuses a key not above the last, and can be dropped") {
    RowLayout layout{2, {0}, KeySpec{{0}, 1}};
    BTree t(layout);
    {
      BTree::Builder b(t);
      for (const char* s : {"a", "abcdefgh", "abcdefghi", "b"}) {
        TextObj* text = heap_text(s);
        uint64_t row[2] = {reinterpret_cast<uint64_t>(text), 0};
        REQUIRE(b.append(text_key(text), row));
      }
      for (const char* s : {"b", "abcdefghi", ""}) {  // equal, then below
        TextObj* text = heap_text(s);
        uint64_t row[2] = {reinterpret_cast<uint64_t>(text), 0};
        CHECK_FALSE(b.append(text_key(text), row));
        release(text);  // refused: still the caller's
      }
      CHECK(b.rows() == 4);
      b.discard();  // the texts go back (the ASan build sees a leak otherwise)
    }
    CHECK(t.size() == 0);
    CHECK(t.root() == nullptr);
    TextObj* text = heap_text("z");
    uint64_t row[2] = {reinterpret_cast<uint64_t>(text), 0};
    CHECK(t.insert(text_key(text), row));  // still an empty tree to fill
  }

  TEST_CASE("append adds past the end without a descent, and declines whatever it cannot") {
    BTree t(two_slots()), want(two_slots());
    uint64_t row[2] = {0, 1};
    CHECK_FALSE(t.append(num_key(1), row));  // empty
    REQUIRE(t.insert(num_key(1), row));
    REQUIRE(want.insert(num_key(1), row));
    size_t appended = 0;
    for (int i = 2; i < 5000; ++i) {
      row[1] = static_cast<uint64_t>(i);
      if (t.append(num_key(i), row)) {
        ++appended;
      } else {
        REQUIRE(t.insert(num_key(i), row));  // the last leaf was full
      }
      REQUIRE(want.insert(num_key(i), row));
    }
    CHECK(appended > 4000);
    CHECK_FALSE(t.append(num_key(10), row));    // not above the last key
    CHECK_FALSE(t.append(num_key(4999), row));  // equal to it
    REQUIRE(t.size() == want.size());
    check_same_nodes(want, want.root(), t, t.root());
    Node* snap = t.share();
    CHECK_FALSE(t.append(num_key(6000), row));  // the right edge is a snapshot's too
    CHECK(BTree::rows_under(snap) == 4999);
    t.drop_root(snap);
    CHECK(t.append(num_key(6000), row));
    CHECK(t.rank(num_key(6000)) == 4999);
    CHECK(t.at(4999) != nullptr);
  }
}

}  // namespace
}  // namespace aup::vm

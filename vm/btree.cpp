#include "vm/btree.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace aup::vm {

namespace {
// Leaves are sized near this many bytes: about two pages of rows keeps a
// seek to a few cache lines per level and a copy-on-write cheap.
constexpr size_t kLeafTargetBytes = 2048;
constexpr size_t kLeafHeader = sizeof(Node);

void* xmalloc(size_t n) {
  void* p = std::malloc(n);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

BTree::BTree(RowLayout layout)
    : layout_(std::move(layout)),
      ord_keys_(!layout_.text_key()) {
  size_t per_row = key_bytes() + layout_.slots * sizeof(uint64_t);
  size_t cap = (kLeafTargetBytes - kLeafHeader) / per_row;
  leaf_cap_ = static_cast<uint32_t>(std::clamp<size_t>(cap, 4, 255));
}

BTree::BTree(const BTree& source, const Node* root)
    : layout_(source.layout_),
      ord_keys_(source.ord_keys_),
      leaf_cap_(source.leaf_cap_),
      root_(const_cast<Node*>(root)),
      view_(true) {
  size_ = rows_under(root);
}

BTree::~BTree() {
  if (view_) return;  // the snapshot owns the root
  if (root_) unref(root_);
  for (Node* n : spare_leaves_) std::free(n);
  for (Inner* n : spare_inners_) std::free(n);
}

// ---- layout ----------------------------------------------------------------

size_t BTree::leaf_bytes() const {
  return kLeafHeader + leaf_cap_ * (key_bytes() + layout_.slots * sizeof(uint64_t));
}
namespace {
const Key* whole_keys(const Node* n) { return reinterpret_cast<const Key*>(leaf_key_area(n)); }
const uint64_t* ord_keys(const Node* n) { return reinterpret_cast<const uint64_t*>(leaf_key_area(n)); }
}  // namespace

void BTree::move_leaf_keys(Node* n, uint32_t to, uint32_t from, uint32_t count) const {
  std::memmove(leaf_key_area(n) + to * key_bytes(), leaf_key_area(n) + from * key_bytes(), count * key_bytes());
}
void BTree::copy_leaf_keys(Node* to, const Node* from, uint32_t at, uint32_t count) const {
  std::memcpy(leaf_key_area(to), leaf_key_area(from) + at * key_bytes(), count * key_bytes());
}

const uint64_t* BTree::row_at(Pos p) const { return leaf_rows(p.leaf) + p.idx * layout_.slots; }
uint64_t* BTree::row_at_mut(Pos p) const { return leaf_rows(p.leaf) + p.idx * layout_.slots; }

namespace {
// A binary search's probes are dependent loads, each a cache miss in a
// large table; asking for every line of the keys first lets the misses
// overlap instead.
inline void prefetch_keys(const char* p, size_t bytes) {
  const char* end = p + bytes;
  for (; p < end; p += 64) __builtin_prefetch(p);
}

inline uint64_t image(const Key& k) { return k.ord; }
inline uint64_t image(uint64_t ord) { return ord; }

// The first of `count` keys (Keys or order images) whose image is not
// below `ord`: a halving step is a compare and a conditional move.
template <class K>
inline uint32_t first_image_not_below(const K* keys, uint32_t count, uint64_t ord) {
  if (count == 0) return 0;
  const K* base = keys;
  for (uint32_t len = count; len > 1;) {
    uint32_t half = len / 2;
    base = image(base[half]) < ord ? base + half : base;
    len -= half;
  }
  return static_cast<uint32_t>(base - keys) + (image(*base) < ord ? 1u : 0u);
}

// An inner node's keys are an array of fixed size: every line of it, with
// no count to loop on (the lines past `count` are in the node itself).
inline void prefetch_inner_keys(const Inner* n) {
  constexpr size_t kBytes = sizeof(n->keys);
  const char* p = reinterpret_cast<const char*>(n->keys);
#pragma GCC unroll 16
  for (size_t off = 0; off < kBytes; off += 64) __builtin_prefetch(p + off);
  __builtin_prefetch(p + kBytes - 1);  // the last line, when the array starts inside one
}
}  // namespace

namespace {
// The searches first compare order images only: a halving step is then a
// compare and a conditional move, with no branch on its outcome and no
// call that would make the loop spill registers. Only a long text key whose
// image ties one at the boundary needs its bytes compared; these searches
// over the whole key, out of line, settle that rare case.
[[gnu::noinline]] uint32_t lower_bound_tied(const Key* keys, uint32_t count, const Key& k) {
  uint32_t lo = 0, hi = count;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (key_less(keys[mid], k)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

[[gnu::noinline]] uint32_t upper_bound_tied(const Key* keys, uint32_t lo, uint32_t count, const Key& k) {
  uint32_t hi = count;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (key_less(k, keys[mid])) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}
}  // namespace

uint32_t BTree::leaf_lower_bound(const Node* n, const Key& k) const {
  uint32_t count = n->count;
  prefetch_keys(leaf_key_area(n), count * key_bytes());
  if (ord_keys_) return first_image_not_below(ord_keys(n), count, k.ord);  // numbers never tie
  const Key* keys = whole_keys(n);
  uint32_t i = first_image_not_below(keys, count, k.ord);
  if (i < count && keys[i].ord == k.ord && needs_text_compare(k)) return lower_bound_tied(keys, count, k);
  return i;
}

// The child whose range holds k: the last i with i == 0 or keys[i] <= k.
uint32_t BTree::inner_child(const Inner* n, const Key& k) {
  uint32_t count = n->count;
  prefetch_inner_keys(n);
  if (count < 2) return 0;
  // The last key (from keys[1]) whose image is not above k's, or 0.
  const Key* base = n->keys + 1;
  for (uint32_t len = count - 1u; len > 1;) {
    uint32_t half = len / 2;
    base = base[half].ord <= k.ord ? base + half : base;
    len -= half;
  }
  auto i = static_cast<uint32_t>(base - n->keys) - (base->ord <= k.ord ? 0u : 1u);
  if (i > 0 && n->keys[i].ord == k.ord && needs_text_compare(k)) return upper_bound_tied(n->keys, 1, count, k) - 1;
  return i;
}

uint64_t BTree::subtree_rows(const Node* n) {
  if (n->leaf) return n->count;
  const Inner* in = static_cast<const Inner*>(n);
  return in->count ? in->cum[in->count - 1] : 0;
}

// ---- memory ------------------------------------------------------------------

namespace {
// A holder's share of a text's chunk: a text n holders keep counts 1/n
// in each. Over a snapshot on an I/O thread the count read may be one the
// owner is changing that moment (counts are not atomic): the share is then
// off by a holder, which a stats figure may be. The text itself is safe to
// read: the snapshot holds it.
uint64_t text_share(const TextObj* t) {
  if (!t || t->in_arena) return 0;
  uint64_t bytes = text_heap_bytes(t);
  return t->refs > 1 ? bytes / t->refs : bytes;
}
}  // namespace

BTree::Memory BTree::memory_under(const Node* root) const {
  Memory m;
  if (root) add_memory(root, m);
  return m;
}

// Recursion as deep as the tree (kMaxDepth bounds it).
void BTree::add_memory(const Node* n, Memory& m) const {
  if (!n->leaf) {
    const Inner* in = static_cast<const Inner*>(n);
    ++m.inners;
    m.inner_bytes += sizeof(Inner);
    for (uint32_t i = 0; i < in->count; ++i) {
      m.key_text_bytes += text_share(in->keys[i].text);  // a child's first key: its leaf's text, shared
      add_memory(in->kids[i], m);
    }
    return;
  }
  uint64_t per_row = key_bytes() + layout_.slots * sizeof(uint64_t);
  ++m.leaves;
  m.rows += n->count;
  m.row_bytes += n->count * per_row;
  m.leaf_free_bytes += leaf_bytes() - n->count * per_row;
  const uint64_t* rows = leaf_rows(n);
  for (uint32_t i = 0; i < n->count; ++i) {
    m.key_text_bytes += text_share(leaf_key(n, i).text);
    for (uint32_t s : layout_.text_slots) {
      m.text_bytes += text_share(reinterpret_cast<const TextObj*>(rows[i * layout_.slots + s]));
    }
  }
}

// ---- nodes -------------------------------------------------------------------

Node* BTree::new_leaf() {
  Node* n;
  assert(!view_);
  if (!spare_leaves_.empty()) {
    n = spare_leaves_.back();
    spare_leaves_.pop_back();
    ++recycled_;
  } else {
    n = static_cast<Node*>(xmalloc(leaf_bytes()));
    node_bytes_ += leaf_bytes();
  }
  n->refs = 1;
  n->count = 0;
  n->leaf = true;
  n->next_insert = 0;
  return n;
}

Inner* BTree::new_inner() {
  Inner* n;
  assert(!view_);
  if (!spare_inners_.empty()) {
    n = spare_inners_.back();
    spare_inners_.pop_back();
    ++recycled_;
  } else {
    n = static_cast<Inner*>(xmalloc(sizeof(Inner)));
    node_bytes_ += sizeof(Inner);
  }
  n->refs = 1;
  n->count = 0;
  n->leaf = false;
  n->next_insert = 0;
  return n;
}

void BTree::retain_leaf_texts(Node* n, uint32_t from, uint32_t to) {
  if (layout_.text_slots.empty() && !layout_.text_key()) return;
  uint64_t* rows = leaf_rows(n);
  for (uint32_t i = from; i < to; ++i) {
    retain(leaf_key(n, i).text);
    for (uint32_t s : layout_.text_slots) {
      retain(reinterpret_cast<TextObj*>(rows[i * layout_.slots + s]));
    }
  }
}

void BTree::release_row_texts(uint64_t* row) {
  for (uint32_t s : layout_.text_slots) release(reinterpret_cast<TextObj*>(row[s]));
}

// A private copy of a shared node: it takes its own references to the
// children and texts it points to.
Node* BTree::clone(Node* n) {
  ++copied_;
  ++node_epoch_;  // `n` leaves the live tree (own() puts the copy in its place)
  if (n->leaf) {
    Node* c = new_leaf();
    std::memcpy(static_cast<void*>(c), n, leaf_bytes());
    c->refs = 1;
    retain_leaf_texts(c, 0, c->count);
    return c;
  }
  Inner* in = static_cast<Inner*>(n);
  Inner* c = new_inner();
  std::memcpy(static_cast<void*>(c), in, sizeof(Inner));
  c->refs = 1;
  for (uint32_t i = 0; i < c->count; ++i) {
    ++c->kids[i]->refs;
    retain(c->keys[i].text);
  }
  return c;
}

void BTree::free_node(Node* n) {
  ++node_epoch_;
  if (n->leaf) {
    uint64_t* rows = leaf_rows(n);
    for (uint32_t i = 0; i < n->count; ++i) {
      release(leaf_key(n, i).text);
      release_row_texts(rows + i * layout_.slots);
    }
    if (spare_leaves_.size() < kMaxSpares) {
      spare_leaves_.push_back(n);
    } else {
      node_bytes_ -= leaf_bytes();
      std::free(n);
    }
    return;
  }
  Inner* in = static_cast<Inner*>(n);
  for (uint32_t i = 0; i < in->count; ++i) {
    unref(in->kids[i]);
    release(in->keys[i].text);
  }
  if (spare_inners_.size() < kMaxSpares) {
    spare_inners_.push_back(in);
  } else {
    node_bytes_ -= sizeof(Inner);
    std::free(in);
  }
}

void BTree::unref(Node* n) {
  assert(n->refs > 0);
  if (--n->refs == 0) free_node(n);
}

// Makes the node in `slot` private to this path, copying it if shared.
Node* BTree::own(Node*& slot) {
  if (slot->refs > 1) {
    Node* c = clone(slot);
    --slot->refs;
    slot = c;
    ++version_;
  }
  return slot;
}

Node* BTree::share() {
  assert(!view_);
  assert(root_ == nullptr || root_->refs > 0);
  ++version_;
  if (root_) ++root_->refs;
  return root_;
}

void BTree::drop_root(Node* root) {
  assert(!view_);
  if (root) unref(root);
}

// ---- lookup --------------------------------------------------------------------

const uint64_t* BTree::find_in(const Node* root, const Key& k, Pos* pos) const {
  const Node* n = root;
  if (!n) return nullptr;
  // The reference counts sit beside what the descent reads anyway.
  bool private_path = !view_ && root == root_ && n->refs == 1;
  while (!n->leaf) {
    const Inner* in = static_cast<const Inner*>(n);
    n = in->kids[inner_child(in, k)];
    private_path = private_path && n->refs == 1;
  }
  uint32_t i = leaf_lower_bound(n, k);
  if (i == n->count || key_cmp(leaf_key(n, i), k) != 0) return nullptr;
  if (pos) *pos = Pos{const_cast<Node*>(n), i, private_path};
  return leaf_rows(n) + i * layout_.slots;
}

const uint64_t* BTree::find_in_leaf(Pos at, const Key& k) const {
  const Node* n = at.leaf;
  assert(n && n->leaf && n->refs > 0);
  uint32_t i = at.idx;
  if (i >= n->count || key_cmp(leaf_key(n, i), k) != 0) {
    i = leaf_lower_bound(n, k);  // rows after it in the leaf came or went
    if (i == n->count || key_cmp(leaf_key(n, i), k) != 0) return nullptr;  // moved to another leaf
  }
  return leaf_rows(n) + i * layout_.slots;
}

uint64_t* BTree::find_mut(const Key& k, Pos* pos) {
  assert(!view_);
  if (!root_) return nullptr;
  // One read-only descent first: a missing key must not copy anything, and
  // when no node on the path is shared (the common case) it is the only one.
  bool shared = root_->refs > 1;
  const Node* r = root_;
  while (!r->leaf) {
    const Inner* in = static_cast<const Inner*>(r);
    r = in->kids[inner_child(in, k)];
    shared = shared || r->refs > 1;
  }
  uint32_t ri = leaf_lower_bound(r, k);
  if (ri == r->count || key_cmp(leaf_key(r, ri), k) != 0) return nullptr;
  if (!shared) {
    if (pos) *pos = Pos{const_cast<Node*>(r), ri, true};
    return const_cast<uint64_t*>(leaf_rows(r)) + ri * layout_.slots;
  }
  Node* n = own(root_);
  while (!n->leaf) {
    Inner* in = static_cast<Inner*>(n);
    n = own(in->kids[inner_child(in, k)]);
  }
  uint32_t i = leaf_lower_bound(n, k);
  if (pos) *pos = Pos{n, i, true};
  return leaf_rows(n) + i * layout_.slots;
}

size_t BTree::rank_in(const Node* root, const Key& k) const {
  size_t pos = 0;
  const Node* n = root;
  if (!n) return 0;
  while (!n->leaf) {
    const Inner* in = static_cast<const Inner*>(n);
    uint32_t i = inner_child(in, k);
    if (i) pos += in->cum[i - 1];
    n = in->kids[i];
  }
  return pos + leaf_lower_bound(n, k);
}

const uint64_t* BTree::at_in(const Node* root, size_t pos, Key* key, Pos* where) const {
  if (pos >= rows_under(root)) return nullptr;
  const Node* n = root;
  while (!n->leaf) {
    const Inner* in = static_cast<const Inner*>(n);
    // The first child whose cumulative count passes pos.
    uint32_t lo = 0, hi = in->count - 1;
    while (lo < hi) {
      uint32_t mid = (lo + hi) / 2;
      if (in->cum[mid] > pos) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    if (lo) pos -= in->cum[lo - 1];
    n = in->kids[lo];
  }
  assert(pos < n->count);
  uint32_t i = static_cast<uint32_t>(pos);
  if (key) *key = leaf_key(n, i);
  if (where) *where = Pos{const_cast<Node*>(n), i};
  return leaf_rows(n) + i * layout_.slots;
}

// ---- insert ----------------------------------------------------------------------

bool BTree::insert(const Key& k, const uint64_t* row, Pos* pos) {
  assert(!view_);
  if (!root_) root_ = new_leaf();
  if (find(k)) return false;
  Node* root = own(root_);
  Split s = insert_rec(root, k, row);
  assert(s.inserted && s.at.leaf && key_cmp(key_at(s.at), k) == 0);
  if (pos) *pos = s.at;
  ++size_;
  ++version_;
  if (s.right) {
    Inner* top = new_inner();
    top->count = 2;
    top->kids[0] = root_;
    top->kids[1] = s.right;
    top->keys[0] = Key{};
    top->keys[1] = s.right_key;
    retain(s.right_key.text);
    top->cum[0] = size_ - s.right_rows;
    top->cum[1] = size_;
    root_ = top;
  }
  return true;
}

BTree::Split BTree::insert_rec(Node* n, const Key& k, const uint64_t* row) {
  if (n->leaf) {
    uint32_t i = leaf_lower_bound(n, k);
    if (n->count == leaf_cap_) return split_leaf(n, i, k, row);
    uint64_t* rows = leaf_rows(n);
    uint32_t slots = layout_.slots;
    move_leaf_keys(n, i + 1, i, n->count - i);
    std::memmove(rows + (i + 1) * slots, rows + i * slots, (n->count - i) * slots * sizeof(uint64_t));
    put_leaf_key(n, i, k);
    retain(k.text);
    std::memcpy(rows + i * slots, row, slots * sizeof(uint64_t));
    ++n->count;
    n->next_insert = static_cast<uint8_t>(i + 1);
    return Split{true, nullptr, {}, 0, Pos{n, i}};
  }
  Inner* in = static_cast<Inner*>(n);
  uint32_t i = inner_child(in, k);
  Node* child = own(in->kids[i]);
  Split s = insert_rec(child, k, row);
  for (uint32_t j = i; j < in->count; ++j) in->cum[j] += 1;
  if (!s.right) return Split{true, nullptr, {}, 0, s.at};
  // Child i split: take its new right sibling at i + 1.
  in->cum[i] -= s.right_rows;
  uint32_t tail = in->count - (i + 1);
  std::memmove(in->kids + i + 2, in->kids + i + 1, tail * sizeof(Node*));
  std::memmove(in->keys + i + 2, in->keys + i + 1, tail * sizeof(Key));
  std::memmove(in->cum + i + 2, in->cum + i + 1, tail * sizeof(uint64_t));
  in->kids[i + 1] = s.right;
  in->keys[i + 1] = s.right_key;
  retain(s.right_key.text);
  in->cum[i + 1] = in->cum[i] + s.right_rows;
  ++in->count;
  if (in->count <= kInnerFan) return Split{true, nullptr, {}, 0, s.at};
  Split up = split_inner(in, i + 2 == in->count);
  up.at = s.at;
  return up;
}

// A full leaf takes one more row by splitting. Appending at the end keeps
// the left leaf full (append-only tables then fill their leaves). So does
// a run of ascending inserts inside the tree (the row goes right after
// the last one inserted here): the left leaf keeps the rows before it and
// takes it, and the run goes on filling that leaf (TPC-C's order lines,
// appended per district, left halved leaves behind: 69% full). Otherwise
// the rows are halved.
BTree::Split BTree::split_leaf(Node* n, uint32_t at, const Key& k, const uint64_t* row) {
  uint32_t slots = layout_.slots;
  bool appending = at == n->count;
  bool run = !appending && at > 0 && at == n->next_insert;
  uint32_t keep = appending || run ? at : n->count / 2;
  Node* right = new_leaf();
  uint64_t* lr = leaf_rows(n);
  uint64_t* rr = leaf_rows(right);
  uint32_t moved = n->count - keep;
  copy_leaf_keys(right, n, keep, moved);
  std::memcpy(rr, lr + keep * slots, moved * slots * sizeof(uint64_t));
  right->count = static_cast<uint16_t>(moved);
  n->count = static_cast<uint16_t>(keep);
  bool to_left = !appending && at <= keep;
  Node* target = to_left ? n : right;
  uint32_t ti = to_left ? at : at - keep;
  assert(target->count < leaf_cap_);
  uint64_t* tr = leaf_rows(target);
  move_leaf_keys(target, ti + 1, ti, target->count - ti);
  std::memmove(tr + (ti + 1) * slots, tr + ti * slots, (target->count - ti) * slots * sizeof(uint64_t));
  put_leaf_key(target, ti, k);
  retain(k.text);
  std::memcpy(tr + ti * slots, row, slots * sizeof(uint64_t));
  ++target->count;
  target->next_insert = static_cast<uint8_t>(ti + 1);
  if (target != n) n->next_insert = 0;
  return Split{true, right, leaf_key(right, 0), right->count, Pos{target, ti}};
}

BTree::Split BTree::split_inner(Inner* n, bool appending) {
  // n holds kInnerFan + 1 children. If the last child was the one that
  // split (appending), keep the left node full, as leaves do.
  uint32_t keep = appending ? kInnerFan : kInnerFan / 2 + 1;
  Inner* right = new_inner();
  uint32_t moved = n->count - keep;
  uint64_t left_rows = n->cum[keep - 1];
  for (uint32_t j = 0; j < moved; ++j) {
    right->kids[j] = n->kids[keep + j];
    right->keys[j] = n->keys[keep + j];
    right->cum[j] = n->cum[keep + j] - left_rows;
  }
  right->count = static_cast<uint16_t>(moved);
  n->count = static_cast<uint16_t>(keep);
  return Split{true, right, right->keys[0], right->cum[moved - 1], Pos{}};
}

bool BTree::append(const Key& k, const uint64_t* row) {
  assert(!view_);
  Inner* path[kMaxDepth];
  uint32_t depth = 0;
  Node* n = root_;
  if (!n || n->refs != 1) return false;
  while (!n->leaf) {
    Inner* in = static_cast<Inner*>(n);
    path[depth++] = in;
    n = in->kids[in->count - 1];
    if (n->refs != 1) return false;
  }
  if (n->count == 0 || n->count == leaf_cap_ || !key_less(leaf_key(n, n->count - 1), k)) return false;
  uint32_t i = n->count++;
  put_leaf_key(n, i, k);
  retain(k.text);
  std::memcpy(leaf_rows(n) + i * layout_.slots, row, layout_.slots * sizeof(uint64_t));
  n->next_insert = static_cast<uint8_t>(i + 1);
  for (uint32_t d = 0; d < depth; ++d) ++path[d]->cum[path[d]->count - 1];
  ++size_;
  ++version_;
  return true;
}

// ---- bulk build ------------------------------------------------------------------

BTree::Builder::Builder(BTree& t, double fill) : t_(t) {
  assert(!t.view_ && t.root_ == nullptr && t.size_ == 0);
  double per = std::clamp(fill, 0.0, 1.0) * t.leaf_cap_;
  per_leaf_ = std::clamp<uint32_t>(static_cast<uint32_t>(per), 1, t.leaf_cap_);
}

bool BTree::Builder::append(const Key& k, const uint64_t* row) {
  assert(!done_);
  if (rows_ > 0 && !key_less(last_, k)) return false;
  if (leaves_.empty() || leaves_.back().rows == per_leaf_) leaves_.push_back(Built{t_.new_leaf(), k, 0});
  Built& b = leaves_.back();
  uint32_t i = b.node->count++;
  t_.put_leaf_key(b.node, i, k);
  retain(k.text);
  uint32_t slots = t_.layout_.slots;
  std::memcpy(t_.leaf_rows(b.node) + i * slots, row, slots * sizeof(uint64_t));
  ++b.rows;
  ++rows_;
  last_ = k;
  return true;
}

void BTree::Builder::finish() {
  if (done_) return;
  done_ = true;
  if (leaves_.empty()) return;
  std::vector<Built> level = std::move(leaves_), up;
  while (level.size() > 1) {
    up.clear();
    for (size_t from = 0; from < level.size(); from += kInnerFan) {
      Inner* in = t_.new_inner();
      size_t to = std::min(level.size(), from + kInnerFan);
      uint64_t rows = 0;
      for (size_t j = from; j < to; ++j) {
        uint32_t c = static_cast<uint32_t>(j - from);
        rows += level[j].rows;
        in->kids[c] = level[j].node;
        in->cum[c] = rows;
        // The leftmost node of a level has no lower bound (as a root an
        // insert makes: keys[0] is unused in seeks); every other key is one.
        in->keys[c] = j == 0 ? Key{} : level[j].first;
        retain(in->keys[c].text);
      }
      in->count = static_cast<uint16_t>(to - from);
      up.push_back(Built{in, level[from].first, rows});
    }
    std::swap(level, up);
  }
  t_.root_ = level[0].node;
  t_.size_ = rows_;
  ++t_.version_;
}

void BTree::Builder::discard() {
  assert(!done_);
  for (Built& b : leaves_) t_.free_node(b.node);
  leaves_.clear();
  rows_ = 0;
  done_ = true;
}

// ---- erase ------------------------------------------------------------------------

bool BTree::erase(const Key& k, uint64_t* out) {
  assert(!view_);
  if (!root_ || !find(k)) return false;
  Node* root = own(root_);
  bool erased = erase_rec(root, k, out);
  assert(erased);
  --size_;
  ++version_;
  // Shrink: an empty root goes; an inner root with one child hands over.
  while (root_ && !root_->leaf && root_->count <= 1) {
    Inner* in = static_cast<Inner*>(root_);
    Node* only = in->count ? in->kids[0] : nullptr;
    in->count = 0;  // the only child's reference passes to root_
    release(in->keys[0].text);
    free_node(in);
    root_ = only;
  }
  if (root_ && root_->leaf && root_->count == 0) {
    unref(root_);
    root_ = nullptr;
  }
  return erased;
}

bool BTree::erase_rec(Node* n, const Key& k, uint64_t* out) {
  if (n->leaf) {
    uint32_t i = leaf_lower_bound(n, k);
    assert(i < n->count && key_cmp(leaf_key(n, i), k) == 0);
    uint64_t* rows = leaf_rows(n);
    uint32_t slots = layout_.slots;
    release(leaf_key(n, i).text);
    std::memcpy(out, rows + i * slots, slots * sizeof(uint64_t));
    move_leaf_keys(n, i, i + 1, n->count - i - 1);
    std::memmove(rows + i * slots, rows + (i + 1) * slots, (n->count - i - 1) * slots * sizeof(uint64_t));
    --n->count;
    n->next_insert = 0;  // the rows moved: the run, if any, is not known any more
    return true;
  }
  Inner* in = static_cast<Inner*>(n);
  uint32_t i = inner_child(in, k);
  Node* child = own(in->kids[i]);
  erase_rec(child, k, out);
  for (uint32_t j = i; j < in->count; ++j) in->cum[j] -= 1;
  if (subtree_rows(child) != 0) return true;
  // The child emptied: drop it. Its separator goes too.
  unref(child);
  release(in->keys[i].text);
  uint32_t tail = in->count - (i + 1);
  std::memmove(in->kids + i, in->kids + i + 1, tail * sizeof(Node*));
  std::memmove(in->keys + i, in->keys + i + 1, tail * sizeof(Key));
  std::memmove(in->cum + i, in->cum + i + 1, tail * sizeof(uint64_t));
  --in->count;
  return true;
}

// ---- cursor -----------------------------------------------------------------------

void BTree::Cursor::descend_first(const BTree& t, Node* n, uint32_t depth) {
  while (!n->leaf) {
    assert(depth < kMaxDepth);
    Inner* in = static_cast<Inner*>(n);
    path_[depth] = in;
    path_idx_[depth] = 0;
    ++depth;
    n = in->kids[0];
  }
  (void)t;
  depth_ = depth;
  leaf_ = n;
  idx_ = 0;
}

void BTree::Cursor::seek_in(const BTree& t, const Node* root, const Key* k) {
  version_ = t.version();
  live_ = root == t.root_;
  ord_keys_ = t.ord_keys_;
  root_ = root;
  leaf_ = nullptr;
  Node* n = const_cast<Node*>(root);
  if (!n) return;
  uint32_t depth = 0;
  while (!n->leaf) {
    assert(depth < kMaxDepth);
    Inner* in = static_cast<Inner*>(n);
    uint32_t i = k ? inner_child(in, *k) : 0;
    path_[depth] = in;
    path_idx_[depth] = i;
    ++depth;
    n = in->kids[i];
  }
  depth_ = depth;
  leaf_ = n;
  idx_ = k ? t.leaf_lower_bound(n, *k) : 0;
  if (idx_ >= n->count) advance(t);
  if (leaf_) last_ = key();
}

// Moves to the next leaf's first row (or the end).
void BTree::Cursor::advance(const BTree& t) {
  for (;;) {
    uint32_t d = depth_;
    while (d > 0 && path_idx_[d - 1] + 1 >= path_[d - 1]->count) --d;
    if (d == 0) {
      leaf_ = nullptr;
      return;
    }
    ++path_idx_[d - 1];
    descend_first(t, path_[d - 1]->kids[path_idx_[d - 1]], d);
    if (leaf_->count > 0) return;
  }
}

void BTree::Cursor::next(const BTree& t) {
  if (!leaf_) return;
  if (live_ && version_ != t.version()) {
    // The tree changed: find the first key after the last one seen.
    Key last = last_;
    seek(t, &last);
    if (leaf_ && key_cmp(key(), last) == 0) next(t);
    return;
  }
  if (++idx_ >= leaf_->count) advance(t);
  if (leaf_) last_ = key();
}

}  // namespace aup::vm

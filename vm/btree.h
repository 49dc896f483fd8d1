// The B+tree that holds a table's rows, in key order.
//
// Rows live inside the leaves (a row is `slots` 8-byte slots: a double, a
// bool as 0/1, or a TextObj*), next to their keys, so a seek touches one
// leaf. A leaf is its header, then its keys, then its rows. A key is a Key
// (16 bytes: its order image and its text) where keys hold texts; where
// they are numbers it is the order image alone (8 bytes: the text pointer
// would always be null), so more rows fit a leaf and its keys take fewer
// cache lines. Inner nodes keep, per child, its first key and the cumulative row
// count up to and including it, so the position of a key and the row at a
// position are found in logarithmic time (views count rows this way).
//
// Copy-on-write. Every node carries a reference count: the number of
// parents (or roots) that point to it. `share()` hands out another root
// reference (a snapshot); afterwards a change copies each shared node on
// its path before changing it (path copying), so a snapshot never sees a
// later change. Nodes and texts are reference counted without atomics:
// only the owner thread changes counts (docs/architecture.md; snapshot
// readers only read).
//
// `version()` changes whenever rows may have moved or nodes been replaced
// (insert, erase, a copy-on-write, a share). A cached position (RowRef,
// Cursor) is valid while the version it was taken at is current.
//
// `node_epoch()` changes whenever a node leaves the live tree: it is freed
// (an emptied leaf, a shrinking root) or replaced by its copy-on-write
// copy (the original stays a snapshot's). Nothing else takes a node out
// (a split adds one; rows move within and between leaves), so a leaf of
// the live tree found while the epoch was E still is one while it is E,
// and a row found in it by key is the live row of that key (keys are
// unique in a tree): find_in_leaf. The batch encoder (storage/records.h)
// reads a changed row that way instead of finding it again.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "vm/key.h"

namespace aup::vm {

// The shape of one table's rows.
struct RowLayout {
  uint32_t slots = 0;                 // fields per row
  std::vector<uint32_t> text_slots;   // which slots hold TextObj*
  KeySpec key;                        // which slots make the key
  // Every key is an encoded text, even of one component (an index's
  // entries, vm/state.h), so that a prefix of it is a prefix of the bytes.
  bool encoded_key = false;
  // Keys hold a TextObj* (a text key, any composite key, an encoded key).
  bool text_key() const { return encoded_key || key.composite() || key.text(0); }
};

struct Node {
  uint32_t refs;
  uint16_t count;
  bool leaf;
  // A leaf: 1 + the position the last row inserted into it went to, 0 if
  // none is known. A full leaf whose next insert comes right after the
  // last (a run of ascending keys inside the tree: each district's new
  // orders) splits there rather than in half (split_leaf). In the header's
  // padding: a node is no bigger for it.
  uint8_t next_insert;
};

// Where a leaf's keys start: right after its header. Its rows follow its
// keys, after room for as many keys as it holds rows.
inline char* leaf_key_area(Node* n) { return reinterpret_cast<char*>(n) + sizeof(Node); }
inline const char* leaf_key_area(const Node* n) { return reinterpret_cast<const char*>(n) + sizeof(Node); }

// Children per inner node. The arrays hold one more, so a child's split
// can be taken in before the node itself splits.
inline constexpr uint32_t kInnerFan = 32;
struct Inner : Node {
  uint64_t cum[kInnerFan + 1];  // rows in children 0..i
  Key keys[kInnerFan + 1];      // keys[i]: a lower bound of child i's keys (keys[0] unused in seeks)
  Node* kids[kInnerFan + 1];
};

// Deepest tree: with at least 2 children per inner node and 2^40 rows this
// is never reached; the bound sizes the cursor's path.
inline constexpr uint32_t kMaxDepth = 48;

class BTree {
 public:
  explicit BTree(RowLayout layout);
  // A read-only tree over a snapshot's root (a root `source.share()` gave):
  // the source's layout, the rows under `root`, no ownership. Every read
  // works on it, on any thread; nothing may change it. The snapshot keeps
  // the root referenced (and gives it back to the source, on the owner
  // thread) until the view is gone.
  BTree(const BTree& source, const Node* root);
  ~BTree();
  BTree(const BTree&) = delete;
  BTree& operator=(const BTree&) = delete;

  size_t size() const { return size_; }
  uint64_t version() const { return version_; }
  uint64_t node_epoch() const { return node_epoch_; }
  const RowLayout& layout() const { return layout_; }
  uint32_t leaf_capacity() const { return leaf_cap_; }

  // A leaf position. Valid while version() is unchanged.
  struct Pos {
    Node* leaf = nullptr;
    uint32_t idx = 0;
    // Every node from the live tree's root to `leaf` had one reference
    // when the position was found (find, find_mut; at leaves it false): no snapshot shares the path,
    // so the row may be written in place while version() is unchanged (a
    // share or a copy changes it). False when not known so.
    bool private_path = false;
  };

  // The row with key `k` (read only), or null.
  const uint64_t* find(const Key& k, Pos* pos = nullptr) const { return find_in(root_, k, pos); }
  // The same in a snapshot's tree (a root from share()).
  const uint64_t* find_in(const Node* root, const Key& k, Pos* pos = nullptr) const;
  // The row with key `k`, its path made private (copied if shared), or null.
  uint64_t* find_mut(const Key& k, Pos* pos = nullptr);
  // Inserts a row (slots copied; the tree takes over the references to its
  // texts and retains `k.text` itself), and says where in `pos` if given.
  // False, and nothing taken, if `k` is present.
  bool insert(const Key& k, const uint64_t* row, Pos* pos = nullptr);
  // Removes the row with key `k`, copying its slots to `out` (the caller
  // takes over its text references). False if absent.
  bool erase(const Key& k, uint64_t* out);

  // Rows with keys below `k`.
  size_t rank(const Key& k) const { return rank_in(root_, k); }
  size_t rank_in(const Node* root, const Key& k) const;
  // The row at position `pos` (0-based, key order), or null past the end.
  const uint64_t* at(size_t pos, Key* key = nullptr, Pos* where = nullptr) const {
    return at_in(root_, pos, key, where);
  }
  const uint64_t* at_in(const Node* root, size_t pos, Key* key = nullptr, Pos* where = nullptr) const;
  // Every row under `root`, in key order. Reads only the tree's layout
  // (fixed at construction) besides the nodes, so another thread may run it
  // on a snapshot's root while the owner changes the live tree.
  template <class F>
  void for_each(const Node* root, F&& f) const {
    if (root) for_each_in(root, f);
  }
  // Rows under a root (a snapshot's size).
  static uint64_t rows_under(const Node* root) { return root ? subtree_rows(root) : 0; }

  // The row with key `k` if leaf `at.leaf` holds it (looked for at at.idx
  // first, then searched), else null. The leaf must be one of the live
  // tree's, as it is while node_epoch() is what it was when it was found.
  const uint64_t* find_in_leaf(Pos at, const Key& k) const;

  // Row and key at a leaf position (no checks).
  const uint64_t* row_at(Pos p) const;
  uint64_t* row_at_mut(Pos p) const;
  Key key_at(Pos p) const { return leaf_key(p.leaf, p.idx); }

  // Snapshots: another reference to the current root; release it with
  // `drop_root`. Taking one makes every node shared.
  Node* share();
  void drop_root(Node* root);
  Node* root() const { return root_; }

  // Iteration in key order from a lower bound. Holds its path; if the tree
  // changes under it (version), `next` re-seeks after the last key seen.
  class Cursor {
   public:
    Cursor() = default;
    // Positions at the first row with key >= k (or the first row), in the
    // live tree or under a snapshot's root. A snapshot never changes, so
    // a cursor over one never re-seeks.
    void seek(const BTree& t, const Key* k) { seek_in(t, t.root_, k); }
    void seek_in(const BTree& t, const Node* root, const Key* k);
    bool valid() const { return leaf_ != nullptr; }
    Key key() const { return read_key(leaf_, idx_, ord_keys_); }
    Pos pos() const { return Pos{leaf_, idx_}; }
    void next(const BTree& t);

   private:
    void descend_first(const BTree& t, Node* n, uint32_t depth);
    void advance(const BTree& t);
    Inner* path_[kMaxDepth] = {};
    uint32_t path_idx_[kMaxDepth] = {};
    uint32_t depth_ = 0;
    Node* leaf_ = nullptr;
    uint32_t idx_ = 0;
    uint64_t version_ = 0;
    Key last_;
    const Node* root_ = nullptr;
    bool live_ = true;
    bool ord_keys_ = false;  // the tree's
  };

  // Inserts a row whose key is above every key of the tree at its right
  // edge, without a descent: the log's replay of a batch that only adds
  // rows past the end (an order's lines, a transfer). False, nothing
  // taken, unless the tree has rows, `k` is above the last, no node on the
  // right edge is shared and the last leaf has room: the caller inserts.
  bool append(const Key& k, const uint64_t* row);

  // Builds an empty tree bottom up from rows in strictly increasing key
  // order (an image's): leaves filled in turn to `fill` of their capacity,
  // then each inner level over the one below, full, as inserts in key
  // order would build it (at fill 1 the same nodes), with no descent per
  // row. The tree has its rows once finish() ran (or the builder is gone);
  // until then it must not be read or changed.
  class Builder {
   public:
    explicit Builder(BTree& t, double fill = 1.0);
    ~Builder() { finish(); }
    Builder(const Builder&) = delete;
    Builder& operator=(const Builder&) = delete;
    // Adds a row as insert does (slots copied, texts taken over, k.text
    // retained). False, nothing taken, if `k` is not above the last key
    // added: an image whose keys do not increase is damaged.
    bool append(const Key& k, const uint64_t* row);
    uint64_t rows() const { return rows_; }
    // Builds the inner levels and gives the tree its root (once).
    void finish();
    // Drops every row added (their texts released): the tree stays empty.
    void discard();

   private:
    struct Built {
      Node* node;
      Key first;  // its first key (held by the leaf it is in)
      uint64_t rows;
    };
    BTree& t_;
    uint32_t per_leaf_;
    std::vector<Built> leaves_;
    Key last_;
    uint64_t rows_ = 0;
    bool done_ = false;
  };

  // Memory held by nodes (bytes), for stats: every node this tree has
  // allocated and not freed, those only snapshots still hold and the
  // spares among them.
  size_t node_bytes() const { return node_bytes_; }

  // Where the memory under a root goes (bytes; `aup stats`, runtime/metrics.h).
  // A walk of every node and every text a row points to: O(rows x text
  // fields), read only, so it may run on a snapshot's root on any thread.
  // A text is counted as the heap memory it takes (text_heap_bytes),
  // divided among its holders (its reference count), so a text two rows
  // share counts once over both.
  struct Memory {
    uint64_t rows = 0, leaves = 0, inners = 0;
    uint64_t row_bytes = 0;        // rows x (key + slots): what the rows take in their leaves
    uint64_t leaf_free_bytes = 0;  // the rest of the leaves: headers, room not yet filled
    uint64_t inner_bytes = 0;
    uint64_t key_text_bytes = 0;   // the texts of text and composite keys
    uint64_t text_bytes = 0;       // the texts of text fields
    uint64_t node_bytes() const { return row_bytes + leaf_free_bytes + inner_bytes; }
    // How full the leaves are: rows over the rows they could hold.
    double fill(uint32_t leaf_capacity) const {
      return leaves ? static_cast<double>(rows) / static_cast<double>(leaves * leaf_capacity) : 0.0;
    }
  };
  Memory memory_under(const Node* root) const;
  bool is_view() const { return view_; }
  // Nodes copied because a snapshot shared them, and nodes taken from the
  // spares instead of malloc, since the tree was made.
  uint64_t nodes_copied() const { return copied_; }
  uint64_t nodes_recycled() const { return recycled_; }

 private:
  struct Split {
    bool inserted = false;
    Node* right = nullptr;  // a new right sibling after a split
    Key right_key;          // its first key
    uint64_t right_rows = 0;
    Pos at;  // where the row inserted went
  };

  // Key i of a leaf whose keys are order images alone (ord_keys) or Keys.
  static Key read_key(const Node* n, uint32_t i, bool ord_keys) {
    const char* at = leaf_key_area(n);
    if (ord_keys) {
      uint64_t ord;
      std::memcpy(&ord, at + i * sizeof(uint64_t), sizeof ord);
      return Key{ord, nullptr};
    }
    return reinterpret_cast<const Key*>(at)[i];
  }
  Key leaf_key(const Node* n, uint32_t i) const { return read_key(n, i, ord_keys_); }
  void put_leaf_key(Node* n, uint32_t i, const Key& k) const {
    if (ord_keys_) {
      assert(!k.text);  // a number key has no text to keep
      std::memcpy(leaf_key_area(n) + i * sizeof(uint64_t), &k.ord, sizeof k.ord);
    } else {
      reinterpret_cast<Key*>(leaf_key_area(n))[i] = k;
    }
  }
  // A key's bytes in a leaf.
  uint32_t key_bytes() const { return ord_keys_ ? sizeof(uint64_t) : sizeof(Key); }
  // Moves `count` keys of leaf `n` from position `from` to `to` (they may
  // overlap), or copies them from another leaf.
  void move_leaf_keys(Node* n, uint32_t to, uint32_t from, uint32_t count) const;
  void copy_leaf_keys(Node* to, const Node* from, uint32_t at, uint32_t count) const;
  size_t leaf_bytes() const;
  uint64_t* leaf_rows(Node* n) const {
    return reinterpret_cast<uint64_t*>(leaf_key_area(n) + leaf_cap_ * key_bytes());
  }
  const uint64_t* leaf_rows(const Node* n) const {
    return reinterpret_cast<const uint64_t*>(leaf_key_area(n) + leaf_cap_ * key_bytes());
  }
  uint32_t leaf_lower_bound(const Node* n, const Key& k) const;
  static uint32_t inner_child(const Inner* n, const Key& k);
  static uint64_t subtree_rows(const Node* n);

  Node* new_leaf();
  Inner* new_inner();
  Node* clone(Node* n);
  void free_node(Node* n);
  void unref(Node* n);
  Node* own(Node*& slot);
  void retain_leaf_texts(Node* n, uint32_t from, uint32_t to);
  void release_row_texts(uint64_t* row);

  template <class F>
  void for_each_in(const Node* n, F& f) const {
    if (n->leaf) {
      const uint64_t* rows = leaf_rows(n);
      for (uint32_t i = 0; i < n->count; ++i) f(leaf_key(n, i), rows + i * layout_.slots);
      return;
    }
    const Inner* in = static_cast<const Inner*>(n);
    for (uint32_t i = 0; i < in->count; ++i) for_each_in(in->kids[i], f);
  }
  void add_memory(const Node* n, Memory& m) const;
  Split insert_rec(Node* n, const Key& k, const uint64_t* row);
  Split split_leaf(Node* n, uint32_t at, const Key& k, const uint64_t* row);
  Split split_inner(Inner* n, bool appending);
  bool erase_rec(Node* n, const Key& k, uint64_t* out);

  RowLayout layout_;
  // Keys are numbers: a leaf keeps each one's order image alone.
  bool ord_keys_;
  uint32_t leaf_cap_;
  Node* root_ = nullptr;
  size_t size_ = 0;
  uint64_t version_ = 1;
  uint64_t node_epoch_ = 0;
  size_t node_bytes_ = 0;
  bool view_ = false;
  uint64_t copied_ = 0;
  uint64_t recycled_ = 0;
  // Freed nodes kept for reuse, so that the nodes copy-on-write copies come
  // from here rather than from malloc. Bounded so a shrinking table gives
  // memory back.
  static constexpr size_t kMaxSpares = 64;
  std::vector<Node*> spare_leaves_;
  std::vector<Inner*> spare_inners_;
};

}  // namespace aup::vm

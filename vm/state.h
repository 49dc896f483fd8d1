// The state of a running module: its tables and vars, and the undo journal
// that makes an event all-or-nothing.
//
// Every change an event makes is noted here before it happens, with what
// it overwrote: a field's old value, a removed row, or just the key of an
// inserted row. A failed event rolls back to its mark, newest change first;
// a committed batch releases what the journal held (old texts, old rows).
// The journal is also the list of changes a commit writes to the log
// (storage/records.h encodes their net effect).
//
// Ownership: texts stored in rows and vars are heap texts. A noted old value
// or row belongs to the journal until commit (released) or rollback (put
// back). The journal holds each noted key's text on the heap (a key from an
// event's arena is copied), since a batch's journal outlives its events.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vm/btree.h"
#include "vm/module.h"
#include "vm/value.h"

namespace aup::vm {

// The store's own tables ("system tables": the idempotency keys'
// `$keys` and `$key_order`, defined in storage/key_tables.h) follow the
// module's in every State, numbered from module().tables.size(): their
// changes are journaled, rolled back, stored and snapshotted like any
// table's, and no module code names them. Their rows' shapes here are
// the vm's side of storage's one definition: runtime/keys.cpp checks at
// compile time that the two agree, field by field.
struct SystemTableShape {
  static constexpr uint32_t kMaxFields = 5;
  std::array<uint32_t, kMaxFields> types;  // kTypeNum or kTypeText, the first `fields` of them
  uint32_t fields;
  uint32_t key_field;
};
inline constexpr std::array<SystemTableShape, 2> kSystemTables = {{
    {{kTypeText, kTypeText, kTypeText, kTypeNum, kTypeNum}, 5, 0},  // $keys: key, digest, answer, n, at
    {{kTypeNum, kTypeText}, 2, 0},                                  // $key_order: n, key
}};

struct Change {
  enum class Kind : uint8_t { SetField, SetVar, Insert, Remove, Replace };
  Kind kind;
  uint32_t target;   // table or var number
  uint32_t field;    // SetField
  Value old;         // SetField, SetVar
  Key key;           // table changes
  size_t saved_row;  // Remove, Replace: offset of the old row in saved rows
  // SetField, Insert, Replace, when the caller knew it: where the row was
  // (leaf null if not known), and the tree's node_epoch() then. The batch
  // encoder reads the row's final values there while the epoch is the
  // same (vm/btree.h: the leaf is still the live tree's), not finding the
  // row again.
  BTree::Pos where = {};
  uint64_t epoch = 0;
};

class State {
 public:
  explicit State(const Module& m);
  // A read-only state over a snapshot of `live`: per tree a root that
  // live.tree(i).share() gave (the tables', then the indexes'), and the
  // vars' values then. Borrows both:
  // whoever took the snapshot gives them back after this is gone (the
  // owner thread: reference counts are not atomic). Queries run on it from
  // any thread; nothing may change it.
  State(const State& live, const std::vector<Node*>& roots, std::vector<Value> vars);
  ~State();
  bool is_view() const { return view_; }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  const Module& module() const { return module_; }
  // The module's tables and then the system tables.
  uint32_t table_count() const { return static_cast<uint32_t>(tables_.size()); }
  // System table i's number (kSystemTables[i]).
  uint32_t system_table(uint32_t i) const { return static_cast<uint32_t>(module_.tables.size()) + i; }
  BTree& table(uint32_t t) { return *tables_[t]; }
  const BTree& table(uint32_t t) const { return *tables_[t]; }
  bool text_field(uint32_t t, uint32_t field) const { return text_fields_[t][field]; }

  // Every tree: the tables' (0 .. table_count() - 1), then the indexes'.
  size_t tree_count() const { return tables_.size() + indexes_.size(); }
  BTree& tree(size_t i) { return i < tables_.size() ? *tables_[i] : *indexes_[i - tables_.size()]; }
  const BTree& tree(size_t i) const { return i < tables_.size() ? *tables_[i] : *indexes_[i - tables_.size()]; }

  // ---- secondary indexes (module_.indexes)
  //
  // Index i is a tree of entries, one per row of its table: the key is the
  // index fields' values, then the primary key's fields not among them,
  // always encoded (vm/key.h), so entries are unique even for a non-unique
  // index and a prefix of the index fields is a prefix of the bytes; the
  // one slot holds the row's primary key (a num, or the key's TextObj*).
  // Table changes update the indexes in the same step (maintain_*), and a
  // rollback of a table change undoes its index change with it, so the
  // journal holds only table changes.
  BTree& index(uint32_t i) { return *indexes_[i]; }
  const BTree& index(uint32_t i) const { return *indexes_[i]; }
  // Whether a change to `field` of table t's rows changes any index: one
  // test, so a field in no index costs nothing more to assign.
  bool field_indexed(uint32_t t, uint32_t field) const { return indexed_[t][field]; }
  bool has_indexes(uint32_t t) const { return !table_indexes_[t].empty(); }
  // The primary key an entry's slot holds.
  Key entry_row_key(uint32_t i, const Value* entry) const;
  // A row's entry key in index i (a heap text: release it).
  Key entry_key(uint32_t i, const Value* row) const;
  // Adds (drops) the entries of a row of table t, in every index of t, or
  // only those holding `field` (kAllFields: all).
  static constexpr uint32_t kAllFields = UINT32_MAX;
  void index_add(uint32_t t, const Value* row, const Key& pk, uint32_t field = kAllFields);
  void index_drop(uint32_t t, const Value* row, uint32_t field = kAllFields);
  // The first unique index of t (holding `field`, or any) in which another
  // row than `pk` has the values of `row`: its number, and that row's key
  // in *other; -1 if none.
  int unique_conflict(uint32_t t, const Value* row, const Key& pk, uint32_t field, Key* other) const;
  // "unique index `by_email` of `users` already has (\"x\")": a conflict
  // over `row`'s values in index i.
  std::string conflict_text(uint32_t i, const Value* row) const;
  // Fills every index from its table (at open, after recovery): false and
  // `error` if a unique index finds two rows with equal values. `before`,
  // if given, is called with each index's number before it is built (the
  // open's progress line).
  bool rebuild_indexes(std::string& error, const std::function<void(uint32_t)>& before = {});
  Value var(uint32_t v) const { return vars_[v]; }
  void set_var_raw(uint32_t v, Value x) { vars_[v] = x; }
  bool text_var(uint32_t v) const { return module_.vars[v].type == kTypeText; }

  // ---- the journal ----
  // `where`: the row's position in table t now, if known.
  void note_set_field(uint32_t t, const Key& k, uint32_t field, Value old, BTree::Pos where = {});
  void note_set_var(uint32_t v, Value old);
  void note_insert(uint32_t t, const Key& k, BTree::Pos where = {});
  void note_remove(uint32_t t, const Key& k, const Value* old_row);
  void note_replace(uint32_t t, const Key& k, const Value* old_row, BTree::Pos where = {});

  size_t mark() const { return changes_.size(); }
  // Undoes every change after `mark`, newest first.
  void rollback(size_t mark);
  // Accepts every change: releases the old values and rows noted.
  void commit();
  const std::vector<Change>& changes() const { return changes_; }
  // Bytes the journal's arrays hold (kept between batches, so a batch
  // does not grow them again); the texts and rows noted are in the trees'.
  size_t journal_bytes() const {
    return changes_.capacity() * sizeof(Change) + saved_rows_.capacity() * sizeof(Value);
  }

  // Releases the texts of one row (of table t's layout).
  void release_row(uint32_t t, const Value* row) const;

 private:
  static Key journal_key(const Key& k);
  void add_table(const std::vector<uint32_t>& key_fields, std::vector<bool> texts);
  void setup_indexes();
  bool rebuild_index(uint32_t i, std::string& error);
  bool holds(uint32_t i, uint32_t field) const;
  std::string key_text(uint32_t t, const Key& k) const;
  size_t save_row(uint32_t t, const Value* row);

  const Module& module_;
  std::vector<std::unique_ptr<BTree>> tables_;
  std::vector<std::vector<bool>> text_fields_;
  std::vector<std::unique_ptr<BTree>> indexes_;
  std::vector<std::vector<uint32_t>> table_indexes_;  // per table: its indexes
  std::vector<std::vector<bool>> indexed_;           // per table, per field
  std::vector<KeySpec> entry_specs_;                 // per index: record fields of its entry key
  std::vector<Value> vars_;
  std::vector<Change> changes_;
  std::vector<Value> saved_rows_;
  bool view_ = false;
};

}  // namespace aup::vm

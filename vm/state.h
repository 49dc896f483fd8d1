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

#include <cstdint>
#include <memory>
#include <vector>

#include "vm/btree.h"
#include "vm/module.h"
#include "vm/value.h"

namespace aup::vm {

struct Change {
  enum class Kind : uint8_t { SetField, SetVar, Insert, Remove, Replace };
  Kind kind;
  uint32_t target;   // table or var number
  uint32_t field;    // SetField
  Value old;         // SetField, SetVar
  Key key;           // table changes
  size_t saved_row;  // Remove, Replace: offset of the old row in saved rows
};

class State {
 public:
  explicit State(const Module& m);
  // A read-only state over a snapshot of `live`: per table a root that
  // live.table(t).share() gave, and the vars' values then. Borrows both:
  // whoever took the snapshot gives them back after this is gone (the
  // owner thread: reference counts are not atomic). Queries run on it from
  // any thread; nothing may change it.
  State(const State& live, const std::vector<Node*>& roots, std::vector<Value> vars);
  ~State();
  bool is_view() const { return view_; }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  const Module& module() const { return module_; }
  BTree& table(uint32_t t) { return *tables_[t]; }
  const BTree& table(uint32_t t) const { return *tables_[t]; }
  bool text_field(uint32_t t, uint32_t field) const { return text_fields_[t][field]; }
  Value var(uint32_t v) const { return vars_[v]; }
  void set_var_raw(uint32_t v, Value x) { vars_[v] = x; }
  bool text_var(uint32_t v) const { return module_.vars[v].type == kTypeText; }

  // ---- the journal ----
  void note_set_field(uint32_t t, const Key& k, uint32_t field, Value old);
  void note_set_var(uint32_t v, Value old);
  void note_insert(uint32_t t, const Key& k);
  void note_remove(uint32_t t, const Key& k, const Value* old_row);
  void note_replace(uint32_t t, const Key& k, const Value* old_row);

  size_t mark() const { return changes_.size(); }
  // Undoes every change after `mark`, newest first.
  void rollback(size_t mark);
  // Accepts every change: releases the old values and rows noted.
  void commit();
  const std::vector<Change>& changes() const { return changes_; }

  // Releases the texts of one row (of table t's layout).
  void release_row(uint32_t t, const Value* row) const;

 private:
  static Key journal_key(const Key& k);
  size_t save_row(uint32_t t, const Value* row);

  const Module& module_;
  std::vector<std::unique_ptr<BTree>> tables_;
  std::vector<std::vector<bool>> text_fields_;
  std::vector<Value> vars_;
  std::vector<Change> changes_;
  std::vector<Value> saved_rows_;
  bool view_ = false;
};

}  // namespace aup::vm

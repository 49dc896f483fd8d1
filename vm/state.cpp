#include "vm/state.h"

#include <cassert>
#include <cstring>

namespace aup::vm {

State::State(const Module& m) : module_(m) {
  for (const TableDesc& t : m.tables) {
    const RecordDesc& r = m.records[t.record];
    RowLayout layout;
    layout.slots = static_cast<uint32_t>(r.fields.size());
    std::vector<bool> texts(r.fields.size(), false);
    for (uint32_t i = 0; i < r.fields.size(); ++i) {
      if (r.fields[i].type == kTypeText) {
        layout.text_slots.push_back(i);
        texts[i] = true;
      }
    }
    layout.text_key = texts[t.key_field];
    tables_.push_back(std::make_unique<BTree>(std::move(layout)));
    text_fields_.push_back(std::move(texts));
  }
  for (const VarDesc& v : m.vars) {
    switch (v.init.kind) {
      case Constant::Kind::Num: vars_.push_back(num_value(v.init.num)); break;
      case Constant::Kind::Bool: vars_.push_back(bool_value(v.init.boolean)); break;
      case Constant::Kind::Text: vars_.push_back(ptr_value(heap_text(v.init.text))); break;
    }
  }
}

State::State(const State& live, const std::vector<Node*>& roots, std::vector<Value> vars)
    : module_(live.module_), text_fields_(live.text_fields_), vars_(std::move(vars)), view_(true) {
  assert(roots.size() == live.tables_.size() && vars_.size() == live.vars_.size());
  for (size_t t = 0; t < roots.size(); ++t) tables_.push_back(std::make_unique<BTree>(*live.tables_[t], roots[t]));
}

State::~State() {
  if (view_) return;  // borrowed roots and vars
  rollback(0);
  for (uint32_t v = 0; v < vars_.size(); ++v) {
    if (text_var(v)) release(as_ptr<TextObj>(vars_[v]));
  }
}

void State::release_row(uint32_t t, const Value* row) const {
  for (uint32_t s : tables_[t]->layout().text_slots) release(as_ptr<TextObj>(row[s]));
}

size_t State::save_row(uint32_t t, const Value* row) {
  size_t at = saved_rows_.size();
  uint32_t n = tables_[t]->layout().slots;
  saved_rows_.insert(saved_rows_.end(), row, row + n);
  return at;
}

// The journal outlives the event (a batch commits or rolls back after its
// events' arenas are gone), so a key from an arena is copied to the heap.
Key State::journal_key(const Key& k) {
  Key held = k;
  if (k.text) held.text = to_heap(k.text);
  return held;
}

void State::note_set_field(uint32_t t, const Key& k, uint32_t field, Value old) {
  assert(!view_);
  changes_.push_back(Change{Change::Kind::SetField, t, field, old, journal_key(k), 0});
}

void State::note_set_var(uint32_t v, Value old) {
  assert(!view_);
  changes_.push_back(Change{Change::Kind::SetVar, v, 0, old, Key{}, 0});
}

void State::note_insert(uint32_t t, const Key& k) {
  assert(!view_);
  changes_.push_back(Change{Change::Kind::Insert, t, 0, 0, journal_key(k), 0});
}

void State::note_remove(uint32_t t, const Key& k, const Value* old_row) {
  assert(!view_);
  changes_.push_back(Change{Change::Kind::Remove, t, 0, 0, journal_key(k), save_row(t, old_row)});
}

void State::note_replace(uint32_t t, const Key& k, const Value* old_row) {
  assert(!view_);
  changes_.push_back(Change{Change::Kind::Replace, t, 0, 0, journal_key(k), save_row(t, old_row)});
}

void State::rollback(size_t mark) {
  assert(mark <= changes_.size());
  std::vector<Value> scratch;
  while (changes_.size() > mark) {
    Change c = changes_.back();
    changes_.pop_back();
    switch (c.kind) {
      case Change::Kind::SetField: {
        Value* row = tables_[c.target]->find_mut(c.key);
        assert(row);
        if (text_fields_[c.target][c.field]) release(as_ptr<TextObj>(row[c.field]));
        row[c.field] = c.old;
        break;
      }
      case Change::Kind::SetVar:
        if (text_var(c.target)) release(as_ptr<TextObj>(vars_[c.target]));
        vars_[c.target] = c.old;
        break;
      case Change::Kind::Insert: {
        scratch.resize(tables_[c.target]->layout().slots);
        bool erased = tables_[c.target]->erase(c.key, scratch.data());
        assert(erased);
        (void)erased;
        release_row(c.target, scratch.data());
        break;
      }
      case Change::Kind::Remove: {
        bool inserted = tables_[c.target]->insert(c.key, saved_rows_.data() + c.saved_row);
        assert(inserted);
        (void)inserted;
        saved_rows_.resize(c.saved_row);
        break;
      }
      case Change::Kind::Replace: {
        Value* row = tables_[c.target]->find_mut(c.key);
        assert(row);
        release_row(c.target, row);
        uint32_t n = tables_[c.target]->layout().slots;
        std::memcpy(row, saved_rows_.data() + c.saved_row, n * sizeof(Value));
        saved_rows_.resize(c.saved_row);
        break;
      }
    }
    release(c.key.text);
  }
}

void State::commit() {
  for (const Change& c : changes_) {
    switch (c.kind) {
      case Change::Kind::SetField:
        if (text_fields_[c.target][c.field]) release(as_ptr<TextObj>(c.old));
        break;
      case Change::Kind::SetVar:
        if (text_var(c.target)) release(as_ptr<TextObj>(c.old));
        break;
      case Change::Kind::Insert: break;
      case Change::Kind::Remove:
      case Change::Kind::Replace: release_row(c.target, saved_rows_.data() + c.saved_row); break;
    }
    release(c.key.text);
  }
  changes_.clear();
  saved_rows_.clear();
}

}  // namespace aup::vm

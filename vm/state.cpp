#include "vm/state.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>

namespace aup::vm {

// A table whose rows have `texts.size()` slots (texts[i]: slot i holds a
// text), keyed by `key_fields`.
void State::add_table(const std::vector<uint32_t>& key_fields, std::vector<bool> texts) {
  RowLayout layout;
  layout.slots = static_cast<uint32_t>(texts.size());
  for (uint32_t i = 0; i < texts.size(); ++i) {
    if (texts[i]) layout.text_slots.push_back(i);
  }
  for (uint32_t f : key_fields) {
    if (texts[f]) layout.key.text_mask |= 1u << layout.key.fields.size();
    layout.key.fields.push_back(f);
  }
  tables_.push_back(std::make_unique<BTree>(std::move(layout)));
  text_fields_.push_back(std::move(texts));
}

State::State(const Module& m) : module_(m) {
  for (const TableDesc& t : m.tables) {
    std::vector<bool> texts;
    for (const FieldDesc& f : m.records[t.record].fields) texts.push_back(f.type == kTypeText);
    add_table(t.key_fields, std::move(texts));
  }
  for (const SystemTableShape& shape : kSystemTables) {
    std::vector<bool> texts;
    for (uint32_t f = 0; f < shape.fields; ++f) texts.push_back(shape.types[f] == kTypeText);
    add_table({shape.key_field}, std::move(texts));
  }
  setup_indexes();
  for (const KeySpec& spec : entry_specs_) {
    RowLayout layout;
    layout.slots = 1;
    uint32_t t = module_.indexes[indexes_.size()].table;
    if (tables_[t]->layout().text_key()) layout.text_slots.push_back(0);
    layout.key = spec;
    layout.encoded_key = true;
    indexes_.push_back(std::make_unique<BTree>(std::move(layout)));
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
  assert(roots.size() == live.tree_count() && vars_.size() == live.vars_.size());
  size_t tables = live.tables_.size();
  for (size_t t = 0; t < tables; ++t) tables_.push_back(std::make_unique<BTree>(*live.tables_[t], roots[t]));
  for (size_t i = 0; i < live.indexes_.size(); ++i) {
    indexes_.push_back(std::make_unique<BTree>(*live.indexes_[i], roots[tables + i]));
  }
  table_indexes_ = live.table_indexes_;
  indexed_ = live.indexed_;
  entry_specs_ = live.entry_specs_;
}

// Per index its entry key (the index fields, then the primary key's
// fields not among them), and per table which indexes and fields it has.
void State::setup_indexes() {
  // Sized for every table, the system tables too (which have no indexes):
  // rollback asks any table.
  table_indexes_.assign(tables_.size(), {});
  for (uint32_t t = 0; t < tables_.size(); ++t) indexed_.emplace_back(text_fields_[t].size(), false);
  for (uint32_t i = 0; i < module_.indexes.size(); ++i) {
    const IndexDesc& d = module_.indexes[i];
    KeySpec spec;
    auto add = [&](uint32_t f) {
      for (uint32_t g : spec.fields) {
        if (g == f) return;
      }
      if (text_fields_[d.table][f]) spec.text_mask |= 1u << spec.fields.size();
      spec.fields.push_back(f);
    };
    for (uint32_t f : d.fields) {
      add(f);
      indexed_[d.table][f] = true;
    }
    for (uint32_t f : module_.tables[d.table].key_fields) add(f);
    entry_specs_.push_back(std::move(spec));
    table_indexes_[d.table].push_back(i);
  }
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

void State::note_set_field(uint32_t t, const Key& k, uint32_t field, Value old, BTree::Pos where) {
  assert(!view_);
  assert(!where.leaf || tables_[t]->find_in_leaf(where, k));
  changes_.push_back(Change{Change::Kind::SetField, t, field, old, journal_key(k), 0, where, tables_[t]->node_epoch()});
}

void State::note_set_var(uint32_t v, Value old) {
  assert(!view_);
  changes_.push_back(Change{Change::Kind::SetVar, v, 0, old, Key{}, 0});
}

void State::note_insert(uint32_t t, const Key& k, BTree::Pos where) {
  assert(!view_);
  assert(!where.leaf || tables_[t]->find_in_leaf(where, k));
  changes_.push_back(Change{Change::Kind::Insert, t, 0, 0, journal_key(k), 0, where, tables_[t]->node_epoch()});
}

void State::note_remove(uint32_t t, const Key& k, const Value* old_row) {
  assert(!view_);
  changes_.push_back(Change{Change::Kind::Remove, t, 0, 0, journal_key(k), save_row(t, old_row)});
}

void State::note_replace(uint32_t t, const Key& k, const Value* old_row, BTree::Pos where) {
  assert(!view_);
  assert(!where.leaf || tables_[t]->find_in_leaf(where, k));
  changes_.push_back(
      Change{Change::Kind::Replace, t, 0, 0, journal_key(k), save_row(t, old_row), where, tables_[t]->node_epoch()});
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
        bool indexed = indexed_[c.target][c.field];
        if (indexed) index_drop(c.target, row, c.field);
        if (text_fields_[c.target][c.field]) release(as_ptr<TextObj>(row[c.field]));
        row[c.field] = c.old;
        if (indexed) index_add(c.target, row, c.key, c.field);
        break;
      }
      case Change::Kind::SetVar:
        if (text_var(c.target)) release(as_ptr<TextObj>(vars_[c.target]));
        vars_[c.target] = c.old;
        break;
      case Change::Kind::Insert: {
        scratch.resize(tables_[c.target]->layout().slots);
        if (has_indexes(c.target)) index_drop(c.target, tables_[c.target]->find(c.key));
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
        if (has_indexes(c.target)) index_add(c.target, saved_rows_.data() + c.saved_row, c.key);
        saved_rows_.resize(c.saved_row);
        break;
      }
      case Change::Kind::Replace: {
        Value* row = tables_[c.target]->find_mut(c.key);
        assert(row);
        if (has_indexes(c.target)) index_drop(c.target, row);
        release_row(c.target, row);
        uint32_t n = tables_[c.target]->layout().slots;
        std::memcpy(row, saved_rows_.data() + c.saved_row, n * sizeof(Value));
        if (has_indexes(c.target)) index_add(c.target, row, c.key);
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

// ---- secondary indexes

Key State::entry_row_key(uint32_t i, const Value* entry) const {
  uint32_t t = module_.indexes[i].table;
  if (tables_[t]->layout().text_key()) return text_key(as_ptr<TextObj>(entry[0]));
  return num_key(as_num(entry[0]));
}

namespace {

// The encoding of `count` of a row's fields (spec's first `count`), as a
// heap text key.
Key encoded_fields(const KeySpec& spec, size_t count, const Value* row) {
  std::array<uint64_t, 2 * kMaxKeyFields> parts;
  for (size_t c = 0; c < count; ++c) parts[c] = row[spec.fields[c]];
  uint32_t n = static_cast<uint32_t>(count);
  uint32_t mask = spec.text_mask & ((n >= 32 ? 0u : (1u << n)) - 1u);
  return text_key(encoded_key_text(parts.data(), n, mask));
}

}  // namespace

Key State::entry_key(uint32_t i, const Value* row) const {
  const KeySpec& spec = entry_specs_[i];
  return encoded_fields(spec, spec.fields.size(), row);
}

void State::index_add(uint32_t t, const Value* row, const Key& pk, uint32_t field) {
  for (uint32_t i : table_indexes_[t]) {
    if (field != kAllFields && !holds(i, field)) continue;
    Key k = entry_key(i, row);
    // The tree takes over a reference to the key's text in the slot.
    Value slot = pk.text ? ptr_value(pk.text) : num_value(order_num(pk.ord));
    retain(pk.text);
    bool inserted = indexes_[i]->insert(k, &slot);
    // Entries hold the primary key: two with one key is a broken index.
    assert(inserted);
    (void)inserted;
    release(k.text);
  }
}

void State::index_drop(uint32_t t, const Value* row, uint32_t field) {
  for (uint32_t i : table_indexes_[t]) {
    if (field != kAllFields && !holds(i, field)) continue;
    Key k = entry_key(i, row);
    Value slot = 0;
    bool erased = indexes_[i]->erase(k, &slot);
    // A row without its entry: the index has lost track of it.
    assert(erased);
    (void)erased;
    if (tables_[t]->layout().text_key()) release(as_ptr<TextObj>(slot));
    release(k.text);
  }
}

bool State::holds(uint32_t i, uint32_t field) const {
  for (uint32_t f : module_.indexes[i].fields) {
    if (f == field) return true;
  }
  return false;
}

int State::unique_conflict(uint32_t t, const Value* row, const Key& pk, uint32_t field, Key* other) const {
  for (uint32_t i : table_indexes_[t]) {
    const IndexDesc& d = module_.indexes[i];
    if (!d.unique || (field != kAllFields && !holds(i, field))) continue;
    Key lo = encoded_fields(entry_specs_[i], d.fields.size(), row);
    // The bound past every entry with these fields, made at its length.
    TextObj* hi = heap_text(lo.text->view().substr(0, prefix_end_length(lo.text->view())));
    prefix_end(hi->bytes, hi->len);
    Key hk = text_key(hi);
    const BTree& tree = *indexes_[i];
    BTree::Cursor c;
    c.seek(tree, &lo);
    int found = -1;
    for (; c.valid() && key_less(c.key(), hk); c.next(tree)) {
      Key row_key = entry_row_key(i, tree.row_at(c.pos()));
      if (key_cmp(row_key, pk) != 0) {
        *other = row_key;
        found = static_cast<int>(i);
        break;
      }
    }
    release(lo.text);
    release(hi);
    if (found >= 0) return found;
  }
  return -1;
}

// A table's key as messages show it: `5`, `"x"`, `(1, "a")`.
std::string State::key_text(uint32_t t, const Key& k) const {
  const KeySpec& spec = tables_[t]->layout().key;
  if (spec.composite()) return describe_key(k.text->view(), static_cast<uint32_t>(spec.fields.size()), spec.text_mask);
  uint64_t part = k.text ? ptr_value(k.text) : num_value(order_num(k.ord));
  std::string bytes(key_bytes(&part, 1, spec.text_mask), '\0');
  encode_key(&part, 1, spec.text_mask, bytes.data());
  std::string one = describe_key(bytes, 1, spec.text_mask);
  return one.substr(1, one.size() - 2);  // without the tuple's parentheses
}

std::string State::conflict_text(uint32_t i, const Value* row) const {
  const IndexDesc& d = module_.indexes[i];
  uint32_t n = static_cast<uint32_t>(d.fields.size());
  Key k = encoded_fields(entry_specs_[i], n, row);
  std::string value = describe_key(k.text->view(), n, entry_specs_[i].text_mask);
  release(k.text);
  return fmt::format("unique index `{}` of `{}` already has {}", d.name, module_.tables[d.table].name, value);
}

bool State::rebuild_indexes(std::string& error, const std::function<void(uint32_t)>& before) {
  for (uint32_t i = 0; i < indexes_.size(); ++i) {
    if (before) before(i);
    if (!rebuild_index(i, error)) return false;
  }
  return true;
}

namespace {
// An index entry while the index is rebuilt.
struct RebuildEntry {
  Key key;
  Key head;  // unique: the index fields alone
  Key row;
};

// The first 16 bytes of an encoded key, big-endian (zeros past its end),
// and where its entry is: sorted on these, entries that tie on them (a
// TPC-C customer's last name fills the first 8 after the warehouse and
// district) are the few whose texts are compared.
struct SortPrefix {
  uint64_t hi;
  uint64_t lo;
  size_t at;
};

uint64_t be_word(const TextObj* t, uint32_t from) {
  uint64_t w = 0;
  for (uint32_t b = 0; b < 8 && from + b < t->len; ++b) {
    w |= uint64_t{static_cast<unsigned char>(t->bytes[from + b])} << (56 - 8 * b);
  }
  return w;
}

// The entries' order by key (encoded keys: their bytes' order, as the
// tree's, vm/key.h), as positions in `all`.
std::vector<SortPrefix> key_order(const std::vector<RebuildEntry>& all) {
  std::vector<SortPrefix> order(all.size());
  for (size_t j = 0; j < all.size(); ++j) {
    const TextObj* t = all[j].key.text;
    order[j] = SortPrefix{be_word(t, 0), be_word(t, 8), j};
  }
  std::sort(order.begin(), order.end(), [&all](const SortPrefix& a, const SortPrefix& b) {
    if (a.hi != b.hi) return a.hi < b.hi;
    if (a.lo != b.lo) return a.lo < b.lo;
    return compare(all[a.at].key.text, all[b.at].key.text) < 0;
  });
  return order;
}
}  // namespace

// The entries are collected, sorted, and the tree built from them bottom
// up (no descent per entry). In that order equal values of a unique index
// sit side by side: the index fields' encoding is a prefix of the entry's.
bool State::rebuild_index(uint32_t i, std::string& error) {
  const IndexDesc& d = module_.indexes[i];
  const BTree& table = *tables_[d.table];
  BTree& tree = *indexes_[i];
  assert(tree.size() == 0);
  std::vector<RebuildEntry> all;
  all.reserve(table.size());
  uint32_t n = static_cast<uint32_t>(d.fields.size());
  table.for_each(table.root(), [&](const Key& k, const uint64_t* row) {
    all.push_back(RebuildEntry{entry_key(i, row), d.unique ? encoded_fields(entry_specs_[i], n, row) : Key{}, k});
  });
  const std::vector<SortPrefix> order = key_order(all);
  bool ok = true;
  BTree::Builder build(tree);
  for (size_t j = 0; j < order.size(); ++j) {
    RebuildEntry& e = all[order[j].at];
    const RebuildEntry* prev = j > 0 ? &all[order[j - 1].at] : nullptr;
    if (ok && d.unique && prev && key_cmp(e.head, prev->head) == 0) {
      error = fmt::format("unique index `{}` of `{}`: the rows with keys {} and {} both have {}", d.name,
                          module_.tables[d.table].name, key_text(d.table, prev->row), key_text(d.table, e.row),
                          describe_key(e.head.text->view(), n, entry_specs_[i].text_mask));
      ok = false;
    }
    if (ok) {
      Value slot = e.row.text ? ptr_value(e.row.text) : num_value(order_num(e.row.ord));
      retain(e.row.text);
      // Entries hold the primary key, so no two are equal.
      bool appended = build.append(e.key, &slot);
      assert(appended);
      (void)appended;
    }
  }
  for (RebuildEntry& e : all) {
    release(e.key.text);
    release(e.head.text);
  }
  return ok;
}

}  // namespace aup::vm

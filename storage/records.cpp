#include "storage/records.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cassert>
#include <string>

#include "storage/codec.h"
#include "storage/key_values.h"

namespace aup::storage {

using vm::BTree;
using vm::Key;

namespace {
// The slot of a touched row: every bit of the key's order image must reach
// the low bits the table's mask keeps. A number's image holds a whole
// number's bits at the top (1000 is 0x408F4 followed by 44 zero bits), so
// a multiply alone, whose low bits see only the input's low bits, put
// every small whole-number key of a batch in a handful of slots: probing
// then took 15% of a batch's CPU once a batch touched thousands of rows.
// The mix is MurmurHash3's 64-bit finalizer.
size_t key_hash(uint32_t table, const Key& key) {
  uint64_t h = key.ord ^ (uint64_t{table} << 56);
  if (key.text) h ^= XXH3_64bits(key.text->bytes, key.text->len);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return static_cast<size_t>(h);
}

// A row's key as a record holds it: its key fields' values in key order.
void write_row_key(Encoder& g, const TableSchema& ts, const uint64_t* row) {
  for (uint32_t k : ts.key_fields) g.value(ts.fields[k].type, row[k]);
}
}  // namespace

void BatchEncoder::grow_slots() {
  slots_.assign(std::max<size_t>(64, slots_.size() * 2), 0);
  size_t mask = slots_.size() - 1;
  for (size_t i = 0; i < used_; ++i) {
    size_t h = key_hash(touched_[i].table, touched_[i].key) & mask;
    while (slots_[h]) h = (h + 1) & mask;
    slots_[h] = static_cast<uint32_t>(i + 1);
    touched_[i].slot = static_cast<uint32_t>(h);
  }
}

BatchEncoder::Touched& BatchEncoder::touch(uint32_t table, const Key& key, bool existed_before) {
  if ((used_ + 1) * 2 > slots_.size()) grow_slots();
  size_t mask = slots_.size() - 1;
  size_t h = key_hash(table, key) & mask;
  for (; slots_[h]; h = (h + 1) & mask) {
    Touched& t = touched_[slots_[h] - 1];
    if (t.table == table && vm::key_cmp(t.key, key) == 0) return t;
  }
  if (used_ == touched_.size()) touched_.emplace_back();
  Touched& t = touched_[used_];
  t.table = table;
  t.slot = static_cast<uint32_t>(h);
  t.key = key;
  vm::retain(key.text);
  // The first change to a row says whether it existed before the batch.
  t.existed_before = existed_before;
  t.rewritten = false;
  t.fields.clear();
  slots_[h] = static_cast<uint32_t>(++used_);
  return t;
}

void BatchEncoder::note(Op op, uint32_t table, const Key& key, uint32_t field, Where where) {
  // Notes come before the encoding: a note after it would be lost; and a
  // change to a table the store does not keep (the key tables of a store
  // that keeps no keys) would be lost too: nothing may make one.
  assert(!encoded_ && table < schema_.tables.size());
  Touched& t = touch(table, key, op != Op::Insert);
  // The last change says whether the row is there, and where it was left.
  t.present = op != Op::Remove;
  t.where = where;
  switch (op) {
    case Op::Insert:
    case Op::Replace: t.rewritten = true; break;
    case Op::Set:
      if (std::find(t.fields.begin(), t.fields.end(), field) == t.fields.end()) t.fields.push_back(field);
      break;
    case Op::Remove: break;
  }
}

void BatchEncoder::note_var(uint32_t var) {
  assert(!encoded_ && var < schema_.vars.size());
  if (std::find(vars_.begin(), vars_.end(), var) == vars_.end()) vars_.push_back(var);
}

void BatchEncoder::clear() {
  for (size_t i = 0; i < used_; ++i) {
    Touched& t = touched_[i];
    vm::release(t.key.text);
    t.key = Key{};
    slots_[t.slot] = 0;
  }
  used_ = 0;
  vars_.clear();
  encoded_ = false;
}

// Whether a touched row has a net change to write, given its final row
// (null: not in the table now): a row touched without a change, or added
// and removed within the batch, has none.
bool BatchEncoder::has_change(const Touched& r, const uint64_t* row) {
  return row ? r.rewritten || !r.fields.empty() : r.existed_before;
}

// One touched row's net change: a put of the row rewritten, a set of the
// fields changed, or a remove of a row that was there before. A removed
// row's fields are gone: its key is written from the tree's key (`spec`,
// the tree's), read back into its values.
void BatchEncoder::write_record(Encoder& g, const TableSchema& ts, const vm::KeySpec& spec, const Touched& r,
                                const uint64_t* row) {
  assert(has_change(r, row));
  if (row && r.rewritten) {
    g.u8(1);
    write_row_key(g, ts, row);
    for (uint32_t f = 0; f < ts.fields.size(); ++f) {
      if (!ts.is_key_field(f)) g.value(ts.fields[f].type, row[f]);
    }
  } else if (row) {
    g.u8(2);
    write_row_key(g, ts, row);
    g.varint(r.fields.size());
    for (uint32_t f : r.fields) {
      g.varint(f);
      g.value(ts.fields[f].type, row[f]);
    }
  } else {
    g.u8(3);
    write_key_values(g, spec, r.key);
  }
}

// A touched row's final values in `tree` (null: not there). Where its last
// change left it, while the tree's node epoch says that leaf is still the
// live tree's (vm/btree.h) and the leaf still holds the key; else found
// again. Either way it is the row find() returns (checked where assertions
// run: a wrong row here is wrong bytes in the log).
const uint64_t* BatchEncoder::final_row(const BTree& tree, const Touched& r) {
  const uint64_t* row = nullptr;
  if (r.present) {
    if (r.where.pos.leaf && r.where.epoch == tree.node_epoch()) row = tree.find_in_leaf(r.where.pos, r.key);
    if (row) {
      ++in_place_;
    } else {
      row = tree.find(r.key);
      ++found_again_;
    }
    assert(row);  // every change is noted: a row not removed last is there
  }
  // Assertions are on in every build: a find for every row would undo what
  // reading in place saves, so one row in 64 is checked against find()
  // (tests/storage/records_test.cpp and the B+tree's random test check
  // every position).
  assert((++checked_ & 63) != 0 || row == tree.find(r.key));
  return row;
}

// Grouped by table, in table order; within a table, first-touch order.
// Each row is read once; the changed ones are kept with their rows, to be
// counted and then written: nothing changes the trees while this runs, so
// the rows stay where they are. The buffers are members, so a batch no larger than one
// before allocates nothing here (a fresh one per batch grew the heap, and
// each new page was a fault to clear).
void BatchEncoder::encode(Tables& tables, std::vector<uint8_t>& out, std::vector<uint64_t>& bytes_per_table) {
  assert(!encoded_);  // encoded twice, the batch would be written twice
  assert(bytes_per_table.size() == schema_.tables.size() + 1);
  encoded_ = true;
  Encoder e(out);
  by_table_.resize(schema_.tables.size());
  for (std::vector<uint32_t>& rows : by_table_) rows.clear();
  for (size_t i = 0; i < used_; ++i) by_table_[touched_[i].table].push_back(static_cast<uint32_t>(i));
  for (uint32_t t = 0; t < by_table_.size(); ++t) {
    if (by_table_[t].empty()) continue;
    const TableSchema& ts = schema_.tables[t];
    BTree& tree = tables.table(t);
    changed_.clear();
    for (uint32_t i : by_table_[t]) {
      const uint64_t* row = final_row(tree, touched_[i]);
      if (has_change(touched_[i], row)) changed_.push_back({i, row});
    }
    if (changed_.empty()) continue;
    size_t before = out.size();
    e.varint(t + 1);
    e.varint(changed_.size());
    for (const Changed& c : changed_) write_record(e, ts, tree.layout().key, touched_[c.touched], c.row);
    bytes_per_table[t] += out.size() - before;
  }
  if (!vars_.empty()) {
    size_t before = out.size();
    e.varint(0);
    e.varint(vars_.size());
    for (uint32_t v : vars_) {
      e.varint(v);
      e.value(schema_.vars[v].type, tables.var(v));
    }
    bytes_per_table[schema_.tables.size()] += out.size() - before;
  }
}

// ---- replay ---------------------------------------------------------------------

SchemaMap map_schema(const Schema& stored, const Schema& target) {
  SchemaMap m;
  m.target = &target;
  for (const TableSchema& st : stored.tables) {
    int ti = target.table_index(st.name);
    m.table.push_back(ti);
    std::vector<uint32_t> fields;
    for (const FieldSchema& sf : st.fields) {
      uint32_t j = 0;
      if (ti >= 0) {
        const TableSchema& tt = target.tables[static_cast<size_t>(ti)];
        while (j < tt.fields.size() && tt.fields[j].name != sf.name) ++j;
      }
      fields.push_back(j);
    }
    std::vector<uint32_t> unfilled;
    if (ti >= 0) {
      const TableSchema& tt = target.tables[static_cast<size_t>(ti)];
      for (uint32_t j = 0; j < tt.fields.size(); ++j) {
        if (tt.fields[j].type == FieldType::Text && std::find(fields.begin(), fields.end(), j) == fields.end()) {
          unfilled.push_back(j);
        }
      }
    }
    m.field.push_back(std::move(fields));
    m.unfilled_texts.push_back(std::move(unfilled));
  }
  for (const TableSchema& tt : target.tables) {
    std::vector<uint64_t> defaults;
    for (const FieldSchema& f : tt.fields) {
      defaults.push_back(f.type == FieldType::Num ? std::bit_cast<uint64_t>(f.default_value.num)
                         : f.type == FieldType::Bool ? (f.default_value.boolean ? 1u : 0u)
                                                     : 0u);
    }
    m.defaults.push_back(std::move(defaults));
  }
  for (const VarSchema& sv : stored.vars) m.var.push_back(target.var_index(sv.name));
  return m;
}

namespace {

Status bad(const char* what, size_t at) {
  return Status::error(fmt::format("a log entry does not decode: {} at payload byte {}", what, at));
}

void release_slot(FieldType t, uint64_t v) {
  if (t == FieldType::Text) vm::release(reinterpret_cast<vm::TextObj*>(v));
}

// One entry's payload applied: its groups in order, each to its target
// table or the vars, or only read past where that table's image covers
// the entry. The record steps return what does not decode (a literal) or
// null, so the loop over records builds no Status until something fails.
class PayloadApplier {
 public:
  PayloadApplier(std::span<const uint8_t> payload, const Schema& stored, const SchemaMap& map, uint64_t seq,
                 const std::vector<uint64_t>& covered, Tables& tables, std::vector<uint64_t>* bytes)
      : d_(payload.data(), payload.size()), stored_(stored), map_(map), target_(*map.target), seq_(seq),
        covered_(covered), tables_(tables), bytes_(bytes), follows_(tables.follows_rows()) {}
  Status run();

 private:
  // The table group (or vars group, at target_.tables.size()) just read:
  // where it went, for `bytes`.
  void count_group(int target, size_t start) {
    if (bytes_ && target >= 0) (*bytes_)[static_cast<size_t>(target)] += d_.offset() - start;
  }
  const char* vars_group(uint64_t count, bool skip);
  const char* skip_records(const TableSchema& ts, uint64_t count);
  const char* table_group(uint64_t stored_table, size_t target_table, uint64_t count);
  // The table group being applied: the layout it was written in, the
  // target's, and the columns between them.
  struct Group {
    const TableSchema& ts;                  // stored
    const TableSchema& tts;                 // target
    const std::vector<uint32_t>& fmap;      // stored field -> target field
    const std::vector<uint64_t>& defaults;  // a target row of defaults
    const std::vector<uint32_t>& unfilled_texts;  // target text fields fmap never names
    vm::BTree& tree;
    uint32_t target;  // the target table's number
  };
  const char* put(const Group& g);
  const char* set(const Group& g);
  const char* set_fields(const Group& g, uint64_t* row);
  const char* remove(const Group& g);
  // A set or remove's key: its values in key order into `parts` (texts
  // new heap texts, for release_key); false if they do not decode.
  bool read_key(const TableSchema& ts, uint64_t* parts);
  static void release_key(const TableSchema& ts, const uint64_t* parts);
  const char* key_field_set(const TableSchema& ts, uint64_t f);

  Decoder d_;
  const Schema& stored_;
  const SchemaMap& map_;
  const Schema& target_;
  uint64_t seq_;
  const std::vector<uint64_t>& covered_;
  Tables& tables_;
  std::vector<uint64_t>* bytes_;
  bool follows_;  // tables_.follows_rows()
  std::vector<uint64_t> row_;  // a put's row being built, a removed row's slots
  std::string why_;            // a refusal that names what it refuses
};

Status PayloadApplier::run() {
  size_t group_start = 0;
  int group_target = -1;  // -1: nothing to count (no group yet, or one an image covers)
  while (!d_.done() && d_.ok()) {
    count_group(group_target, group_start);
    group_start = d_.offset();
    uint64_t which = d_.varint();
    uint64_t count = d_.varint();
    if (!d_.ok()) return bad("truncated group", d_.offset());
    const char* failed = nullptr;
    if (which == 0) {
      bool skip = covered_[target_.tables.size()] >= seq_;
      group_target = skip ? -1 : static_cast<int>(target_.tables.size());
      failed = vars_group(count, skip);
    } else {
      uint64_t st = which - 1;
      if (st >= stored_.tables.size()) return bad("table out of range", d_.offset());
      int tt = map_.table[st];
      bool skip = tt < 0 || covered_[static_cast<size_t>(tt)] >= seq_;
      group_target = skip ? -1 : tt;
      failed = skip ? skip_records(stored_.tables[st], count) : table_group(st, static_cast<size_t>(tt), count);
    }
    if (failed) return bad(failed, d_.offset());
  }
  if (!d_.ok()) return bad("truncated", d_.offset());
  count_group(group_target, group_start);
  return Status::good();
}

const char* PayloadApplier::vars_group(uint64_t count, bool skip) {
  for (uint64_t i = 0; i < count && d_.ok(); ++i) {
    uint64_t v = d_.varint();
    if (v >= stored_.vars.size()) return "var out of range";
    FieldType t = stored_.vars[v].type;
    if (skip || map_.var[v] < 0) {
      d_.skip(t);
      continue;
    }
    uint64_t value = d_.value(t);
    if (d_.ok()) tables_.set_var(static_cast<uint32_t>(map_.var[v]), value);
  }
  return nullptr;
}

// A group whose table an image covers (or that the module no longer has):
// read, checked, not applied.
const char* PayloadApplier::skip_records(const TableSchema& ts, uint64_t count) {
  for (uint64_t i = 0; i < count && d_.ok(); ++i) {
    uint8_t op = d_.u8();
    for (uint32_t k : ts.key_fields) d_.skip(ts.fields[k].type);
    if (op == 1) {
      for (uint32_t f = 0; f < ts.fields.size(); ++f) {
        if (!ts.is_key_field(f)) d_.skip(ts.fields[f].type);
      }
    } else if (op == 2) {
      uint64_t n = d_.varint();
      for (uint64_t k = 0; k < n && d_.ok(); ++k) {
        uint64_t f = d_.varint();
        if (f >= ts.fields.size()) return "field out of range";
        d_.skip(ts.fields[f].type);
      }
    } else if (op != 3) {
      return "unknown record kind";
    }
  }
  return nullptr;
}

const char* PayloadApplier::table_group(uint64_t stored_table, size_t target_table, uint64_t count) {
  const Group g{stored_.tables[stored_table],          target_.tables[target_table],
                map_.field[stored_table],            map_.defaults[target_table],
                map_.unfilled_texts[stored_table],   tables_.table(static_cast<uint32_t>(target_table)),
                static_cast<uint32_t>(target_table)};
  // Keys are made with the target tree's spec: the stored key's fields by
  // name, in the same order and of the same types (compare_schemas refuses
  // another key), so a key's values in key order encode alike in both.
  assert(g.tree.layout().key.fields.size() == g.ts.key_fields.size());
  for (uint64_t i = 0; i < count && d_.ok(); ++i) {
    const char* failed = nullptr;
    switch (d_.u8()) {
      case 1: failed = put(g); break;
      case 2: failed = set(g); break;
      case 3: failed = remove(g); break;
      default: return "unknown record kind";
    }
    if (failed) return failed;
  }
  return nullptr;
}

// A whole row, in the target's layout: fields the stored layout lacks
// keep their defaults. Inserts or replaces.
const char* PayloadApplier::put(const Group& g) {
  const TableSchema& ts = g.ts;
  const TableSchema& tts = g.tts;
  const std::vector<uint32_t>& fmap = g.fmap;
  // Every slot a stored field fills starts as its default number or bool,
  // or a null text, so filling it releases nothing; only the fields the
  // stored layout lacks take their default text (a heap text each, as a
  // row owns its texts). Making and releasing a default for every text
  // field was over a quarter of replaying a W=10 TPC-C store's log.
  row_.assign(g.defaults.begin(), g.defaults.end());
  for (uint32_t f : g.unfilled_texts) {
    row_[f] = reinterpret_cast<uint64_t>(vm::heap_text(tts.fields[f].default_value.text));
  }
  auto take = [&](uint32_t f) {
    assert(tts.fields[fmap[f]].type != FieldType::Text || row_[fmap[f]] == 0);  // each target field filled once
    row_[fmap[f]] = d_.value(ts.fields[f].type);
  };
  for (uint32_t k : ts.key_fields) take(k);
  for (uint32_t f = 0; f < ts.fields.size() && d_.ok(); ++f) {
    if (!ts.is_key_field(f)) take(f);
  }
  if (!d_.ok()) {
    for (uint32_t f = 0; f < tts.fields.size(); ++f) release_slot(tts.fields[f].type, row_[f]);
    return "truncated put";
  }
  vm::HeldKey key(g.tree.layout().key, row_.data());
  uint64_t* there = nullptr;
  // A row past the table's last (an append-only table's, as most puts a
  // replay meets) goes in at the right edge without a descent.
  if (!g.tree.append(key.key(), row_.data()) && !g.tree.insert(key.key(), row_.data())) {
    there = g.tree.find_mut(key.key());
    if (follows_) tables_.row_leaving(g.target, there);
    for (uint32_t f = 0; f < tts.fields.size(); ++f) release_slot(tts.fields[f].type, there[f]);
    std::copy(row_.begin(), row_.end(), there);
  } else if (follows_) {
    there = g.tree.find_mut(key.key());
  }
  if (follows_) tables_.row_entered(g.target, there);
  return nullptr;
}

bool PayloadApplier::read_key(const TableSchema& ts, uint64_t* parts) {
  for (size_t i = 0; i < ts.key_fields.size(); ++i) parts[i] = d_.value(ts.fields[ts.key_fields[i]].type);
  return d_.ok();
}

// A value that did not decode is 0, which release_slot leaves alone.
void PayloadApplier::release_key(const TableSchema& ts, const uint64_t* parts) {
  for (size_t i = 0; i < ts.key_fields.size(); ++i) release_slot(ts.fields[ts.key_fields[i]].type, parts[i]);
}

// A row's key never changes (the checker refuses it, so no batch writes
// it): a set of a key field would leave the row under a key it no longer
// holds.
const char* PayloadApplier::key_field_set(const TableSchema& ts, uint64_t f) {
  const std::string& name = ts.fields[f].name;
  if (!ts.composite_key()) {
    why_ = fmt::format("set of the key field `{}`", name);
  } else {
    size_t i = 0;
    while (ts.key_fields[i] != f) ++i;
    why_ = fmt::format("set of the key field `{}`, component {} of the key `{}`", name, i + 1, key_names(ts));
  }
  return why_.c_str();
}

// Some fields of an existing row.
const char* PayloadApplier::set(const Group& g) {
  const TableSchema& ts = g.ts;
  uint64_t parts[vm::kMaxKeyFields];
  bool whole = read_key(ts, parts);
  uint64_t* r = nullptr;
  if (whole) r = g.tree.find_mut(vm::HeldKey(g.tree.layout().key, parts, vm::HeldKey::From::Parts).key());
  release_key(ts, parts);
  if (!whole) return "truncated set";
  if (!r) return "set of a row that does not exist";
  if (follows_) tables_.row_leaving(g.target, r);
  const char* failed = set_fields(g, r);
  if (follows_) tables_.row_entered(g.target, r);
  return failed;
}

const char* PayloadApplier::set_fields(const Group& g, uint64_t* r) {
  const TableSchema& ts = g.ts;
  uint64_t n = d_.varint();
  for (uint64_t j = 0; j < n && d_.ok(); ++j) {
    uint64_t f = d_.varint();
    if (f >= ts.fields.size()) return "field out of range";
    if (ts.is_key_field(static_cast<uint32_t>(f))) return key_field_set(ts, f);
    uint64_t v = d_.value(ts.fields[f].type);
    if (!d_.ok()) break;
    uint32_t tf = g.fmap[f];
    release_slot(g.tts.fields[tf].type, r[tf]);
    r[tf] = v;
  }
  return nullptr;
}

const char* PayloadApplier::remove(const Group& g) {
  uint64_t parts[vm::kMaxKeyFields];
  bool whole = read_key(g.ts, parts);
  bool gone = false;
  if (whole) {
    row_.assign(g.tts.fields.size(), 0);
    if (follows_) {
      const uint64_t* r = g.tree.find(vm::HeldKey(g.tree.layout().key, parts, vm::HeldKey::From::Parts).key());
      if (r) tables_.row_leaving(g.target, r);
    }
    gone = g.tree.erase(vm::HeldKey(g.tree.layout().key, parts, vm::HeldKey::From::Parts).key(), row_.data());
  }
  release_key(g.ts, parts);
  if (!whole) return "truncated remove";
  if (!gone) return "remove of a row that does not exist";
  for (uint32_t f = 0; f < g.tts.fields.size(); ++f) release_slot(g.tts.fields[f].type, row_[f]);
  return nullptr;
}

}  // namespace

Status apply_payload(std::span<const uint8_t> payload, const Schema& stored, const SchemaMap& map,
                     uint64_t seq, const std::vector<uint64_t>& covered, Tables& tables,
                     std::vector<uint64_t>* bytes) {
  return PayloadApplier(payload, stored, map, seq, covered, tables, bytes).run();
}

Status summarize_payload(std::span<const uint8_t> payload, const Schema& stored, PayloadSummary& out) {
  Decoder d(payload.data(), payload.size());
  while (!d.done() && d.ok()) {
    size_t start = d.offset();
    uint64_t which = d.varint();
    uint64_t count = d.varint();
    PayloadSummary::Group g;
    if (which == 0) {
      g.vars = count;
      for (uint64_t i = 0; i < count && d.ok(); ++i) {
        uint64_t v = d.varint();
        if (v >= stored.vars.size()) return bad("var out of range", d.offset());
        d.skip(stored.vars[v].type);
      }
    } else {
      uint64_t st = which - 1;
      if (st >= stored.tables.size()) return bad("table out of range", d.offset());
      g.target = static_cast<int>(st);
      const TableSchema& ts = stored.tables[st];
      for (uint64_t i = 0; i < count && d.ok(); ++i) {
        uint8_t op = d.u8();
        for (uint32_t k : ts.key_fields) d.skip(ts.fields[k].type);
        if (op == 1) {
          ++g.puts;
          for (uint32_t f = 0; f < ts.fields.size(); ++f) {
            if (!ts.is_key_field(f)) d.skip(ts.fields[f].type);
          }
        } else if (op == 2) {
          ++g.sets;
          uint64_t n = d.varint();
          for (uint64_t k = 0; k < n && d.ok(); ++k) {
            uint64_t f = d.varint();
            if (f >= ts.fields.size()) return bad("field out of range", d.offset());
            d.skip(ts.fields[f].type);
          }
        } else if (op == 3) {
          ++g.removes;
        } else {
          return bad("unknown record kind", d.offset());
        }
      }
    }
    g.bytes = d.offset() - start;
    out.groups.push_back(g);
  }
  if (!d.ok()) return bad("truncated", d.offset());
  return Status::good();
}

std::string_view field_type_name(FieldType t) {
  switch (t) {
    case FieldType::Num: return "num";
    case FieldType::Text: return "text";
    case FieldType::Bool: return "bool";
  }
  return "?";
}

}  // namespace aup::storage

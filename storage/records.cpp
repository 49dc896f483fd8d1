#include "storage/records.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>

#include "storage/codec.h"

namespace aup::storage {

using vm::BTree;
using vm::Key;

namespace {
size_t key_hash(uint32_t table, const Key& key) {
  uint64_t h = (key.ord ^ table) * 0x9E3779B97F4A7C15ull;
  if (key.text) h ^= XXH3_64bits(key.text->bytes, key.text->len);
  return static_cast<size_t>(h ^ (h >> 29));
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

void BatchEncoder::note(Op op, uint32_t table, const Key& key, uint32_t field) {
  Touched& t = touch(table, key, op != Op::Insert);
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
}

void BatchEncoder::encode(Tables& tables, std::vector<uint8_t>& out, std::vector<uint64_t>& bytes_per_table) {
  Encoder e(out);
  // Group by table, in table order; within a table, first-touch order.
  std::vector<std::vector<size_t>> by_table(schema_.tables.size());
  for (size_t i = 0; i < used_; ++i) by_table[touched_[i].table].push_back(i);
  std::vector<uint8_t> group;
  for (uint32_t t = 0; t < by_table.size(); ++t) {
    if (by_table[t].empty()) continue;
    const TableSchema& ts = schema_.tables[t];
    BTree& tree = tables.table(t);
    group.clear();
    Encoder g(group);
    uint64_t count = 0;
    for (size_t i : by_table[t]) {
      const Touched& r = touched_[i];
      const uint64_t* row = tree.find(r.key);
      if (row && r.rewritten) {
        g.u8(1);
        g.value(ts.fields[ts.key_field].type, row[ts.key_field]);
        for (uint32_t f = 0; f < ts.fields.size(); ++f) {
          if (f != ts.key_field) g.value(ts.fields[f].type, row[f]);
        }
      } else if (row) {
        if (r.fields.empty()) continue;  // touched, nothing changed
        g.u8(2);
        g.value(ts.fields[ts.key_field].type, row[ts.key_field]);
        g.varint(r.fields.size());
        for (uint32_t f : r.fields) {
          g.varint(f);
          g.value(ts.fields[f].type, row[f]);
        }
      } else if (r.existed_before) {
        g.u8(3);
        if (ts.fields[ts.key_field].type == FieldType::Text) {
          g.text(r.key.text->view());
        } else {
          g.num(vm::order_num(r.key.ord));
        }
      } else {
        continue;  // added and removed within the batch
      }
      ++count;
    }
    if (count == 0) continue;
    size_t before = out.size();
    e.varint(t + 1);
    e.varint(count);
    out.insert(out.end(), group.begin(), group.end());
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

namespace {

Status bad(const char* what, size_t at) {
  return Status::error(fmt::format("a log entry does not decode: {} at payload byte {}", what, at));
}

void release_slot(FieldType t, uint64_t v) {
  if (t == FieldType::Text) vm::release(reinterpret_cast<vm::TextObj*>(v));
}

}  // namespace

Status apply_payload(std::span<const uint8_t> payload, const Schema& stored, const SchemaMap& map,
                     uint64_t seq, const std::vector<uint64_t>& covered, Tables& tables,
                     std::vector<uint64_t>* bytes) {
  Decoder d(payload.data(), payload.size());
  const Schema& target = *map.target;
  std::vector<uint64_t> row;
  size_t group_start = 0;
  int group_target = -1;  // -1: nothing to count (no group yet, or one an image covers)
  auto count_group = [&] {
    if (bytes && group_target >= 0) (*bytes)[static_cast<size_t>(group_target)] += d.offset() - group_start;
  };
  while (!d.done() && d.ok()) {
    count_group();
    group_start = d.offset();
    uint64_t which = d.varint();
    uint64_t count = d.varint();
    if (!d.ok()) return bad("truncated group", d.offset());
    if (which == 0) {
      bool skip = covered[target.tables.size()] >= seq;
      group_target = skip ? -1 : static_cast<int>(target.tables.size());
      for (uint64_t i = 0; i < count && d.ok(); ++i) {
        uint64_t v = d.varint();
        if (v >= stored.vars.size()) return bad("var out of range", d.offset());
        FieldType t = stored.vars[v].type;
        if (skip || map.var[v] < 0) {
          d.skip(t);
          continue;
        }
        uint64_t value = d.value(t);
        if (d.ok()) tables.set_var(static_cast<uint32_t>(map.var[v]), value);
      }
      continue;
    }
    uint64_t st = which - 1;
    if (st >= stored.tables.size()) return bad("table out of range", d.offset());
    const TableSchema& ts = stored.tables[st];
    int tt = map.table[st];
    bool skip = tt < 0 || covered[static_cast<size_t>(tt)] >= seq;
    group_target = skip ? -1 : tt;
    const TableSchema* target_ts = tt < 0 ? nullptr : &target.tables[static_cast<size_t>(tt)];
    FieldType kt = ts.fields[ts.key_field].type;
    for (uint64_t i = 0; i < count && d.ok(); ++i) {
      uint8_t op = d.u8();
      if (skip) {
        d.skip(kt);
        if (op == 1) {
          for (uint32_t f = 0; f < ts.fields.size(); ++f) {
            if (f != ts.key_field) d.skip(ts.fields[f].type);
          }
        } else if (op == 2) {
          uint64_t n = d.varint();
          for (uint64_t k = 0; k < n && d.ok(); ++k) {
            uint64_t f = d.varint();
            if (f >= ts.fields.size()) return bad("field out of range", d.offset());
            d.skip(ts.fields[f].type);
          }
        } else if (op != 3) {
          return bad("unknown record kind", d.offset());
        }
        continue;
      }
      BTree& tree = tables.table(static_cast<uint32_t>(tt));
      const std::vector<uint32_t>& fmap = map.field[st];
      uint32_t tkey = fmap[ts.key_field];
      switch (op) {
        case 1: {  // put: a whole row, in the target's layout
          row.assign(map.defaults[static_cast<size_t>(tt)].begin(), map.defaults[static_cast<size_t>(tt)].end());
          // Texts in the defaults are shared: each row takes its own reference.
          for (uint32_t f = 0; f < target_ts->fields.size(); ++f) {
            if (target_ts->fields[f].type == FieldType::Text) {
              row[f] = reinterpret_cast<uint64_t>(vm::heap_text(target_ts->fields[f].default_value.text));
            }
          }
          release_slot(target_ts->fields[tkey].type, row[tkey]);
          row[tkey] = d.value(kt);
          for (uint32_t f = 0; f < ts.fields.size() && d.ok(); ++f) {
            if (f == ts.key_field) continue;
            release_slot(target_ts->fields[fmap[f]].type, row[fmap[f]]);
            row[fmap[f]] = d.value(ts.fields[f].type);
          }
          if (!d.ok()) {
            for (uint32_t f = 0; f < target_ts->fields.size(); ++f) release_slot(target_ts->fields[f].type, row[f]);
            return bad("truncated put", d.offset());
          }
          Key k = key_of_slot(kt, row[tkey]);
          if (!tree.insert(k, row.data())) {
            uint64_t* old = tree.find_mut(k);
            for (uint32_t f = 0; f < target_ts->fields.size(); ++f) release_slot(target_ts->fields[f].type, old[f]);
            std::copy(row.begin(), row.end(), old);
          }
          break;
        }
        case 2: {  // set
          uint64_t kv = d.value(kt);
          Key k = key_of_slot(kt, kv);
          uint64_t* r = d.ok() ? tree.find_mut(k) : nullptr;
          release_slot(kt, kv);
          if (!d.ok()) return bad("truncated set", d.offset());
          if (!r) return bad("set of a row that does not exist", d.offset());
          uint64_t n = d.varint();
          for (uint64_t j = 0; j < n && d.ok(); ++j) {
            uint64_t f = d.varint();
            if (f >= ts.fields.size()) return bad("field out of range", d.offset());
            // A row's key never changes (the checker refuses it, so no
            // batch writes it): a set of it would leave the row under a
            // key it no longer holds.
            if (f == ts.key_field) return bad("set of the key field", d.offset());
            uint64_t v = d.value(ts.fields[f].type);
            if (!d.ok()) break;
            uint32_t tf = fmap[f];
            release_slot(target_ts->fields[tf].type, r[tf]);
            r[tf] = v;
          }
          break;
        }
        case 3: {  // remove
          uint64_t kv = d.value(kt);
          if (!d.ok()) return bad("truncated remove", d.offset());
          Key k = key_of_slot(kt, kv);
          row.assign(target_ts->fields.size(), 0);
          bool gone = tree.erase(k, row.data());
          release_slot(kt, kv);
          if (!gone) return bad("remove of a row that does not exist", d.offset());
          for (uint32_t f = 0; f < target_ts->fields.size(); ++f) release_slot(target_ts->fields[f].type, row[f]);
          break;
        }
        default: return bad("unknown record kind", d.offset());
      }
    }
  }
  if (!d.ok()) return bad("truncated", d.offset());
  count_group();
  return Status::good();
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
        d.skip(ts.fields[ts.key_field].type);
        if (op == 1) {
          ++g.puts;
          for (uint32_t f = 0; f < ts.fields.size(); ++f) {
            if (f != ts.key_field) d.skip(ts.fields[f].type);
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

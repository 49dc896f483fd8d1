#include "vm/interp.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "stdlib/builtins.h"

#if !defined(AUP_VM_SWITCH) && (defined(__GNUC__) || defined(__clang__))
#define AUP_COMPUTED_GOTO 1
#else
#define AUP_COMPUTED_GOTO 0
#endif

namespace aup::vm {

std::string_view error_code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::Failed: return "failed";
    case ErrorCode::NotFound: return "not_found";
    case ErrorCode::Duplicate: return "duplicate";
    case ErrorCode::StaleRow: return "stale_row";
    case ErrorCode::OutOfRange: return "out_of_range";
    case ErrorCode::NotFinite: return "not_finite";
    case ErrorCode::BadNumber: return "bad_number";
    case ErrorCode::Budget: return "budget";
  }
  return "failed";
}

namespace {

std::string temp_bytes_message() {
  return fmt::format("temporary values would pass {} MiB", kMaxTempBytes >> 20);
}

std::string number_text(double d) {
  if (std::isnan(d)) return "nan";  // whatever its sign bit
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, end);
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s.substr(0, 64)) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  if (s.size() > 64) out += "...";
  return out + "\"";
}

bool is_aggregate_type(const Module& m, uint32_t type) {
  TypeCode c = m.types[type].code;
  return c == TypeCode::Array || c == TypeCode::Record || c == TypeCode::Object;
}

}  // namespace

Vm::Vm(const Module& m, State& s) : module_(m), state_(&s) {
  // Every frame fits: kMaxCallDepth frames of at most kMaxRegisters each.
  regs_.resize(static_cast<size_t>(kMaxCallDepth + 1) * kMaxRegisters);
  frames_.reserve(kMaxCallDepth);
  for (const Function& f : m.functions) constants_.push_back(f.kvalues.data());
  for (const RecordDesc& r : m.records) {
    std::vector<uint32_t> aggs;
    std::vector<Value> defaults(r.fields.size(), 0);
    for (uint32_t i = 0; i < r.fields.size(); ++i) {
      const FieldDesc& f = r.fields[i];
      if (is_aggregate_type(m, f.type)) aggs.push_back(i);
      if (!f.has_default) continue;
      switch (f.default_value.kind) {
        case Constant::Kind::Num: defaults[i] = num_value(f.default_value.num); break;
        case Constant::Kind::Bool: defaults[i] = bool_value(f.default_value.boolean); break;
        case Constant::Kind::Text: {
          TextObj* t = heap_text(f.default_value.text);
          default_texts_.push_back(t);
          defaults[i] = ptr_value(t);
          break;
        }
      }
    }
    record_aggregates_.push_back(std::move(aggs));
    record_defaults_.push_back(std::move(defaults));
  }
  for (const ShapeDesc& shape : m.shapes) {
    std::vector<uint32_t> aggs;
    for (uint32_t i = 0; i < shape.types.size(); ++i) {
      if (is_aggregate_type(m, shape.types[i])) aggs.push_back(i);
    }
    shape_aggregates_.push_back(std::move(aggs));
  }
}

Vm::~Vm() {
  for (TextObj* t : default_texts_) release(t);
}

// ---------------------------------------------------------------------------
// values

RecObj* Vm::new_record(uint32_t record) {
  const RecordDesc& r = module_.records[record];
  uint32_t n = static_cast<uint32_t>(r.fields.size());
  auto* rec = static_cast<RecObj*>(arena_.alloc(offsetof(RecObj, fields) + std::max(n, 1u) * sizeof(Value)));
  rec->h = ObjHeader{ObjKind::Record, false};
  rec->count = static_cast<uint16_t>(n);
  rec->desc = record;
  if (n) std::memcpy(rec->fields, record_defaults_[record].data(), n * sizeof(Value));  // (an empty one has no data())
  // An array field's default is a fresh empty array.
  for (uint32_t i : record_aggregates_[record]) {
    if (r.fields[i].has_default) {
      rec->fields[i] = ptr_value(new_array(is_aggregate_type(module_, module_.types[r.fields[i].type].index)));
    }
  }
  return rec;
}

RecObj* Vm::new_object(uint32_t shape) {
  uint32_t n = static_cast<uint32_t>(module_.shapes[shape].names.size());
  auto* rec = static_cast<RecObj*>(arena_.alloc(offsetof(RecObj, fields) + std::max(n, 1u) * sizeof(Value)));
  rec->h = ObjHeader{ObjKind::Object, false};
  rec->count = static_cast<uint16_t>(n);
  rec->desc = shape;
  std::memset(rec->fields, 0, n * sizeof(Value));
  return rec;
}

ArrayObj* Vm::new_array(bool aggregate_items) {
  auto* a = arena_.make<ArrayObj>();
  a->h = ObjHeader{ObjKind::Array, false};
  a->aggregate_items = aggregate_items;
  a->len = a->cap = 0;
  a->items = nullptr;
  return a;
}

bool Vm::push(ArrayObj* a, Value v) {
  if (a->len == a->cap) {
    if (a->cap >= kMaxArrayItems) return false;
    uint32_t cap = std::min<uint32_t>(kMaxArrayItems, std::max<uint32_t>(8, a->cap * 2));
    auto* items = static_cast<Value*>(arena_.alloc(cap * sizeof(Value)));
    if (a->len) std::memcpy(items, a->items, a->len * sizeof(Value));
    a->items = items;  // the old buffer stays in the arena until it resets
    a->cap = cap;
  }
  a->items[a->len++] = v;
  return true;
}

// A private copy of an array, record or object. Its aggregate items now
// have two holders (the original and the copy), so they are marked shared.
Value Vm::copy_obj(Value v) {
  auto* h = as_ptr<ObjHeader>(v);
  if (h->kind == ObjKind::Array) {
    auto* a = as_ptr<ArrayObj>(v);
    ArrayObj* c = new_array(a->aggregate_items);
    c->cap = a->len;
    c->len = a->len;
    c->items = a->len ? static_cast<Value*>(arena_.alloc(a->len * sizeof(Value))) : nullptr;
    if (a->len) std::memcpy(c->items, a->items, a->len * sizeof(Value));
    if (a->aggregate_items) {
      for (uint32_t i = 0; i < c->len; ++i) as_ptr<ObjHeader>(c->items[i])->shared = true;
    }
    return ptr_value(c);
  }
  auto* r = as_ptr<RecObj>(v);
  size_t bytes = offsetof(RecObj, fields) + std::max<uint32_t>(r->count, 1u) * sizeof(Value);
  auto* c = static_cast<RecObj*>(arena_.alloc(bytes));
  std::memcpy(c, r, bytes);
  c->h.shared = false;
  const auto& aggs = r->h.kind == ObjKind::Record ? record_aggregates_[r->desc] : shape_aggregates_[r->desc];
  for (uint32_t i : aggs) {
    if (c->fields[i]) as_ptr<ObjHeader>(c->fields[i])->shared = true;
  }
  return ptr_value(c);
}

// Records (or objects) of one type, field by field; arrays inside them
// item by item.
bool Vm::rec_equal(const RecObj* a, const RecObj* b) const {
  eq_stack_.clear();
  eq_stack_.push_back(EqFrame{a, b, nullptr, nullptr, 0, 0});
  return equal_walk();
}

// Compares two scalars now; two containers are pushed for equal_walk.
bool Vm::equal_open(Value a, Value b, uint32_t type) const {
  const TypeDesc& t = module_.types[type];
  switch (t.code) {
    case TypeCode::Num: return as_num(a) == as_num(b);
    case TypeCode::Bool: return a == b;
    case TypeCode::Text: return vm::equal(as_ptr<TextObj>(a), as_ptr<TextObj>(b));
    case TypeCode::Record:
    case TypeCode::Object:
      eq_stack_.push_back(EqFrame{as_ptr<RecObj>(a), as_ptr<RecObj>(b), nullptr, nullptr, 0, 0});
      return true;
    case TypeCode::Array: {
      auto* x = as_ptr<ArrayObj>(a);
      auto* y = as_ptr<ArrayObj>(b);
      if (x->len != y->len) return false;
      eq_stack_.push_back(EqFrame{nullptr, nullptr, x, y, t.index, 0});
      return true;
    }
    default: return a == b;
  }
}

// Depth first, in field and item order, stopping at the first difference.
// The stack holds one frame per level of nesting being compared.
bool Vm::equal_walk() const {
  while (!eq_stack_.empty()) {
    EqFrame& f = eq_stack_.back();
    Value x, y;
    uint32_t type;
    if (f.rx) {
      if (f.next == f.rx->count) {
        eq_stack_.pop_back();
        continue;
      }
      uint32_t i = f.next++;
      bool record = f.rx->h.kind == ObjKind::Record;
      type = record ? module_.records[f.rx->desc].fields[i].type : module_.shapes[f.rx->desc].types[i];
      x = f.rx->fields[i];
      y = f.ry->fields[i];
    } else {
      if (f.next == f.ax->len) {
        eq_stack_.pop_back();
        continue;
      }
      uint32_t i = f.next++;
      type = f.item_type;
      x = f.ax->items[i];
      y = f.ay->items[i];
    }
    if (!equal_open(x, y, type)) {  // `f` may dangle from here: equal_open pushes
      eq_stack_.clear();
      return false;
    }
  }
  return true;
}

bool Vm::distinct(const ArrayObj* a, ItemKind kind, Value* r) {
  ArrayObj* out = new_array(a->aggregate_items);
  switch (kind) {
    case ItemKind::Num: {
      // Equal as `==` says: -0 equals 0; NaN equals nothing, so each stays.
      std::unordered_set<uint64_t> seen;
      for (uint32_t i = 0; i < a->len; ++i) {
        double d = as_num(a->items[i]);
        if (std::isnan(d) || seen.insert(num_value(d == 0 ? 0.0 : d)).second) push(out, a->items[i]);
      }
      break;
    }
    case ItemKind::Text: {
      std::unordered_set<std::string_view> seen;
      for (uint32_t i = 0; i < a->len; ++i) {
        if (seen.insert(as_ptr<TextObj>(a->items[i])->view()).second) push(out, a->items[i]);
      }
      break;
    }
    case ItemKind::Bool: {
      bool seen[2] = {false, false};
      for (uint32_t i = 0; i < a->len; ++i) {
        if (!seen[a->items[i] & 1]) push(out, a->items[i]);
        seen[a->items[i] & 1] = true;
      }
      break;
    }
    case ItemKind::Record:
      // Each item against each kept one: a step per comparison, so the
      // budget bounds this as it would the same loop written in aup.
      for (uint32_t i = 0; i < a->len; ++i) {
        bool dup = false;
        for (uint32_t j = 0; j < out->len && !dup; ++j) {
          if (ctx_.steps_left == 0) {
            return fail(ErrorCode::Budget, fmt::format("the step budget ({} steps) ran out", step_budget_));
          }
          --ctx_.steps_left;
          dup = rec_equal(as_ptr<RecObj>(a->items[i]), as_ptr<RecObj>(out->items[j]));
        }
        if (!dup) push(out, a->items[i]);
      }
      break;
  }
  // The kept items are held by both arrays now.
  if (out->aggregate_items) {
    for (uint32_t i = 0; i < out->len; ++i) as_ptr<ObjHeader>(out->items[i])->shared = true;
  }
  *r = ptr_value(out);
  return true;
}

// ---------------------------------------------------------------------------
// failures

bool Vm::fail(ErrorCode code, std::string message) {
  failure_.code = code;
  failure_.message = std::move(message);
  return false;
}

std::string Vm::position(const Function* fn, const Instr* pc) const {
  uint32_t at = static_cast<uint32_t>(pc - fn->code.data());
  LineEntry e = fn->position(at == 0 ? 0 : at - 1);
  return fmt::format("{}:{}:{}", module_.source_name, e.line, e.col);
}

std::string Vm::key_text(uint32_t table, const Key& k) const {
  if (k.text) return quoted(k.text->view());
  (void)table;
  return number_text(order_num(k.ord));
}

// ---------------------------------------------------------------------------
// tables and rows

Key Vm::key_of(uint32_t table, Value v) const {
  const TableDesc& t = module_.tables[table];
  if (module_.records[t.record].fields[t.key_field].type == kTypeText) {
    return text_key(as_ptr<TextObj>(v));
  }
  return num_key(as_num(v));
}

RowRef* Vm::make_row(uint32_t table, BTree::Pos pos, const Key& key) {
  auto* r = arena_.make<RowRef>();
  r->table = table;
  r->private_path = false;
  r->version = state_->table(table).version();
  r->pos = pos;
  r->key = key;
  return r;
}

// The row's values for reading: the cached position while the table has not
// moved rows since, else a fresh seek by key.
const Value* Vm::row_read(RowRef* r) {
  BTree& t = state_->table(r->table);
  if (r->version != t.version()) {
    BTree::Pos pos;
    if (!t.find(r->key, &pos)) {
      fail(ErrorCode::StaleRow, fmt::format("the row of `{}` with key {} was removed",
                                            module_.tables[r->table].name, key_text(r->table, r->key)));
      return nullptr;
    }
    r->pos = pos;
    r->version = t.version();
    r->private_path = false;
  }
  return t.row_at(r->pos);
}

// The row's values for writing: in place when its path is known private
// (found by find_mut at the current version), else made private first.
Value* Vm::row_write(RowRef* r) {
  BTree& t = state_->table(r->table);
  if (r->version == t.version() && r->private_path) return t.row_at_mut(r->pos);
  BTree::Pos pos;
  Value* row = t.find_mut(r->key, &pos);
  if (!row) {
    fail(ErrorCode::StaleRow, fmt::format("the row of `{}` with key {} was removed",
                                          module_.tables[r->table].name, key_text(r->table, r->key)));
    return nullptr;
  }
  r->pos = pos;
  r->version = t.version();
  r->private_path = true;
  return row;
}

// A value as stored in a table or var: numbers must be finite, texts move
// to the heap (the caller owns the reference returned). `where` names the
// destination in the message; it is only called on failure.
template <class Where>
bool Vm::stored(uint32_t type, Value v, Value* out, Where where) {
  if (type == kTypeNum) {
    double d = as_num(v);
    if (!std::isfinite(d)) {
      return fail(ErrorCode::NotFinite, fmt::format("cannot store {} in {}", number_text(d), where()));
    }
    *out = v;
  } else if (type == kTypeText) {
    *out = ptr_value(to_heap(as_ptr<TextObj>(v)));
  } else {
    *out = v;
  }
  return true;
}

bool Vm::tget(uint32_t table, Value* r) {
  Key k = key_of(table, *r);
  BTree::Pos pos;
  if (!state_->table(table).find(k, &pos)) {
    return fail(ErrorCode::NotFound, fmt::format("`{}` has no key {}", module_.tables[table].name,
                                                 key_text(table, k)));
  }
  *r = ptr_value(make_row(table, pos, k));
  return true;
}

bool Vm::tadd(uint32_t table, Value recv, bool replace) {
  const TableDesc& td = module_.tables[table];
  const RecordDesc& rd = module_.records[td.record];
  auto* rec = as_ptr<RecObj>(recv);
  std::array<Value, 256> row{};  // zeros: releasing a partly built row is safe
  uint32_t n = static_cast<uint32_t>(rd.fields.size());
  for (uint32_t i = 0; i < n; ++i) {
    auto where = [&] { return fmt::format("`{}` of `{}`", rd.fields[i].name, td.name); };
    if (!stored(rd.fields[i].type, rec->fields[i], &row[i], where)) {
      state_->release_row(table, row.data());
      return false;
    }
  }
  // -0 and 0 are one key; the key field holds it as 0.
  if (rd.fields[td.key_field].type == kTypeNum && row[td.key_field] == num_value(-0.0)) {
    row[td.key_field] = num_value(0.0);
  }
  BTree& t = state_->table(table);
  Key k = key_of(table, row[td.key_field]);
  if (t.insert(k, row.data())) {
    state_->note_insert(table, k);
    return true;
  }
  if (!replace) {
    // The message first: a text key points into the row being released.
    std::string message = fmt::format("`{}` already has key {}", td.name, key_text(table, k));
    state_->release_row(table, row.data());
    return fail(ErrorCode::Duplicate, std::move(message));
  }
  Value* old = t.find_mut(k);
  state_->note_replace(table, k, old);  // the journal takes the old row's texts
  std::memcpy(old, row.data(), n * sizeof(Value));
  return true;
}

bool Vm::tdel(uint32_t table, Value key) {
  Key k = key_of(table, key);
  std::array<Value, 256> row;
  if (!state_->table(table).erase(k, row.data())) {
    return fail(ErrorCode::NotFound, fmt::format("`{}` has no key {} to remove",
                                                 module_.tables[table].name, key_text(table, k)));
  }
  state_->note_remove(table, k, row.data());
  return true;
}

bool Vm::tat(uint32_t table, Value* r) {
  BTree& t = state_->table(table);
  double p = as_num(*r);
  if (!(p >= 0 && p == std::floor(p) && p < static_cast<double>(t.size()))) {
    return fail(ErrorCode::NotFound, fmt::format("`{}` has no row at position {} (it has {})",
                                                 module_.tables[table].name, number_text(p), t.size()));
  }
  Key k;
  BTree::Pos pos;
  t.at(static_cast<size_t>(p), &k, &pos);
  *r = ptr_value(make_row(table, pos, k));
  return true;
}

bool Vm::tend(uint32_t table, bool last, Value* r) {
  BTree& t = state_->table(table);
  if (t.size() == 0) {
    return fail(ErrorCode::NotFound, fmt::format("`{}` is empty", module_.tables[table].name));
  }
  Key k;
  BTree::Pos pos;
  t.at(last ? t.size() - 1 : 0, &k, &pos);
  *r = ptr_value(make_row(table, pos, k));
  return true;
}

ViewObj* Vm::make_view(uint32_t table, Value lo, Value hi) {
  auto* v = arena_.make<ViewObj>();
  v->table = table;
  v->lo = key_of(table, lo);
  v->hi = key_of(table, hi);
  bool text = v->lo.text != nullptr;
  bool nan = !text && (std::isnan(as_num(lo)) || std::isnan(as_num(hi)));
  v->empty = nan || !key_less(v->lo, v->hi);
  return v;
}

uint64_t Vm::view_count(const ViewObj* v) const {
  if (v->empty) return 0;
  const BTree& t = state_->table(v->table);
  return t.rank(v->hi) - t.rank(v->lo);
}

bool Vm::view_end(const ViewObj* v, bool last, Value* r) {
  BTree& t = state_->table(v->table);
  size_t lo = v->empty ? 0 : t.rank(v->lo);
  size_t hi = v->empty ? 0 : t.rank(v->hi);
  if (lo >= hi) {
    return fail(ErrorCode::NotFound,
                fmt::format("the view of `{}` is empty", module_.tables[v->table].name));
  }
  Key k;
  BTree::Pos pos;
  t.at(last ? hi - 1 : lo, &k, &pos);
  *r = ptr_value(make_row(v->table, pos, k));
  return true;
}

bool Vm::rget(Value row, uint32_t field, Value* r) {
  const Value* values = row_read(as_ptr<RowRef>(row));
  if (!values) return false;
  *r = values[field];
  return true;
}

bool Vm::rset(Value rowv, uint32_t field, Value v) {
  auto* ref = as_ptr<RowRef>(rowv);
  const TableDesc& td = module_.tables[ref->table];
  const FieldDesc& fd = module_.records[td.record].fields[field];
  Value nv = 0;
  auto where = [&] { return fmt::format("`{}` of `{}`", fd.name, td.name); };
  if (!stored(fd.type, v, &nv, where)) return false;
  Value* row = row_write(ref);
  if (!row) {
    if (fd.type == kTypeText) release(as_ptr<TextObj>(nv));
    return false;
  }
  state_->note_set_field(ref->table, ref->key, field, row[field]);
  row[field] = nv;
  return true;
}

bool Vm::rowval(Value rowv, Value* r) {
  auto* ref = as_ptr<RowRef>(rowv);
  const Value* values = row_read(ref);
  if (!values) return false;
  RecObj* rec = new_record(module_.tables[ref->table].record);
  if (rec->count) std::memcpy(rec->fields, values, rec->count * sizeof(Value));
  *r = ptr_value(rec);
  return true;
}

bool Vm::setv(uint32_t var, Value v) {
  const VarDesc& vd = module_.vars[var];
  Value nv = 0;
  auto where = [&] { return fmt::format("var `{}`", vd.name); };
  if (!stored(vd.type, v, &nv, where)) return false;
  state_->note_set_var(var, state_->var(var));
  state_->set_var_raw(var, nv);
  return true;
}

const Value* Vm::row_values(RowRef* r) { return row_read(r); }

void Vm::view_rows(const ViewObj* v, std::vector<const Value*>& out) {
  if (v->empty) return;
  BTree& t = state_->table(v->table);
  BTree::Cursor c;
  c.seek(t, &v->lo);
  for (; c.valid() && key_less(c.key(), v->hi); c.next(t)) out.push_back(t.row_at(c.pos()));
}

Value Vm::varr(const ViewObj* v) {
  ArrayObj* out = new_array(true);
  if (v->empty) return ptr_value(out);
  BTree& t = state_->table(v->table);
  uint32_t record = module_.tables[v->table].record;
  BTree::Cursor c;
  c.seek(t, &v->lo);
  for (; c.valid() && key_less(c.key(), v->hi); c.next(t)) {
    RecObj* rec = new_record(record);
    std::memcpy(rec->fields, t.row_at(c.pos()), rec->count * sizeof(Value));
    if (!push(out, ptr_value(rec))) break;
  }
  return ptr_value(out);
}

// The next item of a loop, or false when it is done.
bool Vm::next(IterObj* it, Value* item) {
  if (it->kind == IterKind::Array) {
    if (it->index >= it->array->len) return false;
    *item = it->array->items[it->index++];
    return true;
  }
  BTree& t = state_->table(it->table);
  // Advance lazily, at the start of the next round: the body may have
  // changed rows (a copy-on-write moves them), which the cursor notices.
  if (it->started) {
    it->cursor.next(t);
  }
  it->started = true;
  if (!it->cursor.valid()) return false;
  if (it->bounded && !key_less(it->cursor.key(), it->hi)) return false;
  *item = ptr_value(make_row(it->table, it->cursor.pos(), it->cursor.key()));
  return true;
}

// ---------------------------------------------------------------------------
// texts, arrays, built-ins

bool Vm::concat(Value a, Value b, Value* r) {
  auto* x = as_ptr<TextObj>(a);
  auto* y = as_ptr<TextObj>(b);
  size_t n = size_t{x->len} + y->len;
  if (n > kMaxTextBytes) {
    return fail(ErrorCode::Budget, fmt::format("a text would be longer than {} MiB", kMaxTextBytes >> 20));
  }
  if (arena_.allocated() + n > kMaxTempBytes) return fail(ErrorCode::Budget, temp_bytes_message());
  auto* t = static_cast<TextObj*>(arena_.alloc(offsetof(TextObj, bytes) + n + 1));
  t->refs = 1;
  t->len = static_cast<uint32_t>(n);
  t->in_arena = true;
  std::memcpy(t->bytes, x->bytes, x->len);
  std::memcpy(t->bytes + x->len, y->bytes, y->len);
  t->bytes[n] = '\0';
  *r = ptr_value(t);
  return true;
}

bool Vm::index_of(const ArrayObj* a, Value iv, uint32_t* out) {
  double i = as_num(iv);
  if (!(i >= 0 && i < static_cast<double>(a->len) && i == std::floor(i))) {
    return fail(ErrorCode::OutOfRange,
                fmt::format("index {} is out of range for an array of {} item{}", number_text(i),
                            a->len, a->len == 1 ? "" : "s"));
  }
  *out = static_cast<uint32_t>(i);
  return true;
}

bool Vm::callb(uint32_t id, Value* args, uint32_t argc) {
  const stdlib::Builtin& b = stdlib::builtin(static_cast<stdlib::BuiltinId>(id));
  // Most calls have a few arguments: building all 256 slots each time
  // (24 bytes each) cost more than the built-in itself.
  std::array<stdlib::BuiltinArg, 8> few;
  std::vector<stdlib::BuiltinArg> many;
  stdlib::BuiltinArg* in = few.data();
  if (argc > few.size()) {
    many.resize(argc);
    in = many.data();
  }
  for (uint32_t i = 0; i < argc; ++i) {
    if (b.param(i) == stdlib::Ty::Text) {
      in[i].text = as_ptr<TextObj>(args[i])->view();
    } else {
      in[i].num = as_num(args[i]);
    }
  }
  stdlib::BuiltinResult out;
  if (b.impl(std::span<const stdlib::BuiltinArg>(in, argc), out) != stdlib::BuiltinStatus::Ok) {
    return fail(ErrorCode::BadNumber,
                fmt::format("`{}` cannot read {} as a number", b.name, quoted(in[0].text)));
  }
  if (b.result == stdlib::Ty::Text) {
    args[0] = ptr_value(new_text(std::string_view(out.text, out.text_len)));
  } else {
    args[0] = num_value(out.num);
  }
  return true;
}

// ---------------------------------------------------------------------------
// the loop

bool Vm::run(uint32_t fn, const Value* args, uint32_t argc, double now, Value* result) {
  assert(fn < module_.functions.size());
  assert(argc <= kMaxRegisters);
  ctx_.now = now;
  ctx_.steps_left = step_budget_;
  ctx_.temp_bytes = arena_.allocated_ptr();
  ctx_.depth = 0;
  ctx_.vm = this;
  ctx_.constants = constants_.data();
  frames_.clear();
  std::copy(args, args + argc, regs_.data());
  Value ignored = 0;
  bool ok;
  if (native_) {
    // The native function leaves its R[0] in regs[0], as RET does here.
    ok = native_->function(fn)(&ctx_, regs_.data());
    if (ok) *(result ? result : &ignored) = regs_[0];
  } else {
    ok = execute(&module_.functions[fn], regs_.data(), result ? result : &ignored);
  }
  steps_taken_ = step_budget_ - ctx_.steps_left;
  return ok;
}

#if AUP_COMPUTED_GOTO
// Labels as values are a GNU extension; they are the point of this mode
// (one indirect jump per instruction, each predicted on its own).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
bool Vm::execute(const Function* fn, Value* R, Value* result) {
  const Instr* pc = fn->code.data();
  const Value* K = fn->kvalues.data();
  Instr i = 0;

#define A a_of(i)
#define B b_of(i)
#define C c_of(i)
#define BX bx_of(i)
#define SBX sbx_of(i)
#define CHECK(ok) \
  do {            \
    if (!(ok)) goto failed; \
  } while (0)
// Back to the caller's frame, or out of the loop from the outermost one.
#define RETURN_FRAME()              \
  do {                              \
    if (frames_.empty()) {          \
      *result = R[0];               \
      return true;                  \
    }                               \
    fn = frames_.back().fn;         \
    pc = frames_.back().pc;         \
    R = frames_.back().regs;        \
    K = fn->kvalues.data();         \
    frames_.pop_back();             \
  } while (0);                      \
  VM_NEXT

#if AUP_COMPUTED_GOTO
  static const void* const kLabels[] = {
#define AUP_OP(name, format, meaning) &&op_##name,
#include "vm/opcodes.def"
#undef AUP_OP
  };
#define VM_CASE(name) op_##name:
#define VM_NEXT                     \
  do {                              \
    i = *pc++;                      \
    goto* kLabels[i & 0xFF];        \
  } while (0)
  VM_NEXT;
#else
#define VM_CASE(name) case Op::name:
#define VM_NEXT break
  for (;;) {
    i = *pc++;
    switch (op_of(i)) {
#endif

  VM_CASE(MOVE) { R[A] = R[B]; VM_NEXT; }
  VM_CASE(LOADK) { R[A] = K[BX]; VM_NEXT; }
  VM_CASE(LOADI) { R[A] = num_value(SBX); VM_NEXT; }
  VM_CASE(LOADB) { R[A] = bool_value(B != 0); VM_NEXT; }
  VM_CASE(SHARE) { as_ptr<ObjHeader>(R[A])->shared = true; VM_NEXT; }
  VM_CASE(UNSHARE) {
    if (as_ptr<ObjHeader>(R[A])->shared) R[A] = copy_obj(R[A]);
    VM_NEXT;
  }
  VM_CASE(NOW) { R[A] = num_value(ctx_.now); VM_NEXT; }

  VM_CASE(ADD) { R[A] = num_value(as_num(R[B]) + as_num(R[C])); VM_NEXT; }
  VM_CASE(SUB) { R[A] = num_value(as_num(R[B]) - as_num(R[C])); VM_NEXT; }
  VM_CASE(MUL) { R[A] = num_value(as_num(R[B]) * as_num(R[C])); VM_NEXT; }
  VM_CASE(DIV) { R[A] = num_value(as_num(R[B]) / as_num(R[C])); VM_NEXT; }
  VM_CASE(MOD) { R[A] = num_value(num_mod(as_num(R[B]), as_num(R[C]))); VM_NEXT; }
  VM_CASE(NEG) { R[A] = num_value(-as_num(R[B])); VM_NEXT; }
  VM_CASE(CONCAT) { CHECK(concat(R[B], R[C], &R[A])); VM_NEXT; }
  VM_CASE(NOT) { R[A] = R[B] ^ 1; VM_NEXT; }
  VM_CASE(EQ) { R[A] = bool_value(as_num(R[B]) == as_num(R[C])); VM_NEXT; }
  VM_CASE(LT) { R[A] = bool_value(as_num(R[B]) < as_num(R[C])); VM_NEXT; }
  VM_CASE(LE) { R[A] = bool_value(as_num(R[B]) <= as_num(R[C])); VM_NEXT; }
  VM_CASE(EQT) { R[A] = bool_value(vm::equal(as_ptr<TextObj>(R[B]), as_ptr<TextObj>(R[C]))); VM_NEXT; }
  VM_CASE(LTT) { R[A] = bool_value(compare(as_ptr<TextObj>(R[B]), as_ptr<TextObj>(R[C])) < 0); VM_NEXT; }
  VM_CASE(LET) { R[A] = bool_value(compare(as_ptr<TextObj>(R[B]), as_ptr<TextObj>(R[C])) <= 0); VM_NEXT; }
  VM_CASE(EQB) { R[A] = bool_value(R[B] == R[C]); VM_NEXT; }
  VM_CASE(EQR) { R[A] = bool_value(rec_equal(as_ptr<RecObj>(R[B]), as_ptr<RecObj>(R[C]))); VM_NEXT; }

  VM_CASE(JMP) {
    if (SBX < 0) {
      if (ctx_.steps_left == 0) goto out_of_steps;
      --ctx_.steps_left;
      if (arena_.allocated() > kMaxTempBytes) goto out_of_memory;
    }
    pc += SBX;
    VM_NEXT;
  }
  VM_CASE(JT) {
    if (R[A]) pc += SBX;
    VM_NEXT;
  }
  VM_CASE(JF) {
    if (!R[A]) pc += SBX;
    VM_NEXT;
  }
  VM_CASE(CALL) {
    if (ctx_.steps_left == 0) goto out_of_steps;
    --ctx_.steps_left;
    if (arena_.allocated() > kMaxTempBytes) goto out_of_memory;
    if (frames_.size() >= kMaxCallDepth) {
      fail(ErrorCode::Budget, fmt::format("calls nested deeper than {}", kMaxCallDepth));
      goto failed;
    }
    frames_.push_back(Frame{fn, pc, R});
    R += A;
    fn = &module_.functions[BX];
    K = fn->kvalues.data();
    pc = fn->code.data();
    VM_NEXT;
  }
  VM_CASE(CALLB) { CHECK(callb(B, &R[A], C)); VM_NEXT; }
  VM_CASE(RET) {
    R[0] = R[A];
    RETURN_FRAME();
  }
  VM_CASE(RET0) { RETURN_FRAME(); }
  VM_CASE(FAIL) {
    fail(ErrorCode::Failed, std::string(as_ptr<TextObj>(R[A])->view()));
    goto failed;
  }

  VM_CASE(GETV) { R[A] = state_->var(BX); VM_NEXT; }
  VM_CASE(SETV) { CHECK(setv(BX, R[A])); VM_NEXT; }

  VM_CASE(TGET) { CHECK(tget(BX, &R[A])); VM_NEXT; }
  VM_CASE(THAS) {
    R[A] = bool_value(state_->table(BX).find(key_of(BX, R[A])) != nullptr);
    VM_NEXT;
  }
  VM_CASE(TADD) { CHECK(tadd(BX, R[A], false)); VM_NEXT; }
  VM_CASE(TPUT) { CHECK(tadd(BX, R[A], true)); VM_NEXT; }
  VM_CASE(TDEL) { CHECK(tdel(BX, R[A])); VM_NEXT; }
  VM_CASE(TAT) { CHECK(tat(BX, &R[A])); VM_NEXT; }
  VM_CASE(TCOUNT) { R[A] = num_value(static_cast<double>(state_->table(BX).size())); VM_NEXT; }
  VM_CASE(TFIRST) { CHECK(tend(BX, false, &R[A])); VM_NEXT; }
  VM_CASE(TLAST) { CHECK(tend(BX, true, &R[A])); VM_NEXT; }
  VM_CASE(TVIEW) { R[A] = ptr_value(make_view(BX, R[A], R[A + 1])); VM_NEXT; }
  VM_CASE(TITER) {
    auto* it = arena_.make<IterObj>();
    it->kind = IterKind::Rows;
    it->table = BX;
    it->cursor.seek(state_->table(BX), nullptr);
    R[A] = ptr_value(it);
    VM_NEXT;
  }

  VM_CASE(RGET) { CHECK(rget(R[B], C, &R[A])); VM_NEXT; }
  VM_CASE(RSET) { CHECK(rset(R[A], B, R[C])); VM_NEXT; }
  VM_CASE(ROWVAL) { CHECK(rowval(R[B], &R[A])); VM_NEXT; }

  VM_CASE(VCOUNT) { R[A] = num_value(static_cast<double>(view_count(as_ptr<ViewObj>(R[B])))); VM_NEXT; }
  VM_CASE(VFIRST) { CHECK(view_end(as_ptr<ViewObj>(R[B]), false, &R[A])); VM_NEXT; }
  VM_CASE(VLAST) { CHECK(view_end(as_ptr<ViewObj>(R[B]), true, &R[A])); VM_NEXT; }
  VM_CASE(VEMPTY) { R[A] = bool_value(view_count(as_ptr<ViewObj>(R[B])) == 0); VM_NEXT; }
  VM_CASE(VITER) {
    auto* v = as_ptr<ViewObj>(R[B]);
    auto* it = arena_.make<IterObj>();
    it->kind = IterKind::Rows;
    it->table = v->table;
    it->bounded = true;
    it->hi = v->hi;
    if (v->empty) {
      it->hi = v->lo;  // nothing is below lo and at least lo
    }
    it->cursor.seek(state_->table(v->table), &v->lo);
    R[A] = ptr_value(it);
    VM_NEXT;
  }
  VM_CASE(VARR) { R[A] = varr(as_ptr<ViewObj>(R[B])); VM_NEXT; }

  VM_CASE(NEWREC) { R[A] = ptr_value(new_record(BX)); VM_NEXT; }
  VM_CASE(NEWOBJ) { R[A] = ptr_value(new_object(BX)); VM_NEXT; }
  VM_CASE(GETF) { R[A] = as_ptr<RecObj>(R[B])->fields[C]; VM_NEXT; }
  VM_CASE(SETF) {
    if (as_ptr<ObjHeader>(R[A])->shared) R[A] = copy_obj(R[A]);
    as_ptr<RecObj>(R[A])->fields[B] = R[C];
    VM_NEXT;
  }

  VM_CASE(NEWARR) { R[A] = ptr_value(new_array(B != 0)); VM_NEXT; }
  VM_CASE(AGET) {
    uint32_t k;
    CHECK(index_of(as_ptr<ArrayObj>(R[B]), R[C], &k));
    R[A] = as_ptr<ArrayObj>(R[B])->items[k];
    VM_NEXT;
  }
  VM_CASE(ASET) {
    uint32_t k;
    CHECK(index_of(as_ptr<ArrayObj>(R[A]), R[B], &k));
    if (as_ptr<ObjHeader>(R[A])->shared) R[A] = copy_obj(R[A]);
    as_ptr<ArrayObj>(R[A])->items[k] = R[C];
    VM_NEXT;
  }
  VM_CASE(APUSH) {
    if (as_ptr<ObjHeader>(R[A])->shared) R[A] = copy_obj(R[A]);
    if (!push(as_ptr<ArrayObj>(R[A]), R[B])) {
      fail(ErrorCode::Budget, fmt::format("an array would hold more than {} items", kMaxArrayItems));
      goto failed;
    }
    VM_NEXT;
  }
  VM_CASE(APOP) {
    if (as_ptr<ArrayObj>(R[B])->len == 0) {
      fail(ErrorCode::OutOfRange, "pop of an empty array");
      goto failed;
    }
    if (as_ptr<ObjHeader>(R[B])->shared) R[B] = copy_obj(R[B]);
    auto* arr = as_ptr<ArrayObj>(R[B]);
    R[A] = arr->items[--arr->len];
    VM_NEXT;
  }
  VM_CASE(ALEN) { R[A] = num_value(as_ptr<ArrayObj>(R[B])->len); VM_NEXT; }
  VM_CASE(AITER) {
    auto* arr = as_ptr<ArrayObj>(R[B]);
    // The loop holds the array too: a change inside the loop copies it,
    // so the loop goes over the items it started with.
    arr->h.shared = true;
    auto* it = arena_.make<IterObj>();
    it->kind = IterKind::Array;
    it->array = arr;
    it->index = 0;
    R[A] = ptr_value(it);
    VM_NEXT;
  }
  VM_CASE(DISTINCT) {
    CHECK(distinct(as_ptr<ArrayObj>(R[B]), static_cast<ItemKind>(C), &R[A]));
    VM_NEXT;
  }

  VM_CASE(NEXT) {
    if (!next(as_ptr<IterObj>(R[A]), &R[A + 1])) pc += SBX;
    VM_NEXT;
  }
  VM_CASE(RNEXT) {
    double c = as_num(R[A]);
    if (c < as_num(R[A + 1])) {
      R[A + 2] = R[A];
      R[A] = num_value(c + 1);
    } else {
      pc += SBX;
    }
    VM_NEXT;
  }

#if !AUP_COMPUTED_GOTO
      default:
        assert(false && "unknown opcode");
        return fail(ErrorCode::Failed, "unknown instruction");
    }
  }
#endif

out_of_memory:
  fail(ErrorCode::Budget, temp_bytes_message());
  goto failed;
out_of_steps:
  fail(ErrorCode::Budget, fmt::format("the step budget ({} steps) ran out", step_budget_));
failed:
  failure_.message += " (" + position(fn, pc) + ")";
  return false;

#undef A
#undef B
#undef C
#undef BX
#undef SBX
#undef CHECK
#undef RETURN_FRAME
#undef VM_CASE
#undef VM_NEXT
}
#if AUP_COMPUTED_GOTO
#pragma GCC diagnostic pop
#endif

}  // namespace aup::vm

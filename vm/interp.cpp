#include "vm/interp.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "stdlib/builtins.h"
#include "stdlib/texts.h"

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
  std::string out;
  append_quoted(out, s);
  return out;
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

ArrayObj* Vm::sized_array(uint32_t n, bool aggregate_items) {
  assert(n <= kMaxArrayItems);
  ArrayObj* a = new_array(aggregate_items);
  a->len = a->cap = n;
  a->items = n ? static_cast<Value*>(arena_.alloc(n * sizeof(Value))) : nullptr;
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

// Equal as `==` says: -0 equals 0; NaN equals nothing, so each stays. The
// numbers seen go in an open-addressed table in a buffer the VM keeps, so a
// call allocates nothing once the buffer has grown (a std::unordered_set
// made a node an item: some 200 allocations for a TPC-C Stock-Level). A NaN
// marks a free slot, since no NaN is ever put in.
void Vm::distinct_nums(const ArrayObj* a, ArrayObj* out) {
  constexpr Value kFree = 0x7ff8'0000'0000'0001;
  constexpr size_t kKeptSlots = size_t{1} << 16;  // a larger buffer is let go after the call
  size_t cap = std::bit_ceil(size_t{a->len} * 2 + 2);
  int shift = 64 - std::countr_zero(cap);
  distinct_slots_.assign(cap, kFree);
  for (uint32_t i = 0; i < a->len; ++i) {
    double d = as_num(a->items[i]);
    if (std::isnan(d)) {
      push(out, a->items[i]);
      continue;
    }
    Value v = num_value(d == 0 ? 0.0 : d);
    size_t at = (v * 0x9e37'79b9'7f4a'7c15) >> shift;
    while (distinct_slots_[at] != kFree && distinct_slots_[at] != v) at = (at + 1) & (cap - 1);
    if (distinct_slots_[at] == kFree) {
      distinct_slots_[at] = v;
      push(out, a->items[i]);
    }
  }
  if (cap > kKeptSlots) std::vector<Value>().swap(distinct_slots_);
}

bool Vm::distinct(const ArrayObj* a, ItemKind kind, Value* r) {
  ArrayObj* out = new_array(a->aggregate_items);
  switch (kind) {
    case ItemKind::Num:
      distinct_nums(a, out);
      break;
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
  const KeySpec& spec = state_->table(table).layout().key;
  if (spec.composite()) {
    if (k.text == nan_key()) return "with a component that is nan";
    return describe_key(k.text->view(), static_cast<uint32_t>(spec.fields.size()), spec.text_mask);
  }
  if (k.text) return quoted(k.text->view());
  return number_text(order_num(k.ord));
}

// ---------------------------------------------------------------------------
// tables and rows

// A key operand: a number or a text for a one-field key, the encoded key
// (KEY, KEYPFX) for a composite one.
Key Vm::key_of(uint32_t table, Value v) const {
  if (state_->table(table).layout().text_key()) return text_key(as_ptr<TextObj>(v));
  return num_key(as_num(v));
}

// KEY and KEYPFX: the C values R[A].. encoded as one key (vm/key.h), in the
// arena. A component that is NaN makes the key nan_key(), which no row has
// and which makes a view empty, as a NaN bound does for a one-field key.
bool Vm::make_key(Value* r, uint32_t text_mask, uint32_t count, bool prefix) {
  for (uint32_t i = 0; i < count; ++i) {
    if (!((text_mask >> i) & 1u) && std::isnan(as_num(r[i]))) {
      r[0] = ptr_value(nan_key());
      if (prefix) r[1] = r[0];
      return true;
    }
  }
  size_t size = key_bytes_max(r, count, text_mask);
  if (size > kMaxTextBytes) {  // a text near the limit: the exact size decides
    size = key_bytes(r, count, text_mask);
    if (size > kMaxTextBytes) {
      return fail(ErrorCode::Budget, fmt::format("a key would be longer than {} MiB", kMaxTextBytes >> 20));
    }
  }
  if (arena_.allocated() + 2 * size > kMaxTempBytes) return fail(ErrorCode::Budget, temp_bytes_message());
  TextObj* lo = arena_text_sized(arena_, static_cast<uint32_t>(size));
  size_t n = encode_key(r, count, text_mask, lo->bytes);
  lo->len = static_cast<uint32_t>(n);
  lo->bytes[n] = '\0';
  r[0] = ptr_value(lo);
  if (prefix) {
    TextObj* hi = arena_text(arena_, lo->view());
    hi->len = static_cast<uint32_t>(prefix_end(hi->bytes, n));
    r[1] = ptr_value(hi);
  }
  return true;
}

RowRef* Vm::make_row(uint32_t table, BTree::Pos pos, const Key& key) {
  auto* r = arena_.make<RowRef>();
  r->table = table;
  r->private_path = pos.private_path;
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
    r->private_path = pos.private_path;
  }
  return t.row_at(r->pos);
}

// The row's values for writing: in place when its path is known private
// (found at the current version with one reference on every node of its
// path), else made private first.
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
  Value row = tfind(table, *r);
  if (!row) {
    return fail(ErrorCode::NotFound, fmt::format("`{}` has no key {}", module_.tables[table].name,
                                                 key_text(table, key_of(table, *r))));
  }
  *r = row;
  return true;
}

Value Vm::tfind(uint32_t table, Value key) {
  Key k = key_of(table, key);
  BTree::Pos pos;
  return state_->table(table).find(k, &pos) ? ptr_value(make_row(table, pos, k)) : 0;
}

bool Vm::tadd(uint32_t table, Value recv, bool replace) {
  const TableDesc& td = module_.tables[table];
  const RecordDesc& rd = module_.records[td.record];
  auto* rec = as_ptr<RecObj>(recv);
  uint32_t n = static_cast<uint32_t>(rd.fields.size());
  // Zeros in the row's own fields (releasing a partly built row is then
  // safe), not in all 256: a TPC-C order line has 10.
  std::array<Value, 256> row;
  std::fill_n(row.data(), n, Value{0});
  for (uint32_t i = 0; i < n; ++i) {
    auto where = [&] { return fmt::format("`{}` of `{}`", rd.fields[i].name, td.name); };
    if (!stored(rd.fields[i].type, rec->fields[i], &row[i], where)) {
      state_->release_row(table, row.data());
      return false;
    }
  }
  // -0 and 0 are one key; a key field holds it as 0.
  for (uint32_t f : td.key_fields) {
    if (rd.fields[f].type == kTypeNum && row[f] == num_value(-0.0)) row[f] = num_value(0.0);
  }
  BTree& t = state_->table(table);
  HeldKey held(t.layout().key, row.data());
  const Key& k = held.key();
  if (state_->has_indexes(table) && (replace || !t.find(k))) {
    // A unique index is checked before anything changes.
    if (!unique_ok(table, row.data(), k, State::kAllFields)) {
      state_->release_row(table, row.data());
      return false;
    }
  }
  BTree::Pos at;
  if (t.insert(k, row.data(), &at)) {
    state_->note_insert(table, k, at);
    // The tree's own key: `k` may be borrowed from the row.
    if (state_->has_indexes(table)) state_->index_add(table, t.row_at(at), t.key_at(at));
    return true;
  }
  if (!replace) {
    // The message first: a text key points into the row being released.
    std::string message = fmt::format("`{}` already has key {}", td.name, key_text(table, k));
    state_->release_row(table, row.data());
    return fail(ErrorCode::Duplicate, std::move(message));
  }
  BTree::Pos pos;
  Value* old = t.find_mut(k, &pos);
  if (state_->has_indexes(table)) state_->index_drop(table, old);
  state_->note_replace(table, k, old, pos);  // the journal takes the old row's texts
  std::memcpy(old, row.data(), n * sizeof(Value));
  if (state_->has_indexes(table)) state_->index_add(table, old, t.key_at(pos));
  return true;
}

// Fails `duplicate` if a unique index of the table would hold `row`'s
// values twice (another row than `k` has them).
bool Vm::unique_ok(uint32_t table, const Value* row, const Key& k, uint32_t field) {
  Key other;
  int i = state_->unique_conflict(table, row, k, field, &other);
  if (i < 0) return true;
  return fail(ErrorCode::Duplicate, fmt::format("{} (the row with key {})", state_->conflict_text(static_cast<uint32_t>(i), row),
                                                key_text(table, other)));
}

bool Vm::tdel(uint32_t table, Value key) {
  Key k = key_of(table, key);
  std::array<Value, 256> row;
  if (!state_->table(table).erase(k, row.data())) {
    return fail(ErrorCode::NotFound, fmt::format("`{}` has no key {} to remove",
                                                 module_.tables[table].name, key_text(table, k)));
  }
  if (state_->has_indexes(table)) state_->index_drop(table, row.data());
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
  v->index = kNoIndex;
  v->lo = key_of(table, lo);
  v->hi = key_of(table, hi);
  bool text = v->lo.text != nullptr;
  bool nan = text ? v->lo.text == nan_key() || v->hi.text == nan_key()
                  : std::isnan(as_num(lo)) || std::isnan(as_num(hi));
  v->empty = nan || !key_less(v->lo, v->hi);
  return v;
}

// IVIEW: entries of index `index` with keys in [lo, hi) (encoded texts,
// from KEY or KEYPFX); `whole`: every entry (lo and hi unread).
ViewObj* Vm::make_index_view(uint32_t index, Value lo, Value hi, bool whole) {
  auto* v = arena_.make<ViewObj>();
  v->table = module_.indexes[index].table;
  v->index = index;
  if (whole) {
    // No encoded key starts with 0xFF (vm/key.h): "" and "\xFF" bound them all.
    v->lo = text_key(arena_text(arena_, ""));
    v->hi = text_key(arena_text(arena_, "\xff"));
    v->empty = false;
    return v;
  }
  v->lo = text_key(as_ptr<TextObj>(lo));
  v->hi = text_key(as_ptr<TextObj>(hi));
  v->empty = v->lo.text == nan_key() || v->hi.text == nan_key() || !key_less(v->lo, v->hi);
  return v;
}

const BTree& Vm::tree_of(uint32_t table, uint32_t index) const {
  return index == kNoIndex ? state_->table(table) : state_->index(index);
}

// "`t`" or "`t.by_name`", for messages about a view.
std::string Vm::view_name(const ViewObj* v) const {
  if (v->index == kNoIndex) return fmt::format("`{}`", module_.tables[v->table].name);
  return fmt::format("`{}.{}`", module_.tables[v->table].name, module_.indexes[v->index].name);
}

// The row at position `p` of a table's tree, or of an index's (the row its
// entry's primary key finds).
RowRef* Vm::tree_row_at(uint32_t table, uint32_t index, size_t p) {
  Key k;
  BTree::Pos pos;
  const Value* entry = tree_of(table, index).at(p, &k, &pos);
  assert(entry);
  if (index == kNoIndex) return make_row(table, pos, k);
  const BTree& t = state_->table(table);
  bool found = t.find(state_->entry_row_key(index, entry), &pos) != nullptr;
  // An entry whose row is gone: the index and its table disagree.
  assert(found && "an index entry without its row");
  (void)found;
  return make_row(table, pos, t.key_at(pos));
}

// Positions [lo, hi) of a view in its tree.
std::pair<size_t, size_t> Vm::view_span(const ViewObj* v) const {
  if (v->empty) return {0, 0};
  const BTree& t = tree_of(v->table, v->index);
  size_t lo = t.rank(v->lo), hi = t.rank(v->hi);
  return {lo, hi < lo ? lo : hi};
}

uint64_t Vm::view_count(const ViewObj* v) const {
  auto [lo, hi] = view_span(v);
  return hi - lo;
}

bool Vm::view_end(const ViewObj* v, bool last, Value* r) {
  auto [lo, hi] = view_span(v);
  if (lo >= hi) return fail(ErrorCode::NotFound, fmt::format("the view of {} is empty", view_name(v)));
  *r = ptr_value(tree_row_at(v->table, v->index, last ? hi - 1 : lo));
  return true;
}

// VAT: the row at position R[C] of the view (0-based), as `t.at(i)`.
bool Vm::view_at(const ViewObj* v, Value position, Value* r) {
  auto [lo, hi] = view_span(v);
  double p = as_num(position);
  if (!(p >= 0 && p == std::floor(p) && p < static_cast<double>(hi - lo))) {
    return fail(ErrorCode::NotFound, fmt::format("the view of {} has no row at position {} (it has {})", view_name(v),
                                                 number_text(p), hi - lo));
  }
  *r = ptr_value(tree_row_at(v->table, v->index, lo + static_cast<size_t>(p)));
  return true;
}

// IGET: the row of a unique index with the values whose entries are in
// [R[A], R[A+1]) (KEYPFX over all its fields), as `t[k]`.
bool Vm::iget(uint32_t index, Value* r) {
  if (Value row = ifind(index, r)) {
    *r = row;
    return true;
  }
  ViewObj* v = make_index_view(index, r[0], r[1], false);
  const IndexDesc& d = module_.indexes[index];
  std::string value = v->lo.text == nan_key() ? std::string("(nan)")
                                              : describe_key(v->lo.text->view(), static_cast<uint32_t>(d.fields.size()),
                                                             state_->index(index).layout().key.text_mask);
  return fail(ErrorCode::NotFound, fmt::format("{} has no {}", view_name(v), value));
}

Value Vm::ifind(uint32_t index, const Value* bounds) {
  ViewObj* v = make_index_view(index, bounds[0], bounds[1], false);
  auto [lo, hi] = view_span(v);
  assert(hi - lo <= 1);  // a unique index
  return lo < hi ? ptr_value(tree_row_at(v->table, index, lo)) : 0;
}

// TITER, VITER and their descending forms (TITERD, VITERD): forward loops
// walk a cursor, descending ones positions (a loop body cannot add or
// remove rows of the table it walks, so positions stay put).
IterObj* Vm::table_iter(uint32_t table, bool down) {
  auto* it = arena_.make<IterObj>();
  it->table = table;
  it->tree_index = kNoIndex;
  if (down) {
    it->kind = IterKind::RowsDown;
    it->at = state_->table(table).size();
    it->stop = 0;
  } else {
    it->kind = IterKind::Rows;
    it->cursor.seek(state_->table(table), nullptr);
  }
  return it;
}

IterObj* Vm::view_iter(const ViewObj* v, bool down) {
  auto* it = arena_.make<IterObj>();
  it->table = v->table;
  it->tree_index = v->index;
  if (down) {
    auto [lo, hi] = view_span(v);
    it->kind = IterKind::RowsDown;
    it->at = hi;
    it->stop = lo;
    return it;
  }
  it->kind = IterKind::Rows;
  it->bounded = true;
  it->hi = v->empty ? v->lo : v->hi;  // nothing is below lo and at least lo
  it->cursor.seek(tree_of(v->table, v->index), &v->lo);
  return it;
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
  if (state_->field_indexed(ref->table, field)) return rset_indexed(ref, row, field, nv);
  state_->note_set_field(ref->table, ref->key, field, row[field], ref->pos);  // row_write left pos current
  row[field] = nv;
  return true;
}

// A field some index holds: the unique indexes checked on the row as it
// would be, then the entries of the indexes holding it moved.
bool Vm::rset_indexed(RowRef* ref, Value* row, uint32_t field, Value nv) {
  uint32_t table = ref->table;
  std::array<Value, 256> would;
  uint32_t n = state_->table(table).layout().slots;
  std::memcpy(would.data(), row, n * sizeof(Value));
  would[field] = nv;
  if (!unique_ok(table, would.data(), ref->key, field)) {
    if (state_->text_field(table, field)) release(as_ptr<TextObj>(nv));
    return false;
  }
  state_->index_drop(table, row, field);
  state_->note_set_field(table, ref->key, field, row[field], ref->pos);
  row[field] = nv;
  // The tree's own key (on the heap): the reference's may be in the arena.
  state_->index_add(table, row, state_->table(table).key_at(ref->pos), field);
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

// A view's rows' values in its order.
template <class F>
void Vm::each_view_row(const ViewObj* v, F&& f) {
  if (v->empty) return;
  const BTree& tree = tree_of(v->table, v->index);
  const BTree& table = state_->table(v->table);
  BTree::Cursor c;
  c.seek(tree, &v->lo);
  for (; c.valid() && key_less(c.key(), v->hi); c.next(tree)) {
    const Value* row = tree.row_at(c.pos());
    if (v->index != kNoIndex) {
      row = table.find(state_->entry_row_key(v->index, row));
      assert(row && "an index entry without its row");
    }
    if (!f(row)) return;
  }
}

void Vm::view_rows(const ViewObj* v, std::vector<const Value*>& out) {
  each_view_row(v, [&](const Value* row) {
    out.push_back(row);
    return true;
  });
}

Value Vm::varr(const ViewObj* v) {
  ArrayObj* out = new_array(true);
  uint32_t record = module_.tables[v->table].record;
  each_view_row(v, [&](const Value* row) {
    RecObj* rec = new_record(record);
    std::memcpy(rec->fields, row, rec->count * sizeof(Value));
    return push(out, ptr_value(rec));
  });
  return ptr_value(out);
}

// The next item of a loop, or false when it is done.
bool Vm::next(IterObj* it, Value* item) {
  if (it->kind == IterKind::Array) {
    if (it->index >= it->array->len) return false;
    *item = it->array->items[it->index++];
    return true;
  }
  const BTree& t = tree_of(it->table, it->tree_index);
  if (it->kind == IterKind::RowsDown) {
    if (it->at > t.size()) it->at = t.size();  // defensive: the loop body cannot remove rows
    if (it->at <= it->stop) return false;
    *item = ptr_value(tree_row_at(it->table, it->tree_index, --it->at));
    return true;
  }
  if (it->tree_index != kNoIndex) return next_entry(it, t, item);
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

// A forward loop over an index. The body may assign an indexed field,
// which drops the entry just visited and frees its key: the cursor's own
// re-seek would read that key, so after any change to the index the loop
// seeks past its arena copy instead.
bool Vm::next_entry(IterObj* it, const BTree& t, Value* item) {
  if (it->started) {
    if (t.version() == it->seen) {
      it->cursor.next(t);
    } else {
      it->cursor.seek(t, &it->last);
      if (it->cursor.valid() && key_cmp(it->cursor.key(), it->last) == 0) it->cursor.next(t);
    }
  }
  it->started = true;
  if (!it->cursor.valid()) return false;
  if (it->bounded && !key_less(it->cursor.key(), it->hi)) return false;
  it->last = text_key(arena_text(arena_, it->cursor.key().text->view()));
  it->seen = t.version();
  const BTree& table = state_->table(it->table);
  BTree::Pos pos;
  bool found = table.find(state_->entry_row_key(it->tree_index, t.row_at(it->cursor.pos())), &pos) != nullptr;
  assert(found && "an index entry without its row");
  (void)found;
  *item = ptr_value(make_row(it->table, pos, table.key_at(pos)));
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
  // Most calls pass a few values: building all 256 slots each time cost
  // more than the built-in itself.
  std::array<stdlib::BuiltinArg, 4> few;
  std::vector<stdlib::BuiltinArg> many;
  stdlib::BuiltinArg* in = few.data();
  if (argc > few.size()) {
    many.resize(argc);
    in = many.data();
  }
  for (uint32_t i = 0; i < argc; ++i) {
    switch (b.param(i)) {
      case stdlib::Ty::Text: in[i].text = as_ptr<TextObj>(args[i])->view(); break;
      case stdlib::Ty::TextArray: {
        const auto* a = as_ptr<ArrayObj>(args[i]);
        texts_in_.resize(a->len);
        for (uint32_t k = 0; k < a->len; ++k) texts_in_[k] = as_ptr<TextObj>(a->items[k])->view();
        in[i].texts = texts_in_;
        break;
      }
      case stdlib::Ty::NumArray: {
        const auto* a = as_ptr<ArrayObj>(args[i]);
        nums_in_.resize(a->len);
        for (uint32_t k = 0; k < a->len; ++k) nums_in_[k] = as_num(a->items[k]);
        in[i].nums = nums_in_;
        break;
      }
      default: in[i].num = as_num(args[i]); break;
    }
  }
  stdlib::BuiltinResult out(scratch_, parts_);
  stdlib::BuiltinStatus s = b.impl(std::span<const stdlib::BuiltinArg>(in, argc), out);
  if (s != stdlib::BuiltinStatus::Ok) return builtin_failed(b, s, in, out);
  return builtin_result(b, args, out);
}

bool Vm::builtin_failed(const stdlib::Builtin& b, stdlib::BuiltinStatus s, const stdlib::BuiltinArg* in,
                        const stdlib::BuiltinResult& out) {
  switch (s) {
    case stdlib::BuiltinStatus::BadNumber:
      return fail(ErrorCode::BadNumber, fmt::format("`{}` cannot read {} as a number{}{}", b.name, quoted(in[0].text),
                                                    out.detail.empty() ? "" : ": ", out.detail));
    case stdlib::BuiltinStatus::OutOfRange:
      return fail(ErrorCode::OutOfRange, fmt::format("`{}`: {}", b.name, out.detail));
    case stdlib::BuiltinStatus::TooLong:
    case stdlib::BuiltinStatus::Ok: break;
  }
  return fail(ErrorCode::Budget, fmt::format("`{}`: a text would be longer than {} MiB", b.name, kMaxTextBytes >> 20));
}

// The result goes where the first value came from, args[0] (for a method,
// its receiver: read it before it is replaced).
bool Vm::builtin_result(const stdlib::Builtin& b, Value* args, const stdlib::BuiltinResult& out) {
  if (out.item_result) {
    args[0] = as_ptr<ArrayObj>(args[0])->items[out.item];
    return true;
  }
  switch (b.result) {
    case stdlib::Ty::Num: args[0] = num_value(out.num); return true;
    case stdlib::Ty::Bool: args[0] = bool_value(out.truth); return true;
    case stdlib::Ty::Text:
      if (out.same_as_receiver) return true;  // texts are immutable: the receiver is the result
      return text_result(out.text, &args[0]);
    case stdlib::Ty::TextArray: return texts_result(out.parts, &args[0]);
    default: assert(false && "a built-in with this result is an instruction"); return true;
  }
}

bool Vm::text_result(std::string_view t, Value* r) {
  static_assert(stdlib::kMaxResultTextBytes == kMaxTextBytes);
  assert(t.size() <= kMaxTextBytes);  // the built-in refused longer ones
  if (arena_.allocated() + t.size() > kMaxTempBytes) return fail(ErrorCode::Budget, temp_bytes_message());
  *r = ptr_value(new_text(t));
  return true;
}

// A split's pieces, each a text of its own.
bool Vm::texts_result(const std::vector<std::string_view>& parts, Value* r) {
  size_t bytes = parts.size() * (sizeof(Value) + offsetof(TextObj, bytes) + 1);
  for (std::string_view p : parts) bytes += p.size();
  if (arena_.allocated() + bytes > kMaxTempBytes) return fail(ErrorCode::Budget, temp_bytes_message());
  // A text of at most 16 MiB has at most that many pieces: kMaxArrayItems.
  static_assert(kMaxTextBytes <= kMaxArrayItems);
  ArrayObj* a = sized_array(static_cast<uint32_t>(parts.size()), false);
  for (size_t i = 0; i < parts.size(); ++i) a->items[i] = ptr_value(new_text(parts[i]));
  *r = ptr_value(a);
  return true;
}

// ---------------------------------------------------------------------------
// the loop

// Native code is called through a plain function pointer. clang's
// -fsanitize=function (the sanitizer build) checks such a call by reading a
// type signature just before the callee, which JIT-compiled functions do not
// carry: at the start of the JIT's first page the read faulted. This one
// call goes unchecked.
#if defined(__clang__)
#define AUP_UNCHECKED_NATIVE_CALL __attribute__((no_sanitize("function")))
#else
#define AUP_UNCHECKED_NATIVE_CALL
#endif

AUP_UNCHECKED_NATIVE_CALL
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
  VM_CASE(TITER) { R[A] = ptr_value(table_iter(BX, false)); VM_NEXT; }

  VM_CASE(KEY) { CHECK(make_key(&R[A], B, C, false)); VM_NEXT; }
  VM_CASE(KEYPFX) { CHECK(make_key(&R[A], B, C, true)); VM_NEXT; }

  VM_CASE(RGET) { CHECK(rget(R[B], C, &R[A])); VM_NEXT; }
  VM_CASE(RSET) { CHECK(rset(R[A], B, R[C])); VM_NEXT; }
  VM_CASE(ROWVAL) { CHECK(rowval(R[B], &R[A])); VM_NEXT; }

  VM_CASE(VCOUNT) { R[A] = num_value(static_cast<double>(view_count(as_ptr<ViewObj>(R[B])))); VM_NEXT; }
  VM_CASE(VFIRST) { CHECK(view_end(as_ptr<ViewObj>(R[B]), false, &R[A])); VM_NEXT; }
  VM_CASE(VLAST) { CHECK(view_end(as_ptr<ViewObj>(R[B]), true, &R[A])); VM_NEXT; }
  VM_CASE(VEMPTY) { R[A] = bool_value(view_count(as_ptr<ViewObj>(R[B])) == 0); VM_NEXT; }
  VM_CASE(VITER) { R[A] = ptr_value(view_iter(as_ptr<ViewObj>(R[B]), false)); VM_NEXT; }
  VM_CASE(VARR) { R[A] = varr(as_ptr<ViewObj>(R[B])); VM_NEXT; }
  VM_CASE(VAT) { CHECK(view_at(as_ptr<ViewObj>(R[B]), R[C], &R[A])); VM_NEXT; }
  VM_CASE(IVIEW) { R[A] = ptr_value(make_index_view(BX, R[A], R[A + 1], false)); VM_NEXT; }
  VM_CASE(IALL) { R[A] = ptr_value(make_index_view(BX, 0, 0, true)); VM_NEXT; }
  VM_CASE(IGET) { CHECK(iget(BX, &R[A])); VM_NEXT; }
  VM_CASE(TFIND) { R[A] = tfind(BX, R[A]); VM_NEXT; }
  VM_CASE(IFIND) { R[A] = ifind(BX, &R[A]); VM_NEXT; }
  VM_CASE(SORT) { R[A] = ptr_value(sort(as_ptr<ArrayObj>(R[A]), as_ptr<TextObj>(K[BX]))); VM_NEXT; }
  VM_CASE(TITERD) { R[A] = ptr_value(table_iter(BX, true)); VM_NEXT; }
  VM_CASE(VITERD) { R[A] = ptr_value(view_iter(as_ptr<ViewObj>(R[B]), true)); VM_NEXT; }

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

#include "runtime/keys.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <array>
#include <bit>
#include <cassert>
#include <cmath>

#include "runtime/convert.h"
#include "storage/key_tables.h"
#include "vm/key.h"
#include "vm/text.h"
#include "vm/value.h"

namespace aup::runtime {

namespace {

using storage::kKeysAnswer, storage::kKeysAt, storage::kKeysDigest, storage::kKeysFields, storage::kKeysKey,
    storage::kKeysN, storage::kOrderFields, storage::kOrderKey, storage::kOrderN;

// The vm's shape of system table `t` is storage's definition of key table
// `t`: the same fields, of the same types, keyed by the same field (one
// definition, storage's; vm/state.h holds only what the State needs of it).
constexpr bool same_shape(storage::KeyTableNumber t) {
  const storage::KeyTableDef& def = storage::kKeyTables[t];
  const vm::SystemTableShape& shape = vm::kSystemTables[t];
  if (def.fields.size() != shape.fields || def.key_field != shape.key_field) return false;
  for (uint32_t f = 0; f < shape.fields; ++f) {
    uint32_t type = def.fields[f].type == storage::FieldType::Text ? vm::kTypeText : vm::kTypeNum;
    if (def.fields[f].type == storage::FieldType::Bool || type != shape.types[f]) return false;
  }
  return true;
}
static_assert(vm::kSystemTables.size() == storage::kKeyTableCount);
static_assert(same_shape(storage::kKeysTable) && same_shape(storage::kKeyOrderTable));

// A text of the state's (a heap text: the row it goes into owns it).
vm::Value text_value(std::string_view s) { return vm::ptr_value(vm::heap_text(s)); }

std::string_view text_of(vm::Value v) {
  const auto* t = vm::as_ptr<vm::TextObj>(v);
  return {t->bytes, t->len};
}

}  // namespace

KeyTable::KeyTable(vm::State& s, KeyWindow w)
    : state_(s),
      window_(w),
      keys_(s.system_table(storage::kKeysTable)),
      order_(s.system_table(storage::kKeyOrderTable)) {
  assert(w.count > 0);
}

std::string KeyTable::digest(std::string_view event, const JsonDoc& doc, uint32_t args) {
  XXH3_state_t* h = XXH3_createState();
  XXH3_64bits_reset(h);
  XXH3_64bits_update(h, event.data(), event.size());
  XXH3_64bits_update(h, "", 1);
  if (args != JsonToValue::kNoNode) {
    for (uint32_t i = args; i < doc.after(args); ++i) {
      const JsonNode& n = doc.node(i);
      // Each node as its kind, then what tells it apart among its kind:
      // a string's length and bytes, a number's value, a container's size.
      uint64_t word[2] = {static_cast<uint64_t>(n.kind), 0};
      if (n.kind == JsonNode::Kind::String) word[1] = n.str.size();
      if (n.kind == JsonNode::Kind::Number) word[1] = std::bit_cast<uint64_t>(n.num == 0 ? 0.0 : n.num);
      if (n.kind == JsonNode::Kind::Array || n.kind == JsonNode::Kind::Object) word[1] = n.count;
      XXH3_64bits_update(h, word, sizeof word);
      if (n.kind == JsonNode::Kind::String) XXH3_64bits_update(h, n.str.data(), n.str.size());
    }
  }
  uint64_t d = XXH3_64bits_digest(h);
  XXH3_freeState(h);
  return fmt::format("{:016x}", d);
}

KeyTable::Seen KeyTable::find(std::string_view key, std::string_view digest, std::string& answer) const {
  vm::TextObj* text = vm::heap_text(key);
  const vm::Value* row = state_.table(keys_).find(vm::text_key(text));
  vm::release(text);
  if (!row) return Seen::New;
  if (text_of(row[kKeysDigest]) != digest) return Seen::Other;
  answer.assign(text_of(row[kKeysAnswer]));
  return Seen::Same;
}

void KeyTable::keep(std::string_view key, std::string_view digest, std::string_view answer, double now) {
  drop_oldest(now);
  vm::BTree& order = state_.table(order_);
  double n = 0;
  if (order.size() > 0) {
    vm::Key last;
    order.at(order.size() - 1, &last);
    n = vm::order_num(last.ord) + 1;
  }
  std::array<vm::Value, kKeysFields> row = {text_value(key), text_value(digest), text_value(answer),
                                            vm::num_value(n), vm::num_value(now)};
  vm::Key k = vm::text_key(vm::as_ptr<vm::TextObj>(row[kKeysKey]));
  bool inserted = state_.table(keys_).insert(k, row.data());
  assert(inserted);  // the caller found the key New in this same transaction
  (void)inserted;
  state_.note_insert(keys_, k);
  std::array<vm::Value, kOrderFields> entry = {vm::num_value(n), text_value(key)};
  vm::Key nk = vm::num_key(n);
  inserted = order.insert(nk, entry.data());
  assert(inserted);  // n is past every kept key's
  state_.note_insert(order_, nk);
}

// The oldest keys leave while more than the window's count are kept (one
// more is about to be) or the oldest is past its age.
void KeyTable::drop_oldest(double now) {
  vm::BTree& order = state_.table(order_);
  vm::BTree& keys = state_.table(keys_);
  for (uint32_t dropped = 0; dropped < kMaxKeysDroppedPerEvent && order.size() > 0; ++dropped) {
    vm::Key nk;
    const vm::Value* entry = order.at(0, &nk);
    vm::Key k = vm::text_key(vm::as_ptr<vm::TextObj>(entry[kOrderKey]));
    const vm::Value* row = keys.find(k);
    // The two tables change together, in one transaction: an order entry
    // without its key row is a broken invariant, not a key to keep.
    assert(row && vm::as_num(row[kKeysN]) == vm::order_num(nk.ord));
    bool full = order.size() >= window_.count;
    bool old = !row || (window_.age_seconds > 0 && vm::as_num(row[kKeysAt]) < now - window_.age_seconds * 1000);
    if (!full && !old) return;
    std::array<vm::Value, kKeysFields> gone_row;
    std::array<vm::Value, kOrderFields> gone_entry;
    // The key row first: `k` borrows the order entry's text.
    vm::TextObj* held = vm::as_ptr<vm::TextObj>(entry[kOrderKey]);
    vm::retain(held);
    k = vm::text_key(held);
    if (keys.erase(k, gone_row.data())) state_.note_remove(keys_, k, gone_row.data());
    order.erase(nk, gone_entry.data());
    state_.note_remove(order_, nk, gone_entry.data());
    vm::release(held);
  }
}

size_t KeyTable::size() const { return state_.table(keys_).size(); }

}  // namespace aup::runtime

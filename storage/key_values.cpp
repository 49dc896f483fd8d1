#include "storage/key_values.h"

#include <cassert>
#include <string>
#include <string_view>

namespace aup::storage {

vm::KeySpec key_spec(const TableSchema& t) {
  vm::KeySpec spec;
  for (uint32_t f : t.key_fields) {
    if (t.fields[f].type == FieldType::Text) spec.text_mask |= 1u << spec.fields.size();
    spec.fields.push_back(f);
  }
  return spec;
}

vm::RowLayout row_layout(const TableSchema& t) {
  vm::RowLayout layout;
  layout.slots = static_cast<uint32_t>(t.fields.size());
  for (uint32_t f = 0; f < t.fields.size(); ++f) {
    if (t.fields[f].type == FieldType::Text) layout.text_slots.push_back(f);
  }
  layout.key = key_spec(t);
  return layout;
}

std::vector<uint32_t> field_write_order(const TableSchema& t) {
  std::vector<uint32_t> order = t.key_fields;
  for (uint32_t f = 0; f < t.fields.size(); ++f) {
    if (!t.is_key_field(f)) order.push_back(f);
  }
  return order;
}

std::string key_names(const TableSchema& t) {
  if (!t.composite_key()) return t.fields[t.key_fields[0]].name;
  std::string names = "(";
  for (size_t i = 0; i < t.key_fields.size(); ++i) {
    if (i) names += ", ";
    names += t.fields[t.key_fields[i]].name;
  }
  return names + ")";
}

void write_key_values(Encoder& e, const vm::KeySpec& spec, const vm::Key& k) {
  if (!spec.composite()) {
    if (spec.text(0)) {
      e.text(k.text->view());
    } else {
      e.num(vm::order_num(k.ord));
    }
    return;
  }
  // The tree made this key from a row (vm/key.h's HeldKey), so it decodes:
  // one that did not would be written as another row's key, and the remove
  // replayed on the wrong row (or refused, losing the rest of the log).
  std::vector<vm::KeyComponent> parts;
  bool decoded = vm::decode_key(k.text->view(), static_cast<uint32_t>(spec.fields.size()), spec.text_mask, parts);
  assert(decoded && "a composite key that is not its table's");
  (void)decoded;
  for (uint32_t i = 0; i < spec.fields.size(); ++i) {
    if (spec.text(i)) {
      e.text(parts[i].text);
    } else {
      e.num(parts[i].num);
    }
  }
}

}  // namespace aup::storage

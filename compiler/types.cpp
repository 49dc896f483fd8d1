#include "compiler/types.h"

#include <fmt/format.h>

#include "compiler/sema.h"

namespace aup {

TypeTable::TypeTable() {
  auto basic = [this](TypeKind k) { return make(Type{k, nullptr, nullptr, nullptr, {}}); };
  error_ = basic(TypeKind::Error);
  void_type_ = basic(TypeKind::Void);
  num_ = basic(TypeKind::Num);
  text_ = basic(TypeKind::Text);
  bool_ = basic(TypeKind::Bool);
}

const Type* TypeTable::make(Type t) { return &storage_.emplace_back(std::move(t)); }

const Type* TypeTable::range(const Type* bound) {
  auto [it, fresh] = ranges_.emplace(bound, nullptr);
  if (fresh) it->second = make(Type{TypeKind::Range, bound, nullptr, nullptr, {}});
  return it->second;
}

const Type* TypeTable::record(const RecordInfo* r) {
  auto [it, fresh] = records_.emplace(r, nullptr);
  if (fresh) it->second = make(Type{TypeKind::Record, nullptr, r, nullptr, {}});
  return it->second;
}

const Type* TypeTable::maybe_row(const TableInfo* t) {
  auto [it, fresh] = maybe_rows_.emplace(t, nullptr);
  if (fresh) it->second = make(Type{TypeKind::MaybeRow, nullptr, t->record, t, {}});
  return it->second;
}

const Type* TypeTable::row(const TableInfo* t) {
  auto [it, fresh] = rows_.emplace(t, nullptr);
  if (fresh) it->second = make(Type{TypeKind::Row, nullptr, t->record, t, {}});
  return it->second;
}

const Type* TypeTable::view(const TableInfo* t) {
  auto [it, fresh] = views_.emplace(t, nullptr);
  if (fresh) it->second = make(Type{TypeKind::View, nullptr, t->record, t, {}});
  return it->second;
}

const Type* TypeTable::table(const TableInfo* t) {
  auto [it, fresh] = tables_.emplace(t, nullptr);
  if (fresh) it->second = make(Type{TypeKind::Table, nullptr, t->record, t, {}});
  return it->second;
}

const Type* TypeTable::array(const Type* elem) {
  auto [it, fresh] = arrays_.emplace(elem, nullptr);
  if (fresh) it->second = make(Type{TypeKind::Array, elem, nullptr, nullptr, {}});
  return it->second;
}

const Type* TypeTable::object(std::vector<ObjectField> fields) {
  auto it = objects_.find(fields);
  if (it != objects_.end()) return it->second;
  const Type* t = make(Type{TypeKind::Object, nullptr, nullptr, nullptr, fields});
  objects_.emplace(std::move(fields), t);
  return t;
}

const Type* TypeTable::value_of(const Type* t) {
  if (t->kind == TypeKind::Row) return record(t->record);
  return t;
}

std::string type_name(const Type* t, const Interner& names) {
  switch (t->kind) {
    case TypeKind::Error: return "?";
    case TypeKind::Void: return "no value";
    case TypeKind::Num: return "num";
    case TypeKind::Text: return "text";
    case TypeKind::Bool: return "bool";
    case TypeKind::Row: return fmt::format("row of {}", names.str(t->table->name));
    case TypeKind::MaybeRow: return fmt::format("row of {} or none", names.str(t->table->name));
    case TypeKind::Record:
      if (t->record->is_event_args) return fmt::format("event {}", names.str(t->record->name));
      return std::string(names.str(t->record->name));
    case TypeKind::Array: return "[" + type_name(t->elem, names) + "]";
    case TypeKind::Object: {
      std::string s = "{";
      for (size_t i = 0; i < t->fields.size(); ++i) {
        if (i) s += ", ";
        s += names.str(t->fields[i].name);
        s += ": ";
        s += type_name(t->fields[i].type, names);
      }
      return s + "}";
    }
    case TypeKind::View: return fmt::format("view of {}", names.str(t->table->name));
    case TypeKind::Range: return fmt::format("{} range", type_name(t->elem, names));
    case TypeKind::Table: return fmt::format("table {}", names.str(t->table->name));
  }
  return "?";
}

}  // namespace aup

#include "runtime/schema.h"

#include <vector>

#include "runtime/json.h"

namespace aup::runtime {

std::string type_spelling(const vm::Module& m, uint32_t type) {
  const vm::TypeDesc& t = m.types[type];
  switch (t.code) {
    case vm::TypeCode::Void: return "void";
    case vm::TypeCode::Num: return "num";
    case vm::TypeCode::Text: return "text";
    case vm::TypeCode::Bool: return "bool";
    case vm::TypeCode::Record: return m.records[t.index].name;
    case vm::TypeCode::Row: return "row of " + m.tables[t.index].name;
    case vm::TypeCode::View: return "view of " + m.tables[t.index].name;
    case vm::TypeCode::Array: return "[" + type_spelling(m, t.index) + "]";
    case vm::TypeCode::Object: {
      const vm::ShapeDesc& s = m.shapes[t.index];
      std::string out = "{";
      for (size_t i = 0; i < s.names.size(); ++i) {
        if (i) out += ", ";
        out += s.names[i] + ": " + type_spelling(m, s.types[i]);
      }
      return out + "}";
    }
  }
  return "?";
}

namespace {

// `{"name":"...` opening one entry of a list.
void open_named(std::string& out, std::string_view name) {
  out += "{\"name\":";
  json_append_string(out, name);
}

void append_constant(std::string& out, const vm::Constant& c, uint32_t type, const vm::Module& m) {
  if (m.types[type].code == vm::TypeCode::Array) {
    out += "[]";  // an array field's only default
    return;
  }
  switch (c.kind) {
    case vm::Constant::Kind::Num: json_append_number(out, c.num); return;
    case vm::Constant::Kind::Text: json_append_string(out, c.text); return;
    case vm::Constant::Kind::Bool: out += c.boolean ? "true" : "false"; return;
  }
}

void append_field(std::string& out, const vm::Module& m, std::string_view name, uint32_t type,
                  const vm::Constant* default_value) {
  open_named(out, name);
  out += ",\"type\":";
  json_append_string(out, type_spelling(m, type));
  if (default_value) {
    out += ",\"default\":";
    append_constant(out, *default_value, type, m);
  }
  out += '}';
}

void append_fields(std::string& out, const vm::Module& m, const vm::RecordDesc& r) {
  out += '[';
  for (size_t i = 0; i < r.fields.size(); ++i) {
    if (i) out += ',';
    const vm::FieldDesc& f = r.fields[i];
    append_field(out, m, f.name, f.type, f.has_default ? &f.default_value : nullptr);
  }
  out += ']';
}

void append_result(std::string& out, const vm::Module& m, uint32_t type) {
  if (type == vm::kTypeVoid) return;
  out += ",\"result\":";
  json_append_string(out, type_spelling(m, type));
}

void append_events(std::string& out, const vm::Module& m) {
  out += "\"events\":[";
  for (size_t e = 0; e < m.events.size(); ++e) {
    if (e) out += ',';
    const vm::EventDesc& ed = m.events[e];
    open_named(out, ed.name);
    out += ",\"args\":";
    append_fields(out, m, m.records[ed.record]);
    append_result(out, m, m.functions[ed.handler].result_type);
    out += '}';
  }
  out += ']';
}

void append_queries(std::string& out, const vm::Module& m) {
  out += "\"queries\":[";
  bool first = true;
  for (const vm::Function& f : m.functions) {
    if (f.kind != vm::FnKind::Query) continue;
    if (!first) out += ',';
    first = false;
    open_named(out, f.name);
    out += ",\"args\":[";
    for (size_t p = 0; p < f.param_names.size(); ++p) {
      if (p) out += ',';
      append_field(out, m, f.param_names[p], f.param_types[p], nullptr);
    }
    out += ']';
    append_result(out, m, f.result_type);
    out += '}';
  }
  out += ']';
}

// `["f","g"]`: the names of fields of `r`, in the order given.
void append_field_names(std::string& out, const vm::RecordDesc& r, const std::vector<uint32_t>& fields) {
  out += '[';
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    json_append_string(out, r.fields[fields[i]].name);
  }
  out += ']';
}

// The indexes of table `t`, in declaration order, each with its fields in
// index order and whether it is unique.
void append_indexes(std::string& out, const vm::Module& m, uint32_t t) {
  const vm::RecordDesc& r = m.records[m.tables[t].record];
  bool first = true;
  for (const vm::IndexDesc& x : m.indexes) {
    if (x.table != t) continue;
    if (!first) out += ',';
    first = false;
    open_named(out, x.name);
    out += ",\"fields\":";
    append_field_names(out, r, x.fields);
    out += x.unique ? ",\"unique\":true}" : ",\"unique\":false}";
  }
}

void append_tables(std::string& out, const vm::Module& m) {
  out += "\"tables\":[";
  for (size_t t = 0; t < m.tables.size(); ++t) {
    const vm::TableDesc& td = m.tables[t];
    if (t) out += ',';
    const vm::RecordDesc& r = m.records[td.record];
    open_named(out, td.name);
    out += ",\"record\":";
    json_append_string(out, r.name);
    out += ",\"key\":";
    append_field_names(out, r, td.key_fields);
    out += ",\"indexes\":[";
    append_indexes(out, m, static_cast<uint32_t>(t));
    out += "]}";
  }
  out += ']';
}

void append_records(std::string& out, const vm::Module& m) {
  out += "\"records\":[";
  bool first = true;
  for (const vm::RecordDesc& r : m.records) {
    if (r.event_args) continue;
    if (!first) out += ',';
    first = false;
    open_named(out, r.name);
    out += ",\"fields\":";
    append_fields(out, m, r);
    out += '}';
  }
  out += ']';
}

}  // namespace

std::string schema_json(const vm::Module& m) {
  std::string out = "{";
  append_events(out, m);
  out += ',';
  append_queries(out, m);
  out += ',';
  append_tables(out, m);
  out += ',';
  append_records(out, m);
  return out + "}";
}

}  // namespace aup::runtime

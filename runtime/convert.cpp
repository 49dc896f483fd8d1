#include "runtime/convert.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bitset>
#include <cassert>
#include <charconv>
#include <cmath>

#include "compiler/suggest.h"
#include "stdlib/numbers.h"

namespace aup::runtime {

using vm::TypeCode;
using vm::Value;

namespace {
std::string path_text(const std::vector<std::string>& path) {
  std::string s;
  for (const std::string& p : path) {
    if (!s.empty() && p[0] != '[') s += '.';
    s += p;
  }
  return s;
}
}  // namespace

// ---- reading ------------------------------------------------------------------

std::string expected_message(std::string_view what, std::string_view got) {
  return fmt::format("expected {}, got {}", what, got);
}
std::string unknown_field_message(std::string_view name, const std::vector<std::string_view>& known) {
  return fmt::format("unknown field `{}`{}", name, did_you_mean(name, known));
}
std::string missing_field_message(std::string_view name) { return fmt::format("missing field `{}`", name); }
std::string twice_field_message(std::string_view name) { return fmt::format("field `{}` appears twice", name); }

std::string_view json_kind_name(const JsonNode& n) {
  switch (n.kind) {
    case JsonNode::Kind::Null: return "null";
    case JsonNode::Kind::False:
    case JsonNode::Kind::True: return "bool";
    case JsonNode::Kind::Number: return "number";
    case JsonNode::Kind::String: return "string";
    case JsonNode::Kind::Array: return "array";
    case JsonNode::Kind::Object: return "object";
  }
  return "?";
}

// ---- query strings --------------------------------------------------------------

namespace {

// A value as a message shows it: printable ASCII as it is, any other byte
// as \xNN (an answer stays UTF-8), at most 40 bytes of it.
std::string shown_value(std::string_view v) {
  constexpr size_t kShown = 40;
  std::string out;
  for (size_t i = 0; i < v.size() && i < kShown; ++i) {
    auto c = static_cast<unsigned char>(v[i]);
    out += c >= 0x20 && c < 0x7f ? std::string(1, static_cast<char>(c)) : fmt::format("\\x{:02x}", c);
  }
  return v.size() > kShown ? out + "..." : out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// application/x-www-form-urlencoded's decoding: %XX a byte, + a space.
bool percent_decode(std::string_view in, std::string& out, std::string& error) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '+') {
      out += ' ';
    } else if (in[i] != '%') {
      out += in[i];
    } else if (i + 2 < in.size() && hex_digit(in[i + 1]) >= 0 && hex_digit(in[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(in[i + 1]) * 16 + hex_digit(in[i + 2]));
      i += 2;
    } else {
      error = fmt::format("bad percent-encoding `{}` in the query string (`%` and two hex digits is a byte: "
                          "%25 is `%` itself)",
                          shown_value(in.substr(i, 3)));
      return false;
    }
  }
  return true;
}

// One argument's value, decoded, as JSON of its parameter's type.
bool query_value_json(std::string_view name, std::string_view v, vm::TypeCode type, std::string& json,
                      std::string& error) {
  JsonDoc doc;
  std::string why;
  auto not_a = [&](std::string_view what) {
    error = fmt::format("{}: {}", name, expected_message(what, "`" + shown_value(v) + "`"));
    return false;
  };
  switch (type) {
    case vm::TypeCode::Num:
      // One JSON number, nothing around it; its range is checked as a body's.
      if (v.empty() || v.front() == ' ' || v.back() == ' ' || !doc.parse(v, why) ||
          doc.node(doc.root()).kind != JsonNode::Kind::Number) {
        return not_a("number");
      }
      json += v;
      return true;
    case vm::TypeCode::Bool:
      if (v != "true" && v != "false") return not_a("bool (true or false)");
      json += v;
      return true;
    case vm::TypeCode::Text: {
      size_t at = json.size();
      json_append_string(json, v);
      // The JSON reader checks UTF-8; a string it reads back is a text.
      if (!doc.parse(std::string_view(json).substr(at), why)) {
        error = fmt::format("{}: the value is not UTF-8 once percent-decoded", name);
        return false;
      }
      return true;
    }
    default:
      if (!doc.parse(v, why)) {
        error = fmt::format("{}: not JSON (an array, record or object argument is its JSON): {}", name, why);
        return false;
      }
      json += v;
      return true;
  }
}

}  // namespace

bool query_string_args(std::string_view query, const vm::Module& m, const vm::Function& f, std::string& json,
                       std::string& error) {
  std::vector<bool> seen(f.param_names.size(), false);
  std::string name, value;
  json = "{";
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view piece = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (piece.empty()) continue;  // `a=1&&b=2`, a trailing `&`: nothing between
    size_t eq = piece.find('=');
    if (!percent_decode(piece.substr(0, eq), name, error) ||
        !percent_decode(eq == std::string_view::npos ? std::string_view{} : piece.substr(eq + 1), value, error)) {
      return false;
    }
    size_t p = 0;
    while (p < f.param_names.size() && f.param_names[p] != name) ++p;
    if (p == f.param_names.size()) {
      error = fmt::format("unknown argument `{}` (`{}` takes {}){}", shown_value(name), f.name,
                          f.param_names.empty() ? std::string("none") : fmt::format("{}", fmt::join(f.param_names, ", ")),
                          did_you_mean(name, {f.param_names.begin(), f.param_names.end()}));
      return false;
    }
    if (seen[p]) {
      error = fmt::format("argument `{}` appears twice in the query string", name);
      return false;
    }
    seen[p] = true;
    if (json.size() > 1) json += ',';
    json_append_string(json, name);
    json += ':';
    if (!query_value_json(name, value, m.types[f.param_types[p]].code, json, error)) return false;
  }
  json += '}';
  return true;
}

bool JsonToValue::fail(std::string what, Code code) {
  error_ = std::move(what);
  code_ = code;
  path_.clear();
  return false;
}

bool JsonToValue::finish(bool ok, std::string_view name) {
  if (ok) return true;
  if (!name.empty()) path_.emplace_back(name);  // the outermost part
  std::reverse(path_.begin(), path_.end());  // pushed innermost first
  std::string where = path_text(path_);
  if (!where.empty()) error_ = where + ": " + error_;
  return false;
}

bool JsonToValue::value(uint32_t n, uint32_t type, Value* out, std::string_view name) {
  return finish(value_at(n, type, out), name);
}

bool JsonToValue::record(uint32_t n, uint32_t record, Value* out) { return finish(record_at(n, record, out)); }

bool JsonToValue::value_at(uint32_t n, uint32_t type, Value* out) {
  const vm::Module& m = vm_.module();
  const JsonNode& node = doc_.node(n);
  const vm::TypeDesc& t = m.types[type];
  auto expected = [&](std::string_view what) {
    return fail(expected_message(what, json_kind_name(node)));
  };
  switch (t.code) {
    case TypeCode::Num:
      if (node.kind != JsonNode::Kind::Number) return expected("number");
      return number(node, out);
    case TypeCode::Text:
      if (node.kind != JsonNode::Kind::String) return expected("string");
      if (node.str.size() > vm::kMaxTextBytes) return fail("string longer than 16 MiB");
      // Copied out of the read buffer (docs/architecture.md): a kept text never pins it.
      *out = vm::ptr_value(vm_.new_text(node.str));
      return true;
    case TypeCode::Bool:
      if (node.kind != JsonNode::Kind::True && node.kind != JsonNode::Kind::False) return expected("bool");
      *out = vm::bool_value(node.kind == JsonNode::Kind::True);
      return true;
    case TypeCode::Record:
      if (node.kind != JsonNode::Kind::Object) return expected("object");
      return record_at(n, t.index, out);
    case TypeCode::Object: {
      if (node.kind != JsonNode::Kind::Object) return expected("object");
      const vm::ShapeDesc& s = m.shapes[t.index];
      vm::RecObj* obj = vm_.new_object(t.index);
      struct Field {
        const vm::ShapeDesc& s;
        std::string_view name(size_t f) const { return s.names[f]; }
        uint32_t type(size_t f) const { return s.types[f]; }
        bool defaulted(size_t) const { return false; }
      };
      if (!fields_at(n, s.names.size(), Field{s}, obj)) return false;
      *out = vm::ptr_value(obj);
      return true;
    }
    case TypeCode::Array: {
      if (node.kind != JsonNode::Kind::Array) return expected("array");
      TypeCode item = m.types[t.index].code;
      bool aggregate = item == TypeCode::Array || item == TypeCode::Record || item == TypeCode::Object;
      vm::ArrayObj* a = vm_.new_array(aggregate);
      uint32_t i = doc_.first_child(n);
      for (uint32_t k = 0; k < node.count; ++k, i = doc_.after(i)) {
        Value v;
        if (!value_at(i, t.index, &v)) {
          path_.push_back(fmt::format("[{}]", k));
          return false;
        }
        // The array's fault, not the item's: its path ends at the array.
        if (!vm_.push(a, v)) return fail(fmt::format("array longer than {} items", vm::kMaxArrayItems));
      }
      *out = vm::ptr_value(a);
      return true;
    }
    default:
      return fail("this type cannot come from JSON");
  }
}

// Every num a request gives (event fields, query parameters, and whatever
// they hold) comes through here, so this is the one place the numbers are
// checked.
bool JsonToValue::number(const JsonNode& node, Value* out) {
  if (!node.finite) return fail(fmt::format("{} is not a finite number", node.raw));
  // Rounded, it would be another integer: two ids would become one key.
  if (stdlib::integer_rounded(node.raw, node.num)) {
    return fail(fmt::format("{} is not exactly a number aup can hold (integers beyond ±2^53 are rounded: "
                            "it would be {}); send it as text",
                            node.raw, stdlib::exact_integer(node.num)),
                Code::BadNumber);
  }
  *out = vm::num_value(node.num);
  return true;
}

bool JsonToValue::record_at(uint32_t n, uint32_t record, Value* out) {
  const vm::RecordDesc& r = vm_.module().records[record];
  struct Field {
    const vm::RecordDesc& r;
    std::string_view name(size_t f) const { return r.fields[f].name; }
    uint32_t type(size_t f) const { return r.fields[f].type; }
    bool defaulted(size_t f) const { return r.fields[f].has_default; }
  };
  vm::RecObj* rec = vm_.new_record(record);
  if (!fields_at(n, r.fields.size(), Field{r}, rec)) return false;
  *out = vm::ptr_value(rec);
  return true;
}

// Fills `out` from the object's members: each known once, none unknown,
// every field without a default present. (new_record already put the
// defaults in place.)
template <class Field>
bool JsonToValue::fields_at(uint32_t n, size_t count, Field field, vm::RecObj* out) {
  // A record has at most 255 fields (the checker's limit), an object's
  // shape no more: one bit each.
  std::bitset<256> seen;
  assert(count <= seen.size());
  if (n != kNoNode) {
    const JsonNode& obj = doc_.node(n);
    uint32_t key = doc_.first_child(n);
    for (uint32_t k = 0; k < obj.count; ++k) {
      const JsonNode& kn = doc_.node(key);
      uint32_t val = key + 1;
      size_t f = 0;
      while (f < count && field.name(f) != kn.str) ++f;
      if (f == count) {
        std::vector<std::string_view> known;
        for (size_t i = 0; i < count; ++i) known.push_back(field.name(i));
        return fail(unknown_field_message(kn.str, known));
      }
      if (seen[f]) return fail(twice_field_message(kn.str));
      seen[f] = true;
      if (!value_at(val, field.type(f), &out->fields[f])) {
        path_.emplace_back(field.name(f));
        return false;
      }
      key = doc_.after(val);
    }
  }
  for (size_t f = 0; f < count; ++f) {
    if (!seen[f] && !field.defaulted(f)) return fail(missing_field_message(field.name(f)));
  }
  return true;
}

// ---- writing --------------------------------------------------------------------

bool ValueToJson::fail(vm::ErrorCode code, std::string what) {
  code_ = code;
  error_ = std::move(what);
  return false;
}

// The path to a failing part is collected while the recursion unwinds
// (nothing is kept on the way down, where everything usually succeeds).
bool ValueToJson::write(Value v, uint32_t type, std::string& out) {
  path_.clear();
  if (write_at(v, type, out, 0)) return true;
  std::reverse(path_.begin(), path_.end());  // pushed innermost first
  std::string where = path_text(path_);
  if (!where.empty()) error_ = fmt::format("{} as `{}` of the result", error_, where);
  return false;
}

// A record's or an object's fields as a JSON object, in field order.
// `name(i)` and `type(i)` describe field i (read from the module, so no
// per-value allocation).
template <class Name, class Type>
bool ValueToJson::fields(const Value* values, size_t count, Name name, Type type, std::string& out,
                         uint32_t depth) {
  out += '{';
  for (size_t i = 0; i < count; ++i) {
    if (i) out += ',';
    json_append_string(out, name(i));
    out += ':';
    if (!write_at(values[i], type(i), out, depth + 1)) {
      path_.push_back(std::string(name(i)));
      return false;
    }
  }
  out += '}';
  return true;
}

bool ValueToJson::record(const Value* values, uint32_t record, std::string& out, uint32_t depth) {
  const vm::RecordDesc& r = vm_.module().records[record];
  return fields(
      values, r.fields.size(), [&](size_t i) -> std::string_view { return r.fields[i].name; },
      [&](size_t i) { return r.fields[i].type; }, out, depth);
}

bool ValueToJson::write_at(Value v, uint32_t type, std::string& out, uint32_t depth) {
  if (depth > kMaxResultDepth) {
    return fail(vm::ErrorCode::Budget, fmt::format("the result nests deeper than {}", kMaxResultDepth));
  }
  const vm::Module& m = vm_.module();
  const vm::TypeDesc& t = m.types[type];
  switch (t.code) {
    case TypeCode::Void: out += "null"; return true;
    case TypeCode::Num: {
      double d = vm::as_num(v);
      if (!std::isfinite(d)) {
        return fail(vm::ErrorCode::NotFinite,
                    fmt::format("cannot return {}", std::isnan(d) ? "nan" : d > 0 ? "inf" : "-inf"));
      }
      json_append_number(out, d);
      return true;
    }
    case TypeCode::Text: json_append_string(out, vm::as_ptr<vm::TextObj>(v)->view()); return true;
    case TypeCode::Bool: out += v ? "true" : "false"; return true;
    case TypeCode::Record: return record(vm::as_ptr<vm::RecObj>(v)->fields, t.index, out, depth);
    case TypeCode::Object: {
      const vm::ShapeDesc& s = m.shapes[t.index];
      return fields(
          vm::as_ptr<vm::RecObj>(v)->fields, s.names.size(),
          [&](size_t i) -> std::string_view { return s.names[i]; }, [&](size_t i) { return s.types[i]; },
          out, depth);
    }
    case TypeCode::Array: {
      auto* a = vm::as_ptr<vm::ArrayObj>(v);
      out += '[';
      for (uint32_t i = 0; i < a->len; ++i) {
        if (i) out += ',';
        if (!write_at(a->items[i], t.index, out, depth + 1)) {
          path_.push_back(fmt::format("[{}]", i));
          return false;
        }
      }
      out += ']';
      return true;
    }
    case TypeCode::Row: {
      auto* ref = vm::as_ptr<vm::RowRef>(v);
      const Value* row = vm_.row_values(ref);
      if (!row) return fail(vm::ErrorCode::StaleRow, vm_.failure().message);
      return record(row, m.tables[t.index].record, out, depth);
    }
    case TypeCode::View: {
      rows_.clear();
      vm_.view_rows(vm::as_ptr<vm::ViewObj>(v), rows_);
      uint32_t record_index = m.tables[t.index].record;
      out += '[';
      for (size_t i = 0; i < rows_.size(); ++i) {
        if (i) out += ',';
        if (!record(rows_[i], record_index, out, depth + 1)) return false;
      }
      out += ']';
      return true;
    }
  }
  return false;
}

}  // namespace aup::runtime

#include "cli/table_format.h"

#include <algorithm>
#include <vector>

#include "cli/pretty_json.h"
#include "runtime/json.h"

namespace aup::cli {

namespace {

using runtime::JsonDoc;
using runtime::JsonNode;

struct Cell {
  std::string text;
  bool right = false;  // a number: right-aligned, as tables of figures are
};

struct Rows {
  std::vector<std::string> fields;             // every row's fields, in first-seen order
  std::vector<std::vector<std::string>> names;  // each row's field names
  std::vector<std::vector<Cell>> cells;         // and their values
  std::string next;                             // a read answer's `next`, as JSON
};

// Display width: one column per code point (UTF-8 continuation bytes
// take none), good for the texts rows hold without a width table.
size_t width(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

bool has_control(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; });
}

Cell cell(const JsonDoc& doc, uint32_t i) {
  const JsonNode& n = doc.node(i);
  switch (n.kind) {
    case JsonNode::Kind::String:
      return {has_control(n.str) ? std::string(n.raw) : std::string(n.str), false};
    case JsonNode::Kind::Number: return {std::string(n.raw), true};
    case JsonNode::Kind::Array:
    case JsonNode::Kind::Object: return {pretty_json(n.raw, SIZE_MAX), false};
    default: return {std::string(n.raw), false};
  }
}

void add_row(const JsonDoc& doc, uint32_t obj, Rows& rows) {
  std::vector<std::string>& names = rows.names.emplace_back();
  std::vector<Cell>& cells = rows.cells.emplace_back();
  uint32_t c = obj + 1;
  for (uint32_t k = 0; k < doc.node(obj).count; ++k, c = doc.after(c + 1)) {
    std::string name(doc.node(c).str);
    if (std::find(rows.fields.begin(), rows.fields.end(), name) == rows.fields.end()) rows.fields.push_back(name);
    names.push_back(std::move(name));
    cells.push_back(cell(doc, c + 1));
  }
}

// The rows of an array of objects; false when some item is not one.
bool array_rows(const JsonDoc& doc, uint32_t array, Rows& rows) {
  for (uint32_t i = array + 1; i < doc.node(array).next; i = doc.after(i)) {
    if (doc.node(i).kind != JsonNode::Kind::Object) return false;
  }
  for (uint32_t i = array + 1; i < doc.node(array).next; i = doc.after(i)) add_row(doc, i, rows);
  return true;
}

// The rows `root` holds, if it is rows: false when it is not.
bool find_rows(const JsonDoc& doc, Rows& rows) {
  uint32_t root = doc.root();
  const JsonNode& n = doc.node(root);
  if (n.kind == JsonNode::Kind::Array) return n.count > 0 && array_rows(doc, root, rows);
  if (n.kind != JsonNode::Kind::Object) return false;
  uint32_t list = doc.member(root, "rows");
  if (list && doc.node(list).kind == JsonNode::Kind::Array && array_rows(doc, list, rows)) {
    if (uint32_t next = doc.member(root, "next")) rows.next = pretty_json(doc.node(next).raw, SIZE_MAX);
    return true;
  }
  add_row(doc, root, rows);
  return true;
}

const Cell* field_of(const Rows& rows, size_t row, const std::string& field) {
  const std::vector<std::string>& names = rows.names[row];
  auto at = std::find(names.begin(), names.end(), field);
  return at == names.end() ? nullptr : &rows.cells[row][static_cast<size_t>(at - names.begin())];
}

void pad(std::string& out, const std::string& text, size_t to, bool right) {
  size_t fill = to - std::min(to, width(text));
  if (right) out.append(fill, ' ');
  out += text;
  if (!right) out.append(fill, ' ');
}

std::string table(const Rows& rows) {
  std::vector<size_t> widths;
  for (const std::string& f : rows.fields) widths.push_back(width(f));
  for (size_t r = 0; r < rows.cells.size(); ++r) {
    for (size_t f = 0; f < rows.fields.size(); ++f) {
      if (const Cell* c = field_of(rows, r, rows.fields[f])) widths[f] = std::max(widths[f], width(c->text));
    }
  }
  std::string rule = "+";
  for (size_t w : widths) rule += std::string(w + 2, '-') + "+";
  std::string out = rule + "\n|";
  for (size_t f = 0; f < rows.fields.size(); ++f) {
    out += ' ';
    pad(out, rows.fields[f], widths[f], false);
    out += " |";
  }
  out += "\n" + rule;
  for (size_t r = 0; r < rows.cells.size(); ++r) {
    out += "\n|";
    for (size_t f = 0; f < rows.fields.size(); ++f) {
      const Cell* c = field_of(rows, r, rows.fields[f]);
      out += ' ';
      pad(out, c ? c->text : std::string(), widths[f], c && c->right);
      out += " |";
    }
  }
  return out + "\n" + rule;
}

std::string lines(const Rows& rows) {
  size_t name_width = 0;
  for (const std::string& f : rows.fields) name_width = std::max(name_width, width(f));
  std::string out;
  for (size_t r = 0; r < rows.cells.size(); ++r) {
    if (r) out += "\n\n";
    for (size_t f = 0; f < rows.names[r].size(); ++f) {
      if (f) out += '\n';
      pad(out, rows.names[r][f], name_width, true);
      out += " = " + rows.cells[r][f].text;
    }
  }
  return out;
}

}  // namespace

bool parse_rows_mode(std::string_view word, RowsMode& out) {
  if (word == "table") out = RowsMode::Table;
  else if (word == "line") out = RowsMode::Line;
  else if (word == "json") out = RowsMode::Json;
  else return false;
  return true;
}

std::string_view rows_mode_name(RowsMode mode) {
  return mode == RowsMode::Table ? "table" : mode == RowsMode::Line ? "line" : "json";
}

std::string format_result(std::string_view result_json, RowsMode mode) {
  JsonDoc doc;
  std::string error;
  if (!doc.parse(result_json, error)) return std::string(result_json);
  Rows rows;
  if (mode == RowsMode::Json || !find_rows(doc, rows)) return pretty_json(result_json);
  std::string out = rows.cells.empty() ? "(no rows)" : mode == RowsMode::Table ? table(rows) : lines(rows);
  // More rows remain past the limit: where to go on from (`from` of the next read).
  if (!rows.next.empty()) out += "\nnext: " + rows.next;
  return out;
}

}  // namespace aup::cli

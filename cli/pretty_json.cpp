#include "cli/pretty_json.h"

#include "runtime/json.h"

namespace aup::cli {

namespace {

using runtime::JsonDoc;
using runtime::JsonNode;

bool is_container(const JsonNode& n) { return n.kind == JsonNode::Kind::Array || n.kind == JsonNode::Kind::Object; }

// Node i on one line, with a space after each `:` and `,`.
void flat(const JsonDoc& doc, uint32_t i, std::string& out) {
  const JsonNode& n = doc.node(i);
  if (!is_container(n)) {
    out += n.raw;
    return;
  }
  bool object = n.kind == JsonNode::Kind::Object;
  out += object ? '{' : '[';
  uint32_t c = i + 1;
  for (uint32_t k = 0; k < n.count; ++k) {
    if (k) out += ", ";
    if (object) {
      out += doc.node(c).raw;
      out += ": ";
      ++c;
    }
    flat(doc, c, out);
    c = doc.after(c);
  }
  out += object ? '}' : ']';
}

void laid_out(const JsonDoc& doc, uint32_t i, size_t indent, size_t width, std::string& out) {
  std::string one;
  flat(doc, i, one);
  const JsonNode& n = doc.node(i);
  if (!is_container(n) || n.count == 0 || indent + one.size() <= width) {
    out += one;
    return;
  }
  bool object = n.kind == JsonNode::Kind::Object;
  out += object ? "{\n" : "[\n";
  uint32_t c = i + 1;
  for (uint32_t k = 0; k < n.count; ++k) {
    out.append(indent + 2, ' ');
    if (object) {
      out += doc.node(c).raw;
      out += ": ";
      ++c;
    }
    laid_out(doc, c, indent + 2, width, out);
    c = doc.after(c);
    out += k + 1 < n.count ? ",\n" : "\n";
  }
  out.append(indent, ' ');
  out += object ? '}' : ']';
}

}  // namespace

std::string pretty_json(std::string_view json, size_t width) {
  JsonDoc doc;
  std::string error;
  if (!doc.parse(json, error)) return std::string(json);
  std::string out;
  laid_out(doc, doc.root(), 0, width, out);
  return out;
}

}  // namespace aup::cli

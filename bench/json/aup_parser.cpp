#include <bit>

#include "bench/json/parsers.h"

namespace aup::bench::json {

using runtime::JsonNode;

bool AupParser::walk(std::string_view line, size_t capacity, uint64_t& sum) {
  (void)capacity;
  if (!doc_.parse(line, error_)) return false;
  uint32_t end = doc_.node(doc_.root()).next;
  for (uint32_t i = 0; i < end; ++i) {
    const JsonNode& n = doc_.node(i);
    if (n.kind == JsonNode::Kind::Number) {
      fold_number(sum, std::bit_cast<uint64_t>(n.num));
    } else if (n.kind == JsonNode::Kind::String) {
      fold_string(sum, n.str);
    }
  }
  return true;
}

bool AupParser::read_v(std::string_view line, size_t capacity, double& out) {
  (void)capacity;
  if (!doc_.parse(line, error_)) return false;
  const JsonNode& root = doc_.node(doc_.root());
  if (root.kind != JsonNode::Kind::Object || root.count != 1) return false;
  uint32_t key = doc_.first_child(doc_.root());
  if (doc_.node(key).str != "v") return false;
  const JsonNode& v = doc_.node(key + 1);
  if (v.kind != JsonNode::Kind::Number || !v.finite) return false;
  out = v.num;
  return true;
}

}  // namespace aup::bench::json

#include "bench/tpcc/aup_json.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace aup::tpcc {

namespace {

using Kind = runtime::JsonNode::Kind;

// Integers up to 2^53 are exact in binary64; every number tpcc.aup stores
// (keys, cents, counts, milliseconds) is far below it.
constexpr double kMaxExactWhole = 9007199254740992.0;

}  // namespace

void JsonLine::parse(std::string_view line, std::string_view what) {
  line_ = line;
  what_ = what;
  if (!doc_.parse(line, error_)) fail("not JSON (" + error_ + ")");
  if (node(root()).kind != Kind::Object) fail("not a JSON object");
}

uint32_t JsonLine::find(uint32_t object, std::string_view key) const {
  const runtime::JsonNode& o = node(object);
  if (o.kind != Kind::Object) fail("expected an object");
  uint32_t k = doc_.first_child(object);
  for (uint32_t m = 0; m < o.count; ++m) {
    if (node(k).str == key) return k + 1;
    k = node(k + 1).next;
  }
  return 0;
}

uint32_t JsonLine::member(uint32_t object, std::string_view key) const {
  uint32_t v = find(object, key);
  if (v == 0) fail(fmt::format("no `{}`", key));
  return v;
}

int64_t JsonLine::whole(uint32_t value) const {
  const runtime::JsonNode& n = node(value);
  if (n.kind != Kind::Number || !n.finite || std::trunc(n.num) != n.num || std::fabs(n.num) > kMaxExactWhole) {
    fail(fmt::format("`{}` is not a whole number", n.raw));
  }
  return static_cast<int64_t>(n.num);
}

bool JsonLine::boolean(uint32_t value) const {
  const runtime::JsonNode& n = node(value);
  if (n.kind != Kind::True && n.kind != Kind::False) fail(fmt::format("`{}` is not true or false", n.raw));
  return n.kind == Kind::True;
}

std::string_view JsonLine::text(uint32_t value) const {
  const runtime::JsonNode& n = node(value);
  if (n.kind != Kind::String) fail(fmt::format("`{}` is not a text", n.raw));
  return n.str;
}

uint32_t JsonLine::first_item(uint32_t array) const {
  if (node(array).kind != Kind::Array) fail(fmt::format("`{:.80}` is not an array", node(array).raw));
  return doc_.first_child(array);
}

void JsonLine::fail(std::string_view why) const {
  std::string_view quoted = line_.substr(0, kMaxQuotedBytes);
  throw std::runtime_error(fmt::format("aup: {}: {}: {}{}", what_, why, quoted,
                                       quoted.size() < line_.size() ? " (cut)" : ""));
}

void check_id(const JsonLine& answer, uint64_t id) {
  uint32_t v = answer.find(answer.root(), "id");
  if (v == 0 || answer.node(v).kind != Kind::Number || answer.node(v).num != static_cast<double>(id)) {
    answer.fail(fmt::format("expected the answer to request {}", id));
  }
}

uint32_t ok_result(const JsonLine& answer, uint64_t id) {
  check_id(answer, id);
  if (!answer.boolean(answer.member(answer.root(), "ok"))) answer.fail("not ok");
  return answer.member(answer.root(), "result");
}

}  // namespace aup::tpcc

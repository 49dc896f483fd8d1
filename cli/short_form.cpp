#include "cli/short_form.h"

#include <fmt/format.h>

#include <cctype>

#include "compiler/suggest.h"
#include "runtime/convert.h"
#include "runtime/json.h"

namespace aup::cli {

using runtime::JsonDoc;
using runtime::JsonNode;

const RequestSpec* Schema::find(std::string_view name) const {
  for (const RequestSpec& r : requests) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

namespace {

std::string string_member(const JsonDoc& doc, uint32_t obj, std::string_view key) {
  uint32_t v = doc.member(obj, key);
  return v && doc.node(v).kind == JsonNode::Kind::String ? std::string(doc.node(v).str) : std::string();
}

// One entry of "events" or "queries".
bool read_request(const JsonDoc& doc, uint32_t node, bool event, RequestSpec& r) {
  if (doc.node(node).kind != JsonNode::Kind::Object) return false;
  r.name = string_member(doc, node, "name");
  r.event = event;
  r.result = string_member(doc, node, "result");
  uint32_t args = doc.member(node, "args");
  if (r.name.empty() || !args || doc.node(args).kind != JsonNode::Kind::Array) return false;
  for (uint32_t a = args + 1; a < doc.node(args).next; a = doc.after(a)) {
    ArgSpec spec{string_member(doc, a, "name"), string_member(doc, a, "type"), doc.member(a, "default") != 0};
    if (spec.name.empty() || spec.type.empty()) return false;
    r.args.push_back(std::move(spec));
  }
  return true;
}

bool read_list(const JsonDoc& doc, std::string_view key, bool event, Schema& out) {
  uint32_t list = doc.member(doc.root(), key);
  if (!list || doc.node(list).kind != JsonNode::Kind::Array) return false;
  for (uint32_t n = list + 1; n < doc.node(list).next; n = doc.after(n)) {
    RequestSpec r;
    if (!read_request(doc, n, event, r)) return false;
    out.requests.push_back(std::move(r));
  }
  return true;
}

// A list of names (a key's or an index's fields); none when it is not one.
std::vector<std::string> string_list(const JsonDoc& doc, uint32_t list) {
  std::vector<std::string> out;
  if (!list || doc.node(list).kind != JsonNode::Kind::Array) return out;
  for (uint32_t n = list + 1; n < doc.node(list).next; n = doc.after(n)) out.emplace_back(doc.node(n).str);
  return out;
}

// One entry of "tables": its name, key and indexes.
TableSpec read_table(const JsonDoc& doc, uint32_t node) {
  TableSpec t{string_member(doc, node, "name"), string_list(doc, doc.member(node, "key")), {}};
  uint32_t indexes = doc.member(node, "indexes");
  if (!indexes || doc.node(indexes).kind != JsonNode::Kind::Array) return t;
  for (uint32_t x = indexes + 1; x < doc.node(indexes).next; x = doc.after(x)) {
    uint32_t unique = doc.member(x, "unique");
    t.indexes.push_back({string_member(doc, x, "name"), string_list(doc, doc.member(x, "fields")),
                         unique && doc.node(unique).kind == JsonNode::Kind::True});
  }
  return t;
}

}  // namespace

bool parse_schema(std::string_view result_json, Schema& out, std::string& error) {
  JsonDoc doc;
  if (!doc.parse(result_json, error)) return false;
  out = Schema{};
  if (doc.node(doc.root()).kind != JsonNode::Kind::Object || !read_list(doc, "events", true, out) ||
      !read_list(doc, "queries", false, out)) {
    error = "the server's schema answer is not one aup understands (is it an aup server of this version?)";
    return false;
  }
  if (uint32_t tables = doc.member(doc.root(), "tables")) {
    for (uint32_t n = tables + 1; n < doc.node(tables).next; n = doc.after(n)) {
      out.table_specs.push_back(read_table(doc, n));
      out.tables.push_back(out.table_specs.back().name);
    }
  }
  return true;
}

std::string usage(const RequestSpec& r) {
  std::string out = r.name;
  for (const ArgSpec& a : r.args) {
    std::string arg = a.name + "=" + a.type;
    out += a.has_default ? " [" + arg + "]" : " " + arg;
  }
  return out;
}

namespace {

// What the server's reading expects of a JSON value for type `type`
// (runtime/convert.h): number, string or bool; empty for the types only
// the server checks (records, arrays, objects).
std::string_view expected_kind(std::string_view type) {
  return type == "num" ? "number" : type == "text" ? "string" : type == "bool" ? "bool" : "";
}

}  // namespace

bool value_json(const ArgSpec& a, std::string_view word, std::string& out, std::string& error) {
  bool quoted = !word.empty() && word.front() == '"';
  if (a.type == "text" && !quoted) {
    runtime::json_append_string(out, word);
    return true;
  }
  std::string_view want = expected_kind(a.type);
  JsonDoc doc;
  std::string why;
  if (!doc.parse(word, why)) {
    // Not JSON, so no request would carry it: said as the server would
    // say it of a value, the word shown as typed.
    error = want.empty() || want == "string"
                ? fmt::format("{}: `{}` is not JSON ({})", a.name, word, why)
                : fmt::format("{}: {}", a.name, runtime::expected_message(want, fmt::format("`{}`", word)));
    return false;
  }
  std::string_view got = runtime::json_kind_name(doc.node(doc.root()));
  if (!want.empty() && got != want) {
    error = fmt::format("{}: {}", a.name, runtime::expected_message(want, got));
    return false;
  }
  out += word;
  return true;
}

namespace {

// Which argument a word gives: `name=value` when `name` is one of r's
// arguments, else the next one in order not given yet. -1: none left.
int argument_of(const RequestSpec& r, std::string_view word, const std::vector<bool>& given, std::string_view& value) {
  if (size_t eq = word.find('='); eq != std::string_view::npos) {
    for (size_t i = 0; i < r.args.size(); ++i) {
      if (r.args[i].name == word.substr(0, eq)) {
        value = word.substr(eq + 1);
        return static_cast<int>(i);
      }
    }
  }
  value = word;
  for (size_t i = 0; i < r.args.size(); ++i) {
    if (!given[i]) return static_cast<int>(i);
  }
  return -1;
}

// `name=...` where `name` looks like a name but is none of r's arguments: a
// misspelt argument, told as such rather than read as a value (a value
// with `=` in it can be given quoted).
bool unknown_name(const RequestSpec& r, std::string_view word, std::string& error) {
  size_t eq = word.find('=');
  if (eq == 0 || eq == std::string_view::npos || word.front() == '"') return false;
  std::string_view name = word.substr(0, eq);
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  std::vector<std::string_view> names;
  for (const ArgSpec& a : r.args) {
    if (a.name == name) return false;
    names.push_back(a.name);
  }
  error = runtime::unknown_field_message(name, names);
  return true;
}

bool build_args(const RequestSpec& r, const std::vector<std::string>& words, std::string& args, std::string& error) {
  std::vector<bool> given(r.args.size(), false);
  args = "{";
  for (size_t w = 1; w < words.size(); ++w) {
    if (unknown_name(r, words[w], error)) return false;
    std::string_view value;
    int i = argument_of(r, words[w], given, value);
    if (i < 0) {
      error = fmt::format("{} takes {} argument{}; `{}` is one too many", r.name, r.args.size(),
                          r.args.size() == 1 ? "" : "s", words[w]);
      return false;
    }
    const ArgSpec& a = r.args[static_cast<size_t>(i)];
    if (given[static_cast<size_t>(i)]) {
      error = runtime::twice_field_message(a.name);
      return false;
    }
    given[static_cast<size_t>(i)] = true;
    if (args.size() > 1) args += ',';
    runtime::json_append_string(args, a.name);
    args += ':';
    if (!value_json(a, value, args, error)) return false;
  }
  for (size_t i = 0; i < r.args.size(); ++i) {
    if (!given[i] && !r.args[i].has_default) {
      error = runtime::missing_field_message(r.args[i].name);
      return false;
    }
  }
  args += '}';
  return true;
}

std::string known(const Schema& s) {
  std::string lists[2];  // events, queries
  for (const RequestSpec& r : s.requests) {
    std::string& list = lists[r.event ? 0 : 1];
    list += (list.empty() ? "" : ", ") + r.name;
  }
  return fmt::format("events: {}; queries: {}", lists[0].empty() ? "none" : lists[0],
                     lists[1].empty() ? "none" : lists[1]);
}

}  // namespace

bool split_words(std::string_view line, std::vector<std::string>& words, std::string& error) {
  words.clear();
  std::string word;
  bool in_word = false;
  runtime::JsonStrings strings;
  int depth = 0;
  for (char c : line) {
    if (!strings.in_string() && depth == 0 && (c == ' ' || c == '\t')) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    word += c;
    if (!strings.outside(c)) continue;
    if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  if (strings.in_string() || depth > 0) {
    error = strings.in_string() ? "a quote is not closed" : "a bracket is not closed";
    return false;
  }
  if (in_word) words.push_back(std::move(word));
  return true;
}

bool build_request(const Schema& s, const std::vector<std::string>& words, std::string& line, std::string& error) {
  if (words.empty()) {
    error = "no request: " + known(s);
    return false;
  }
  const RequestSpec* r = s.find(words[0]);
  if (!r) {
    std::vector<std::string_view> names;
    for (const RequestSpec& k : s.requests) names.push_back(k.name);
    error = fmt::format("no event or query `{}`{}; {}", words[0], did_you_mean(words[0], names), known(s));
    return false;
  }
  std::string args;
  if (!build_args(*r, words, args, error)) {
    error += "; usage: " + usage(*r);
    return false;
  }
  line = fmt::format("{{\"{}\":", r->event ? "event" : "query");
  runtime::json_append_string(line, r->name);
  line += ",\"args\":" + args + "}";
  return true;
}

}  // namespace aup::cli

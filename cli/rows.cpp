#include "cli/rows.h"

#include <fmt/format.h>

#include <chrono>
#include <csignal>

#include "cli/call.h"
#include "cli/client.h"
#include "cli/short_form.h"
#include "compiler/driver.h"
#include "compiler/suggest.h"
#include "runtime/json.h"
#include "runtime/read.h"
#include "runtime/replay.h"
#include "storage/io.h"

namespace aup::cli {

namespace {

using runtime::JsonDoc;
using runtime::JsonNode;

// What the schema answer says of a table: its fields (name and type, from
// its record), its key's and each index's fields.
struct TableInfo {
  std::string name;
  std::vector<ArgSpec> fields;
  std::vector<std::string> key;
  std::vector<std::pair<std::string, std::vector<std::string>>> indexes;
};

std::vector<std::string> strings(const JsonDoc& doc, uint32_t list) {
  std::vector<std::string> out;
  if (!list || doc.node(list).kind != JsonNode::Kind::Array) return out;
  for (uint32_t n = list + 1; n < doc.node(list).next; n = doc.after(n)) out.emplace_back(doc.node(n).str);
  return out;
}

std::string str(const JsonDoc& doc, uint32_t obj, std::string_view key) {
  uint32_t v = doc.member(obj, key);
  return v && doc.node(v).kind == JsonNode::Kind::String ? std::string(doc.node(v).str) : std::string();
}

// The record named `record` of the schema's "records": its fields.
std::vector<ArgSpec> record_fields(const JsonDoc& doc, const std::string& record) {
  std::vector<ArgSpec> out;
  uint32_t records = doc.member(doc.root(), "records");
  if (!records) return out;
  for (uint32_t r = records + 1; r < doc.node(records).next; r = doc.after(r)) {
    if (str(doc, r, "name") != record) continue;
    uint32_t fields = doc.member(r, "fields");
    for (uint32_t f = fields + 1; fields && f < doc.node(fields).next; f = doc.after(f)) {
      out.push_back(ArgSpec{str(doc, f, "name"), str(doc, f, "type"), doc.member(f, "default") != 0});
    }
  }
  return out;
}

bool parse_tables(const std::string& schema_json, std::vector<TableInfo>& out, std::string& error) {
  JsonDoc doc;
  uint32_t tables = 0;
  if (!doc.parse(schema_json, error) || !(tables = doc.member(doc.root(), "tables"))) {
    error = "the server's schema answer lists no tables (is it an aup server of this version?)";
    return false;
  }
  for (uint32_t t = tables + 1; t < doc.node(tables).next; t = doc.after(t)) {
    TableInfo info{str(doc, t, "name"), record_fields(doc, str(doc, t, "record")), strings(doc, doc.member(t, "key")),
                   {}};
    uint32_t indexes = doc.member(t, "indexes");
    for (uint32_t i = indexes + 1; indexes && i < doc.node(indexes).next; i = doc.after(i)) {
      info.indexes.emplace_back(str(doc, i, "name"), strings(doc, doc.member(i, "fields")));
    }
    out.push_back(std::move(info));
  }
  return true;
}

const TableInfo* find_table(const std::vector<TableInfo>& tables, const std::string& name, std::string& error) {
  std::vector<std::string_view> names;
  for (const TableInfo& t : tables) {
    if (t.name == name) return &t;
    names.push_back(t.name);
  }
  error = fmt::format("no table `{}`{}", name, did_you_mean_or_list(name, names, "tables"));
  return nullptr;
}

// The fields a read goes through in order (runtime/read.h): the key's, or
// an index's then the key's not among them.
bool order_fields(const TableInfo& t, const std::string& index, std::vector<ArgSpec>& out, std::string& error) {
  std::vector<std::string> names;
  if (!index.empty()) {
    auto it = std::find_if(t.indexes.begin(), t.indexes.end(), [&](const auto& i) { return i.first == index; });
    if (it == t.indexes.end()) {
      std::vector<std::string_view> known;
      for (const auto& i : t.indexes) known.push_back(i.first);
      error = fmt::format("`{}` has no index `{}`{}", t.name, index,
                          known.empty() ? std::string(": it has no indexes")
                                        : did_you_mean_or_list(index, known, "its indexes"));
      return false;
    }
    names = it->second;
  }
  for (const std::string& k : t.key) {
    if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
  }
  for (const std::string& n : names) {
    auto f = std::find_if(t.fields.begin(), t.fields.end(), [&](const ArgSpec& a) { return a.name == n; });
    out.push_back(f == t.fields.end() ? ArgSpec{n, "num", false} : *f);
  }
  return true;
}

// "(w, d)".
std::string names_of(const std::vector<ArgSpec>& fields) {
  std::string s = "(";
  for (size_t i = 0; i < fields.size(); ++i) s += (i ? ", " : "") + fields[i].name;
  return s + ")";
}

// Values typed by the order's fields, as a JSON array: each word one value
// in turn, or a word that starts with `[` the JSON array of them.
bool values_json(const std::vector<ArgSpec>& fields, const std::vector<std::string>& words, std::string_view what,
                 std::string& out, std::string& error) {
  if (words.size() == 1 && words[0].starts_with("[")) {
    out += words[0];  // the server checks it
    return true;
  }
  if (words.size() > fields.size()) {
    error = fmt::format("{} has {} values; the order is {}: at most {}", what, words.size(), names_of(fields),
                        fields.size());
    return false;
  }
  out += '[';
  for (size_t i = 0; i < words.size(); ++i) {
    if (i) out += ',';
    if (!value_json(fields[i], words[i], out, error)) return false;
  }
  out += ']';
  return true;
}

struct ReadWanted {
  std::string table, index;
  bool get = false;
  std::vector<std::string> key, from, to;
  std::optional<uint32_t> limit;
  std::optional<uint32_t> bytes;
};

// The read request line for `w`, typed by `tables`.
bool read_line(const std::vector<TableInfo>& tables, const ReadWanted& w, std::string& line, std::string& error) {
  const TableInfo* t = find_table(tables, w.table, error);
  std::vector<ArgSpec> order;
  if (!t || !order_fields(*t, w.index, order, error)) return false;
  line = "{\"read\":{\"table\":";
  runtime::json_append_string(line, w.table);
  if (w.get) {
    if (w.key.size() != order.size() && !(w.key.size() == 1 && w.key[0].starts_with("["))) {
      error = fmt::format("the key of `{}` is {}: {} value{}, not {}", w.table, names_of(order), order.size(),
                          order.size() == 1 ? "" : "s", w.key.size());
      return false;
    }
    line += ",\"key\":";
    if (!values_json(order, w.key, "the key", line, error)) return false;
  }
  if (!w.index.empty()) {
    line += ",\"index\":";
    runtime::json_append_string(line, w.index);
  }
  for (auto [words, what] : {std::pair{&w.from, "from"}, {&w.to, "to"}}) {
    if (words->empty()) continue;
    line += fmt::format(",\"{}\":", what);
    if (!values_json(order, *words, fmt::format("`{}`", what), line, error)) return false;
  }
  if (w.limit) line += fmt::format(",\"limit\":{}", *w.limit);
  if (w.bytes) line += fmt::format(",\"bytes\":{}", *w.bytes);
  line += "}}";
  return true;
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

// One page read: its rows' JSON and the `next` key's, if any.
struct Page {
  std::vector<std::string> rows;
  std::string next;  // "" when the range ended
};

// Sends `line`; fills `page` from an ok answer. The exit status otherwise
// (said on `err`): 1 refused, 2 no answer.
int read_page(Client& client, const std::string& line, double timeout, Page& page, std::string_view command,
              std::FILE* err) {
  std::string answer, error;
  if (!client.exchange(line, to_ms(timeout), answer, error)) {
    fmt::print(err, "aup {}: {}\n", command, error);
    return kExitUsage;
  }
  Answer a = read_answer(answer);
  if (!a.ok) {
    fmt::print(err, "aup {}: {}\n", command, a.error);
    return a.parsed ? kExitErrors : kExitUsage;
  }
  JsonDoc doc;
  uint32_t rows = 0;
  if (!doc.parse(a.result, error) || !(rows = doc.member(doc.root(), "rows"))) {
    fmt::print(err, "aup {}: the answer holds no rows: {}\n", command, answer);
    return kExitUsage;
  }
  page.rows.clear();
  for (uint32_t r = rows + 1; r < doc.node(rows).next; r = doc.after(r)) page.rows.emplace_back(doc.node(r).raw);
  uint32_t next = doc.member(doc.root(), "next");
  page.next = next ? std::string(doc.node(next).raw) : std::string();
  return kExitOk;
}

// Connected, and the server's tables known: 0, or the exit status after
// saying why not.
int open_reading(Client& client, const std::string& address, double timeout, std::vector<TableInfo>& tables,
                 std::string_view command, std::FILE* err) {
  std::signal(SIGPIPE, SIG_IGN);  // a server gone mid-request is an error to report, not a signal
  Schema schema;
  std::string json, error;
  if (!client.connect(address, error) || !fetch_schema(client, timeout, schema, json, error) ||
      !parse_tables(json, tables, error)) {
    fmt::print(err, "aup {}: {}\n", command, error);
    return kExitUsage;
  }
  return kExitOk;
}

// A key's values as `aup scan` takes them again: `--from 3 --from ann`, or
// the JSON array in quotes when a value needs them.
std::string from_flags(const std::string& next_json) {
  JsonDoc doc;
  std::string error, out;
  bool plain = doc.parse(next_json, error);
  for (uint32_t n = doc.root() + 1; plain && n < doc.node(doc.root()).next; n = doc.after(n)) {
    const JsonNode& v = doc.node(n);
    std::string word(v.kind == JsonNode::Kind::String ? v.str : v.raw);
    plain = !word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                    "0123456789_.-+@:/") == std::string::npos;
    out += fmt::format("{}--from {}", out.empty() ? "" : " ", word);
  }
  return plain ? out : "--from '" + next_json + "'";
}

}  // namespace

int get(const GetOptions& o, std::FILE* out, std::FILE* err) {
  Client client;
  std::vector<TableInfo> tables;
  if (int rc = open_reading(client, o.address, o.timeout_seconds, tables, "get", err)) return rc;
  ReadWanted w;
  w.table = o.table;
  w.get = true;
  w.key = o.key;
  std::string line, error;
  if (!read_line(tables, w, line, error)) {
    fmt::print(err, "aup get: {}\n", error);
    return kExitUsage;
  }
  Page page;
  if (int rc = read_page(client, line, o.timeout_seconds, page, "get", err)) return rc;
  for (const std::string& row : page.rows) fmt::print(out, "{}\n", row);
  if (page.rows.empty()) fmt::print(err, "aup get: `{}` has no row with that key\n", o.table);
  return kExitOk;
}

int scan(const ScanOptions& o, std::FILE* out, std::FILE* err) {
  Client client;
  std::vector<TableInfo> tables;
  if (int rc = open_reading(client, o.address, o.timeout_seconds, tables, "scan", err)) return rc;
  ReadWanted w{o.table, o.index, false, {}, o.from, o.to, o.limit, {}};
  std::string line, error;
  if (!read_line(tables, w, line, error)) {
    fmt::print(err, "aup scan: {}\n", error);
    return kExitUsage;
  }
  Page page;
  for (;;) {
    if (int rc = read_page(client, line, o.timeout_seconds, page, "scan", err)) return rc;
    for (const std::string& row : page.rows) fmt::print(out, "{}\n", row);
    if (page.next.empty()) return kExitOk;
    if (!o.all) {
      std::fflush(out);  // the rows before the note, also when both go to one pipe
      fmt::print(err, "aup scan: more rows follow: continue with {}\n", from_flags(page.next));
      return kExitOk;
    }
    w.from = {page.next};  // a JSON array: sent as it is
    if (!read_line(tables, w, line, error)) return kExitUsage;
  }
}

bool shell_read_line(const std::string& schema_json, bool scan, const std::vector<std::string>& words,
                     std::string& line, std::string& error) {
  std::vector<TableInfo> tables;
  if (!parse_tables(schema_json, tables, error)) return false;
  if (words.empty()) {
    error = scan ? "usage: .scan TABLE [from=VALUE] [to=VALUE] [index=NAME] [limit=N]" : "usage: .get TABLE KEY...";
    return false;
  }
  ReadWanted w;
  w.table = words[0];
  w.get = !scan;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& word = words[i];
    size_t eq = word.find('=');
    std::string name = scan && eq != std::string::npos ? word.substr(0, eq) : std::string();
    std::string value = eq == std::string::npos ? word : word.substr(eq + 1);
    if (!scan) {
      w.key.push_back(word);
    } else if (name == "from" || name == "to") {
      (name == "from" ? w.from : w.to).push_back(value);
    } else if (name == "index") {
      w.index = value;
    } else if (name == "limit" && !value.empty() && value.find_first_not_of("0123456789") == std::string::npos &&
               value.size() < 10) {
      w.limit = static_cast<uint32_t>(std::stoul(value));
    } else {
      error = fmt::format("`{}`: .scan takes from=VALUE, to=VALUE, index=NAME and limit=N (a whole number)", word);
      return false;
    }
  }
  return read_line(tables, w, line, error);
}

namespace {

// Every row of `table`, page after page, as dump lines.
int dump_table(Client& client, const std::vector<TableInfo>& tables, const std::string& table, double timeout,
               std::FILE* out, std::FILE* err) {
  ReadWanted w;
  w.table = table;
  w.limit = runtime::kReadRowsMax;
  w.bytes = runtime::kReadBytesMax;  // fewer round trips for a table of long rows
  std::string line, error, prefix = "{\"table\":";
  runtime::json_append_string(prefix, table);
  prefix += ",\"row\":";
  Page page;
  for (;;) {
    if (!read_line(tables, w, line, error)) {
      fmt::print(err, "aup dump: {}\n", error);
      return kExitUsage;
    }
    if (int rc = read_page(client, line, timeout, page, "dump", err)) return rc;
    for (const std::string& row : page.rows) fmt::print(out, "{}{}}}\n", prefix, row);
    if (page.next.empty()) return kExitOk;
    w.from = {page.next};
  }
}

}  // namespace

int dump(const DumpOptions& o, std::FILE* out, std::FILE* err) {
  if (o.address.empty() == o.data.empty()) {
    fmt::print(err, "aup dump: give a served store's ADDRESS or a store directory with --data DIR, not {}\n",
               o.address.empty() ? "neither" : "both");
    return kExitUsage;
  }
  if (!o.data.empty()) {
    std::string faults;
    std::unique_ptr<storage::Io> io = storage::io_from_environment(faults);
    if (!io) {
      fmt::print(err, "aup dump: AUP_FAULTS: {}\n", faults);
      return kExitUsage;
    }
    return runtime::dump_store(*io, o.data, o.tables, out, err);
  }
  Client client;
  std::vector<TableInfo> tables;
  if (int rc = open_reading(client, o.address, o.timeout_seconds, tables, "dump", err)) return rc;
  std::vector<std::string> names = o.tables;
  if (names.empty()) {
    for (const TableInfo& t : tables) names.push_back(t.name);
  }
  for (const std::string& name : names) {
    if (int rc = dump_table(client, tables, name, o.timeout_seconds, out, err)) return rc;
  }
  return kExitOk;
}

}  // namespace aup::cli

// `aup load` (cli/rows.h): dump lines into a store, each row checked
// against the module's record of its table and added as `t.add` adds a
// row (vm::Vm::add_row), then all of them committed as one batch, one log
// entry, through the same StoreDurability an `aup run` commits events
// with: the one way rows enter a store.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "cli/rows.h"
#include "compiler/driver.h"
#include "compiler/suggest.h"
#include "runtime/convert.h"
#include "runtime/durability.h"
#include "runtime/json.h"
#include "storage/io.h"
#include "storage/role.h"
#include "storage/store.h"
#include "vm/interp.h"
#include "vm/state.h"

namespace aup::cli {

namespace {

using runtime::JsonDoc;
using runtime::JsonNode;

// A line on a terminal every second while a long load reads its rows.
class LoadProgress {
 public:
  LoadProgress() : tty_(isatty(fileno(stderr)) != 0), last_(std::chrono::steady_clock::now()) {}
  void row(uint64_t rows) {
    if (!tty_ || (rows & 1023) != 0) return;
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::seconds(1)) return;
    last_ = now;
    fmt::print(stderr, "\raup load: {} rows checked", rows);
    shown_ = true;
  }
  void done() {
    if (shown_) fmt::print(stderr, "\n");
    shown_ = false;
  }

 private:
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_;
};

// The store at `dir`, opened (created if absent, migrated to `m`) into
// `state`, its indexes built. 0, or the exit status after saying why not.
int open_for_load(const LoadOptions& o, const vm::Module& m, storage::Io& fs, runtime::StateTables& tables,
                  vm::State& state, std::unique_ptr<storage::Store>& store, bool& created) {
  std::string primary;
  if (storage::read_replica_of(fs, o.data, primary).ok()) {
    fmt::print(stderr, "aup load: the store {} is a replica of {}: load into its primary\n", o.data, primary);
    return kExitUsage;
  }
  storage::StoreOpenReport report;
  storage::Status st = storage::Store::open(fs, o.data, runtime::schema_of(m), storage::StoreOptions{}, tables,
                                            store, report, {});
  if (!st.ok()) {
    fmt::print(stderr, "aup load: {}\n", st.message);
    bool environment = st.err == EWOULDBLOCK || st.err == EACCES || st.err == ENOSPC || st.err == EROFS ||
                       st.err == EDQUOT || st.err == EPERM || st.err == EIO || st.err == ENOTDIR;
    return environment ? kExitUsage : kExitErrors;
  }
  created = report.created;
  if (report.created) fmt::print(stderr, "aup load: created the store {}\n", o.data);
  for (const std::string& change : report.migrated) fmt::print(stderr, "aup load: migrated {}: {}\n", o.data, change);
  std::string error;
  if (!state.rebuild_indexes(error)) {
    fmt::print(stderr, "aup load: cannot open the store: {}\n", error);
    return kExitErrors;
  }
  return kExitOk;
}

// One dump line's table and row; "" or why the line is not one.
std::string parse_line(const vm::Module& m, const JsonDoc& doc, uint32_t& table, uint32_t& row) {
  const char* shape = "a line is {\"table\": NAME, \"row\": {FIELD: VALUE, ...}}, as `aup dump` writes it";
  if (doc.node(doc.root()).kind != JsonNode::Kind::Object || doc.node(doc.root()).count != 2) return shape;
  uint32_t name = doc.member(doc.root(), "table");
  row = doc.member(doc.root(), "row");
  if (!name || !row || doc.node(name).kind != JsonNode::Kind::String) return shape;
  if (doc.node(row).kind != JsonNode::Kind::Object) return "`row` must be an object: the row's fields by name";
  std::string_view n = doc.node(name).str;
  int t = m.table_index(n);
  if (t >= 0) {
    table = static_cast<uint32_t>(t);
    return "";
  }
  std::vector<std::string_view> names;
  for (const vm::TableDesc& td : m.tables) names.push_back(td.name);
  return fmt::format("the module has no table `{}`{}", n, did_you_mean_or_list(n, names, "its tables"));
}

// "unknown field `idd`" and the closest field of the record.
std::string with_hint(const vm::RecordDesc& rd, std::string message) {
  constexpr std::string_view kUnknown = "unknown field `";
  if (!message.starts_with(kUnknown)) return message;
  std::string_view name(message);
  name = name.substr(kUnknown.size(), name.find('`', kUnknown.size()) - kUnknown.size());
  std::vector<std::string_view> fields;
  for (const vm::FieldDesc& f : rd.fields) fields.push_back(f.name);
  return message + did_you_mean(name, fields);
}

// Reads every line into the state's tables (not committed); the rows per
// table. False with the line that failed said.
bool add_rows(std::istream& in, vm::Vm& vm, std::map<std::string, uint64_t>& added) {
  const vm::Module& m = vm.module();
  std::string text, error;
  JsonDoc doc;
  LoadProgress progress;
  uint64_t rows = 0;
  for (uint64_t line = 1; std::getline(in, text); ++line, vm.reset_arena()) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    uint32_t table = 0, row = 0;
    std::string problem = !doc.parse(text, error) ? "not JSON: " + error : parse_line(m, doc, table, row);
    vm::Value rec = 0;
    if (problem.empty()) {
      const vm::RecordDesc& rd = m.records[m.tables[table].record];
      runtime::JsonToValue reader(doc, vm);
      if (!reader.record(row, m.tables[table].record, &rec)) {
        problem = fmt::format("table `{}`: {}", m.tables[table].name, with_hint(rd, reader.error()));
      } else if (!vm.add_row(table, rec)) {
        problem = fmt::format("table `{}`: {}", m.tables[table].name, vm.failure().message);
      }
    }
    if (!problem.empty()) {
      progress.done();
      fmt::print(stderr, "aup load: nothing was loaded: line {}: {}\n", line, problem);
      return false;
    }
    ++added[m.tables[table].name];
    progress.row(++rows);
  }
  progress.done();
  return true;
}

}  // namespace

int load(const LoadOptions& o, std::FILE* err) {
  if (int rc = refuse_data_file("load", o.data); rc >= 0) return rc;
  std::ifstream file;
  if (o.input != "-") {
    file.open(o.input);
    if (!file) {
      fmt::print(err, "aup load: cannot read {}: {}\n", o.input, std::strerror(errno));
      return kExitUsage;
    }
  }
  int rc = kExitOk;
  std::unique_ptr<vm::Module> m = load_module(o.module, rc);
  if (!m) return rc;
  m->prepare();
  std::unique_ptr<storage::Io> fs = store_io("load", err);
  if (!fs) return kExitUsage;
  std::string error;
  vm::State state(*m);
  runtime::StateTables tables(state);
  std::unique_ptr<storage::Store> store;
  bool created = false;
  if (int opened = open_for_load(o, *m, *fs, tables, state, store, created); opened != kExitOk) return opened;
  vm::Vm vm(*m, state);
  std::map<std::string, uint64_t> added;
  if (!add_rows(o.input == "-" ? std::cin : file, vm, added)) {
    state.rollback(0);
    if (created) fmt::print(err, "aup load: the store {} was created, and is empty\n", o.data);
    return kExitErrors;
  }
  runtime::StoreDurability durable(state, *store);
  storage::Fate fate = storage::Fate::NotWritten;
  if (!state.changes().empty() && !durable.commit_batch(fate, error)) {
    fmt::print(err, "aup load: {}: {}\n", fate == storage::Fate::NotWritten ? "nothing was loaded" : "perhaps loaded",
               error);
    return kExitUsage;
  }
  durable.between_batches();
  durable.close();
  uint64_t total = 0;
  std::string counts;
  for (const auto& [name, n] : added) {
    total += n;
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", name, n);
  }
  fmt::print(err, "aup load: loaded {} row{} into {}{}, save {}\n", total, total == 1 ? "" : "s", o.data,
             counts.empty() ? "" : " (" + counts + ")", store->last_seq());
  return kExitOk;
}

}  // namespace aup::cli

#include "runtime/replay.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/suggest.h"
#include "runtime/json.h"
#include "storage/key_tables.h"
#include "storage/memory_tables.h"
#include "storage/live.h"
#include "storage/role.h"
#include "storage/recovery.h"

namespace aup::runtime {

namespace {

using storage::FieldType;
using storage::Status;

// "1 row", "3 rows".
std::string counted(uint64_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

std::string size_text(uint64_t b) {
  if (b < 10 * 1024) return fmt::format("{} B", b);
  if (b < 10 * 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1024 * 1024));
}

void append_value(std::string& out, FieldType t, uint64_t v) {
  switch (t) {
    case FieldType::Num: json_append_number(out, std::bit_cast<double>(v)); break;
    case FieldType::Text: json_append_string(out, reinterpret_cast<const vm::TextObj*>(v)->view()); break;
    case FieldType::Bool: out += v ? "true" : "false"; break;
  }
}

// What recovery reports (storage/recovery.h), kept for the summary and the
// --verify line; a problem and an --entries line are printed as they come.
class Printer : public storage::RecoveryReporter {
 public:
  Printer(std::FILE* out, std::FILE* err) : out_(out), err_(err) {}
  // The stored schema, once read: the tables the reports number.
  void begin(const storage::Schema& schema) {
    schema_ = &schema;
    has_image.assign(schema.tables.size() + 1, false);
    image_seq.assign(schema.tables.size() + 1, 0);
    image_bytes.assign(schema.tables.size() + 1, 0);
  }
  void problem(const std::string& what) {
    damaged = true;
    fmt::print(err_, "aup replay: {}\n", what);
  }

  void image_read(uint32_t t, uint64_t seq, uint64_t bytes, uint64_t rows) override {
    has_image[t] = true;
    image_seq[t] = seq;
    image_bytes[t] = bytes;
    if (t < schema_->tables.size()) image_rows += rows;
    last_seq = std::max(last_seq, seq);
  }
  void image_damaged(uint32_t, const Status& why) override { problem(why.message); }
  void damage(const Status& why) override { problem(why.message); }
  void missing_entries(uint32_t t, uint64_t first_prev_seq, uint64_t covered) override {
    std::string image = t < schema_->tables.size() ? fmt::format("table `{}`", schema_->tables[t].name)
                                                   : std::string("the vars");
    problem(fmt::format("log entries are missing: the oldest follows save {}, the image of {} covers only up to {}",
                        first_prev_seq, image, covered));
  }
  void entry(const storage::LogEntry& e, const storage::PayloadSummary* changes) override {
    last_seq = std::max(last_seq, e.seq);
    if (changes) print_entry(e, *changes);
  }
  void torn_tail(const std::string& where) override { torn = where; }
  void log_read(const storage::LogOpenReport& report, const std::vector<storage::Log::Segment>& chain) override {
    log = report;
    segments = chain;
  }

  bool damaged = false;
  std::vector<bool> has_image;  // per table, then the vars
  std::vector<uint64_t> image_seq;
  std::vector<uint64_t> image_bytes;
  uint64_t image_rows = 0;  // in the tables' images
  uint64_t last_seq = 0;    // the newest save: an image's or the log's last entry's
  uint32_t term = 0;        // the store's term (storage/terms.h), once the log is read
  std::string torn;         // where the log ends in a torn write, if it does
  storage::LogOpenReport log;
  std::vector<storage::Log::Segment> segments;

 private:
  // One --entries line: the entry's place and digest, its changes per table.
  void print_entry(const storage::LogEntry& e, const storage::PayloadSummary& sum) {
    line_ = fmt::format(R"({{"seq":{},"segment":{},"offset":{},"bytes":{},"digest":"{:016x}","changes":{{)", e.seq,
                        e.segment, e.offset, e.payload.size(), e.digest);
    for (size_t g = 0; g < sum.groups.size(); ++g) {
      const auto& gr = sum.groups[g];
      if (g) line_ += ',';
      if (gr.target < 0) {
        line_ += fmt::format(R"x("(vars)":{{"vars":{}}})x", gr.vars);
      } else {
        json_append_string(line_, schema_->tables[static_cast<size_t>(gr.target)].name);
        line_ += fmt::format(R"(:{{"puts":{},"sets":{},"removes":{}}})", gr.puts, gr.sets, gr.removes);
      }
    }
    line_ += "}}\n";
    std::fputs(line_.c_str(), out_);
  }

  std::FILE* out_;
  std::FILE* err_;
  const storage::Schema* schema_ = nullptr;
  std::string line_;
};

// A store a running aup serves is read as of its newest durable save, once
// the images are read (storage/live.h). 0, or the exit status after saying
// why not.
int cut_if_served(storage::ReadAccess& access, storage::Recovery& recovery, const std::string& dir,
                  std::FILE* err, std::string_view command = "replay") {
  if (!access.live()) return 0;
  storage::LiveMark m;
  if (Status cut = access.cut(m); !cut.ok()) {
    fmt::print(err, "aup {}: {}\n", command, cut.message);
    return 2;
  }
  recovery.cut_log_at(m.segment, m.end);
  fmt::print(err, "aup {}: the store {} is served by aup{}: read as of save {}, its newest durable one\n", command,
             dir, access.by(), m.seq);
  return 0;
}

// A step of recovery that did not finish: damage (reported already) exits
// 1; a read that failed (an errno: the environment, not the store) says so
// and exits 2, as `aup run` does.
int stopped(const Status& st, std::FILE* err, std::string_view command = "replay") {
  if (st.err == 0) return 1;
  fmt::print(err, "aup {}: {}\n", command, st.message);
  return 2;
}

// --dump TABLE: its rows as JSON lines, in key order; each line after
// `prefix` and followed by `suffix` (aup dump's {"table":..,"row":ROW}).
void print_rows(const storage::TableSchema& ts, vm::BTree& tree, std::FILE* out, std::string_view prefix = {},
                std::string_view suffix = {}) {
  std::string line;
  tree.for_each(tree.root(), [&](const vm::Key&, const uint64_t* row) {
    line.clear();  // (= "{" trips GCC 12 -Wrestrict)
    line += prefix;
    line += '{';
    for (uint32_t f = 0; f < ts.fields.size(); ++f) {
      if (f) line += ',';
      json_append_string(line, ts.fields[f].name);
      line += ':';
      append_value(line, ts.fields[f].type, row[f]);
    }
    line += '}';
    line += suffix;
    line += '\n';
    std::fputs(line.c_str(), out);
  });
}

// --vars: one JSON object.
void print_vars(const storage::Schema& schema, storage::MemoryTables& tables, std::FILE* out) {
  std::string v = "{";
  for (size_t i = 0; i < schema.vars.size(); ++i) {
    if (i) v += ',';
    json_append_string(v, schema.vars[i].name);
    v += ':';
    append_value(v, schema.vars[i].type, tables.var(static_cast<uint32_t>(i)));
  }
  v += "}\n";
  std::fputs(v.c_str(), out);
}

// No flag: the tables and their images, the vars' image, the log.
void print_summary(const std::string& dir, const storage::Schema& schema, storage::MemoryTables& tables,
                   const Printer& p, const std::string& replica_of, std::FILE* out) {
  size_t n = schema.tables.size();
  fmt::print(out, "store {}: {} table{}, {} var{}, last save {}\n", dir, n, n == 1 ? "" : "s", schema.vars.size(),
             schema.vars.size() == 1 ? "" : "s", p.last_seq);
  // Replication (docs/replication.md): said only of a store that has been
  // part of it, so a lone store's summary is as it always was.
  if (!replica_of.empty() || p.term > 0) {
    fmt::print(out, "  {}, term {}\n", replica_of.empty() ? "a primary" : "a replica of " + replica_of, p.term);
  }
  auto image = [&](size_t t) {
    return p.has_image[t] ? fmt::format("save {}, {}", p.image_seq[t], size_text(p.image_bytes[t])) : "none";
  };
  for (size_t t = 0; t < n; ++t) {
    const std::string& name = schema.tables[t].name;
    // The idempotency keys' tables are the store's, not the module's.
    fmt::print(out, "  table {}{}: {}; image {}\n", name, storage::is_key_table(name) ? " (the store's own)" : "",
               counted(tables.table(static_cast<uint32_t>(t)).size(), "row", "rows"), image(t));
  }
  fmt::print(out, "  vars: image {}\n", image(n));
  fmt::print(out, "  log: {}, {}, {} of changes\n", counted(p.log.segments, "segment", "segments"),
             counted(p.log.entries, "entry", "entries"), size_text(p.log.payload_bytes));
  for (const auto& seg : p.segments) {
    fmt::print(out, "    log-{}: generation {:016x}, {}{}, {} of {} used\n", seg.number, seg.generation,
               counted(seg.entries, "entry", "entries"),
               seg.entries ? fmt::format(", saves {}..{}", seg.first_seq, seg.last_seq) : std::string(),
               size_text(seg.used), size_text(seg.size));
  }
  if (!p.torn.empty()) fmt::print(out, "  torn tail: {} (cut at the next open)\n", p.torn);
}

// --verify's last line. The images hold the rows as of their save numbers;
// the log entries after those bring the tables to the rows the state has.
void print_verified(const std::string& dir, const storage::Schema& schema, storage::MemoryTables& tables,
                    const Printer& p, std::FILE* out, std::FILE* err) {
  if (p.damaged) {
    fmt::print(err, "aup replay: the store {} is damaged\n", dir);
    return;
  }
  uint64_t rows = 0;
  for (size_t t = 0; t < schema.tables.size(); ++t) rows += tables.table(static_cast<uint32_t>(t)).size();
  fmt::print(out, "verified: schema, {} holding {}, {}; {} in the state{}\n",
             counted(static_cast<uint64_t>(std::count(p.has_image.begin(), p.has_image.end(), true)), "image",
                     "images"),
             counted(p.image_rows, "row", "rows"), counted(p.log.entries, "log entry", "log entries"),
             counted(rows, "row", "rows"),
             p.torn.empty() ? std::string()
                            : fmt::format("; the log ends in a torn write ({}), cut at the next open", p.torn));
}

// The table --dump names (-1 without --dump), or the exit status 2 after
// naming the tables there are.
int dumped_table(const ReplayOptions& o, const storage::Schema& schema, std::FILE* err, int& dump) {
  dump = -1;
  if (o.dump.empty()) return 0;
  dump = schema.table_index(o.dump);
  if (dump >= 0) return 0;
  std::string names;
  for (const auto& t : schema.tables) {
    if (!names.empty()) names += ", ";
    names += t.name;
  }
  fmt::print(err, "aup replay: no table `{}` in the store (tables: {})\n", o.dump, names);
  return 2;
}

}  // namespace

int replay(storage::Io& io, const ReplayOptions& o, std::FILE* out, std::FILE* err) {
  const std::string& dir = o.data;
  storage::ReadAccess access(io);
  if (Status took = access.take(dir); !took.ok()) {
    fmt::print(err, "aup replay: {}\n", took.message);
    return 2;
  }
  Printer printer(out, err);
  storage::RecoveryOptions ro;
  ro.read_past_damage = true;
  ro.summarize_entries = o.entries;
  ro.log.read_only = true;
  if (o.at) ro.apply_through = *o.at;
  storage::Recovery recovery(io, dir, ro, printer);
  storage::Schema schema;
  Status st = recovery.read_schema(schema);
  if (!st.ok()) return stopped(st, err);
  int dump = -1;
  if (int rc = dumped_table(o, schema, err, dump)) return rc;
  printer.begin(schema);
  storage::MemoryTables tables(schema);
  st = recovery.load_images(schema, schema, tables);
  if (!st.ok()) return stopped(st, err);
  // --at asks for a state the store may no longer hold (or never held):
  // a usage matter, not damage.
  size_t at_image = dump >= 0 ? static_cast<size_t>(dump) : schema.tables.size();
  if (o.at && (dump >= 0 || o.vars) && printer.image_seq[at_image] > *o.at) {
    fmt::print(err,
               "aup replay: the image of {} covers save {}, later than --at {}: the older state is no longer "
               "in the store\n",
               dump >= 0 ? fmt::format("`{}`", o.dump) : std::string("the vars"), printer.image_seq[at_image], *o.at);
    return 2;
  }
  if (int rc = cut_if_served(access, recovery, dir, err)) return rc;
  st = recovery.read_log();
  if (!st.ok()) return stopped(st, err);
  printer.term = recovery.terms().last_term();
  if (o.at && *o.at > printer.last_seq) {
    fmt::print(err, "aup replay: --at {} is past the store's last save, {}\n", *o.at, printer.last_seq);
    return 2;
  }
  if (dump >= 0) {
    print_rows(schema.tables[static_cast<size_t>(dump)], tables.table(static_cast<uint32_t>(dump)), out);
  } else if (o.vars) {
    print_vars(schema, tables, out);
  } else if (!o.entries) {
    std::string replica_of;  // none (ENOENT): a primary, or a store never replicated
    if (st = storage::read_replica_of(io, dir, replica_of); !st.ok() && st.err != ENOENT) return stopped(st, err);
    print_summary(dir, schema, tables, printer, replica_of, out);
  }
  if (o.verify) print_verified(dir, schema, tables, printer, out, err);
  return printer.damaged ? 1 : 0;
}

int dump_store(storage::Io& io, const std::string& dir, const std::vector<std::string>& tables, std::FILE* out,
               std::FILE* err) {
  storage::ReadAccess access(io);
  if (Status took = access.take(dir); !took.ok()) {
    fmt::print(err, "aup dump: {}\n", took.message);
    return 2;
  }
  Printer printer(out, err);
  storage::RecoveryOptions ro;
  ro.log.read_only = true;
  storage::Recovery recovery(io, dir, ro, printer);
  storage::Schema schema;
  Status st = recovery.read_schema(schema);
  std::vector<int> dumped;
  for (const std::string& name : tables) {
    int t = st.ok() ? schema.table_index(name) : 0;
    if (t < 0 || storage::is_key_table(name)) {
      std::vector<std::string_view> names;
      for (const auto& ts : schema.tables) {
        if (!storage::is_key_table(ts.name)) names.push_back(ts.name);
      }
      fmt::print(err, "aup dump: no table `{}` in the store{}\n", name, did_you_mean_or_list(name, names, "tables"));
      return 2;
    }
    dumped.push_back(t);
  }
  if (st.ok()) printer.begin(schema);
  storage::MemoryTables rows(schema);
  if (st.ok()) st = recovery.load_images(schema, schema, rows);
  if (!st.ok()) return stopped(st, err, "dump");
  if (int rc = cut_if_served(access, recovery, dir, err, "dump")) return rc;
  if (st = recovery.read_log(); !st.ok()) return stopped(st, err, "dump");
  if (tables.empty()) {
    for (size_t t = 0; t < schema.tables.size(); ++t) {
      if (!storage::is_key_table(schema.tables[t].name)) dumped.push_back(static_cast<int>(t));
    }
  }
  for (int t : dumped) {
    std::string prefix = "{\"table\":";
    json_append_string(prefix, schema.tables[static_cast<size_t>(t)].name);
    prefix += ",\"row\":";
    print_rows(schema.tables[static_cast<size_t>(t)], rows.table(static_cast<uint32_t>(t)), out, prefix, "}");
  }
  return printer.damaged ? 1 : 0;
}

}  // namespace aup::runtime

#include "runtime/replay.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "storage/image.h"
#include "runtime/json.h"
#include "storage/log.h"
#include "storage/memory_tables.h"
#include "storage/schema_file.h"

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

// The store, read without writing anything and without module code.
struct Inspected {
  storage::Schema schema;
  std::unique_ptr<storage::MemoryTables> tables;
  std::vector<uint64_t> image_seq;  // per table, then the vars
  std::vector<uint64_t> image_bytes;
  std::vector<bool> has_image;
};

}  // namespace

int replay(storage::Io& io, const ReplayOptions& o, std::FILE* out, std::FILE* err) {
  const std::string& dir = o.data;
  // A running aup holds the store exclusively; reading under it could see a
  // half-written image. A shared lock waits for nobody and says so.
  std::string lock_path = dir + "/LOCK";
  int lock = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (lock < 0 && errno != ENOENT) {
    fmt::print(err, "aup replay: cannot open {}: {}\n", lock_path, std::strerror(errno));
    return 2;
  }
  if (lock >= 0 && ::flock(lock, LOCK_SH | LOCK_NB) != 0) {
    char pid[32] = {};
    ssize_t n = ::pread(lock, pid, sizeof pid - 1, 0);
    fmt::print(err, "aup replay: the store {} is in use by a running aup{}; stop it first\n", dir,
               n > 0 ? fmt::format(" (pid {})", std::string_view(pid, static_cast<size_t>(n))) : "");
    ::close(lock);
    return 2;
  }
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } closer{lock};

  Inspected s;
  Status st = storage::read_schema_file(io, dir, s.schema);
  if (!st.ok()) {
    fmt::print(err, "aup replay: {}\n", st.message);
    return st.err == ENOENT ? 2 : 1;
  }
  const storage::Schema& schema = s.schema;
  size_t n = schema.tables.size();
  s.tables = std::make_unique<storage::MemoryTables>(schema);
  s.image_seq.assign(n + 1, 0);
  s.image_bytes.assign(n + 1, 0);
  s.has_image.assign(n + 1, false);
  int dump = -1;
  if (!o.dump.empty()) {
    dump = schema.table_index(o.dump);
    if (dump < 0) {
      std::string names;
      for (const auto& t : schema.tables) {
        if (!names.empty()) names += ", ";
        names += t.name;
      }
      fmt::print(err, "aup replay: no table `{}` in the store (tables: {})\n", o.dump, names);
      return 2;
    }
  }
  bool damaged = false;
  auto problem = [&](const std::string& what) {
    damaged = true;
    fmt::print(err, "aup replay: {}\n", what);
  };

  // Images.
  uint64_t image_rows = 0;
  std::vector<bool> unreadable(n + 1, false);  // a damaged image: its rows are unknown
  for (size_t t = 0; t < n; ++t) {
    storage::ImageRead info;
    uint64_t rows = 0;
    st = storage::load_table_image(io, storage::table_image_path(dir, schema.tables[t].name), schema.tables[t],
                                   s.tables->table(static_cast<uint32_t>(t)), info, rows);
    if (!st.ok() && st.err == ENOENT) continue;
    if (!st.ok()) {
      problem(st.message);
      unreadable[t] = true;
      continue;
    }
    s.image_seq[t] = info.seq;
    s.image_bytes[t] = info.bytes;
    s.has_image[t] = true;
    image_rows += rows;
  }
  {
    storage::ImageRead info;
    st = storage::read_vars_image(io, storage::vars_image_path(dir), info, [&](const storage::VarSchema& v, uint64_t value) {
      int i = schema.var_index(v.name);
      if (i >= 0) {
        s.tables->set_var(static_cast<uint32_t>(i), value);
      } else if (v.type == FieldType::Text) {
        vm::release(reinterpret_cast<vm::TextObj*>(value));
      }
    });
    if (st.ok()) {
      s.image_seq[n] = info.seq;
      s.image_bytes[n] = info.bytes;
      s.has_image[n] = true;
    } else if (st.err != ENOENT) {
      problem(st.message);
      unreadable[n] = true;
    }
  }
  // --at asks for a state the store may no longer hold (or never held):
  // a usage matter, not damage.
  size_t at_image = dump >= 0 ? static_cast<size_t>(dump) : n;
  if (o.at && (dump >= 0 || o.vars) && s.image_seq[at_image] > *o.at) {
    fmt::print(err,
               "aup replay: the image of {} covers save {}, later than --at {}: the older state is no longer "
               "in the store\n",
               dump >= 0 ? fmt::format("`{}`", o.dump) : std::string("the vars"), s.image_seq[at_image], *o.at);
    return 2;
  }

  // The log.
  storage::SchemaMap map;
  map.target = &schema;
  for (size_t t = 0; t < n; ++t) {
    map.table.push_back(static_cast<int>(t));
    std::vector<uint32_t> fields;
    for (uint32_t f = 0; f < schema.tables[t].fields.size(); ++f) fields.push_back(f);
    map.field.push_back(std::move(fields));
    map.defaults.emplace_back(schema.tables[t].fields.size(), 0);
  }
  for (size_t v = 0; v < schema.vars.size(); ++v) map.var.push_back(static_cast<int>(v));
  // The log is read and verified whole, but not applied to a table whose
  // image is damaged: its records would meet rows that are not there and
  // blame the log for the image's damage.
  std::vector<uint64_t> apply_after = s.image_seq;
  for (size_t t = 0; t <= n; ++t) {
    if (unreadable[t]) apply_after[t] = UINT64_MAX;
  }
  uint64_t all_covered = *std::min_element(apply_after.begin(), apply_after.end());
  uint64_t last_seq = *std::max_element(s.image_seq.begin(), s.image_seq.end());
  std::unique_ptr<storage::Log> log;
  storage::LogOpenReport lr;
  storage::Log::Options lo;
  lo.read_only = true;
  std::string line;
  uint64_t visited = 0;
  bool missing = false;
  st = storage::Log::open(
      io, dir, lo,
      [&](const storage::LogEntry& e) -> Status {
        // Images must reach back to the log's first entry, else entries
        // are missing: said at once, and the log is then only read and
        // verified, not applied (its records would meet rows not there).
        if (++visited == 1) {
          for (size_t t = 0; t <= n; ++t) {
            if (apply_after[t] < e.prev_seq) {
              problem(fmt::format("log entries are missing: the oldest follows save {}, an image covers only up to {}",
                                  e.prev_seq, apply_after[t]));
              missing = true;
              break;
            }
          }
        }
        last_seq = std::max(last_seq, e.seq);
        if (o.entries) {
          storage::PayloadSummary sum;
          Status ss = storage::summarize_payload(e.payload, schema, sum);
          if (!ss.ok()) return Status::error(fmt::format("log-{} at byte {}: {}", e.segment, e.offset, ss.message));
          line = fmt::format(R"({{"seq":{},"segment":{},"offset":{},"bytes":{},"digest":"{:016x}","changes":{{)", e.seq,
                             e.segment, e.offset, e.payload.size(), e.digest);
          for (size_t g = 0; g < sum.groups.size(); ++g) {
            const auto& gr = sum.groups[g];
            if (g) line += ',';
            if (gr.target < 0) {
              line += fmt::format(R"x("(vars)":{{"vars":{}}})x", gr.vars);
            } else {
              json_append_string(line, schema.tables[static_cast<size_t>(gr.target)].name);
              line += fmt::format(R"(:{{"puts":{},"sets":{},"removes":{}}})", gr.puts, gr.sets, gr.removes);
            }
          }
          line += "}}\n";
          std::fputs(line.c_str(), out);
        }
        if (missing || e.seq <= all_covered || (o.at && e.seq > *o.at)) return Status::good();
        Status a = storage::apply_payload(e.payload, schema, map, e.seq, apply_after, *s.tables);
        if (!a.ok()) return Status::error(fmt::format("log-{} at byte {}: {}", e.segment, e.offset, a.message));
        return Status::good();
      },
      log, lr);
  if (!st.ok()) {
    problem(st.message);
    return 1;
  }
  uint64_t last_save = std::max(lr.entries ? log->last_seq() : 0, *std::max_element(s.image_seq.begin(), s.image_seq.end()));
  if (o.at && *o.at > last_save) {
    fmt::print(err, "aup replay: --at {} is past the store's last save, {}\n", *o.at, last_save);
    return 2;
  }

  if (dump >= 0) {
    const storage::TableSchema& ts = schema.tables[static_cast<size_t>(dump)];
    std::string row_line;
    s.tables->table(static_cast<uint32_t>(dump)).for_each(s.tables->table(static_cast<uint32_t>(dump)).root(),
                                                          [&](const vm::Key&, const uint64_t* row) {
                                                            row_line.clear();  // (= "{" trips GCC 12 -Wrestrict)
                                                            row_line += '{';
                                                            for (uint32_t f = 0; f < ts.fields.size(); ++f) {
                                                              if (f) row_line += ',';
                                                              json_append_string(row_line, ts.fields[f].name);
                                                              row_line += ':';
                                                              append_value(row_line, ts.fields[f].type, row[f]);
                                                            }
                                                            row_line += "}\n";
                                                            std::fputs(row_line.c_str(), out);
                                                          });
  } else if (o.vars) {
    std::string v = "{";
    for (size_t i = 0; i < schema.vars.size(); ++i) {
      if (i) v += ',';
      json_append_string(v, schema.vars[i].name);
      v += ':';
      append_value(v, schema.vars[i].type, s.tables->var(static_cast<uint32_t>(i)));
    }
    v += "}\n";
    std::fputs(v.c_str(), out);
  } else if (!o.entries) {
    fmt::print(out, "store {}: {} table{}, {} var{}, last save {}\n", dir, n, n == 1 ? "" : "s", schema.vars.size(),
               schema.vars.size() == 1 ? "" : "s", last_seq);
    for (size_t t = 0; t < n; ++t) {
      const storage::TableSchema& ts = schema.tables[t];
      fmt::print(out, "  table {}: {}; image {}\n", ts.name, counted(s.tables->table(static_cast<uint32_t>(t)).size(), "row", "rows"),
                 s.has_image[t] ? fmt::format("save {}, {}", s.image_seq[t], size_text(s.image_bytes[t])) : "none");
    }
    fmt::print(out, "  vars: image {}\n",
               s.has_image[n] ? fmt::format("save {}, {}", s.image_seq[n], size_text(s.image_bytes[n])) : "none");
    fmt::print(out, "  log: {}, {}, {} of changes\n", counted(lr.segments, "segment", "segments"),
               counted(lr.entries, "entry", "entries"), size_text(lr.payload_bytes));
    for (const auto& seg : log->segments()) {
      fmt::print(out, "    log-{}: generation {:016x}, {}{}, {} of {} used\n", seg.number, seg.generation,
                 counted(seg.entries, "entry", "entries"),
                 seg.entries ? fmt::format(", saves {}..{}", seg.first_seq, seg.last_seq) : std::string(),
                 size_text(seg.used), size_text(seg.size));
    }
    if (lr.torn) fmt::print(out, "  torn tail: {} (cut at the next open)\n", lr.torn_where);
  }
  if (o.verify) {
    if (damaged) {
      fmt::print(err, "aup replay: the store {} is damaged\n", dir);
    } else {
      // The images hold the rows as of their save numbers; the log entries
      // after those bring the tables to the rows the state has.
      uint64_t rows = 0;
      for (size_t t = 0; t < n; ++t) rows += s.tables->table(static_cast<uint32_t>(t)).size();
      fmt::print(out, "verified: schema, {} holding {}, {}; {} in the state{}\n",
                 counted(static_cast<uint64_t>(std::count(s.has_image.begin(), s.has_image.end(), true)), "image",
                         "images"),
                 counted(image_rows, "row", "rows"), counted(lr.entries, "log entry", "log entries"),
                 counted(rows, "row", "rows"),
                 lr.torn ? fmt::format("; the log ends in a torn write ({}), cut at the next open", lr.torn_where)
                         : std::string());
    }
  }
  return damaged ? 1 : 0;
}

}  // namespace aup::runtime

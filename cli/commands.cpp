#include "cli/commands.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cassert>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>

#include "vm/disasm.h"
#include "compiler/driver.h"
#include "vm/module_file.h"
#include "runtime/keys.h"
#include "runtime/service.h"
#include "vm/state.h"
#include "runtime/durability.h"
#include "storage/io.h"
#include "vm/jit/jit.h"
#include "runtime/listener.h"
#include "runtime/server.h"
#include "runtime/stdio_loop.h"
#include "runtime/cluster.h"
#include "runtime/follower.h"
#include "runtime/owner_tasks.h"
#include "runtime/shipper.h"
#include "storage/key_tables.h"
#include "storage/memory_tables.h"
#include "storage/read_only.h"
#include "storage/role.h"
#include "storage/schema_file.h"
#include "storage/store.h"

namespace aup::cli {

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A module from an .aup source (compiled now, as `aup build` compiles it;
// diagnostics to stderr) or an .aupm file. Null with the exit code set
// when it cannot be had.
std::unique_ptr<vm::Module> load(const std::string& path, int& exit_code) {
  if (ends_with(path, ".aup")) return compile_file("aup", path, stderr, exit_code);
  auto m = std::make_unique<vm::Module>();
  std::string error;
  if (!vm::read_module_file(path, *m, error)) {
    // A file that is not a module at all (not a damaged one) is likely
    // source under another name.
    bool foreign = error.find(vm::kNotAModule) != std::string::npos;
    fmt::print(stderr, "aup: {}{}\n", error,
               foreign ? "; to run source, name an .aup file (`aup build` makes an .aupm of one)" : "");
    exit_code = access(path.c_str(), R_OK) == 0 ? kExitErrors : kExitUsage;
    return nullptr;
  }
  return m;
}

}  // namespace

std::unique_ptr<vm::Module> load_module(const std::string& path, int& exit_code) { return load(path, exit_code); }

int refuse_data_file(std::string_view command, const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) return -1;
  fmt::print(stderr, "aup {}: --data {}: not a directory (a store is a directory of files)\n", command, dir);
  return kExitUsage;
}

std::unique_ptr<storage::Io> store_io(std::string_view command, std::FILE* err) {
  std::string faults;
  std::unique_ptr<storage::Io> io = storage::io_from_environment(faults);
  if (!io) fmt::print(err, "aup {}: AUP_FAULTS: {}\n", command, faults);
  return io;
}

int refuse_missing_store(std::string_view command, const std::string& dir) {
  struct stat st;
  std::string how = dir == "aup-data" ? "aup-data is the default; name the store with --data DIR"
                                      : "name the store with --data DIR";
  if (::stat(dir.c_str(), &st) != 0) {
    fmt::print(stderr, "aup {}: no store at {} ({})\n", command, dir, how);
    return kExitUsage;
  }
  if (!S_ISDIR(st.st_mode) || ::stat((dir + "/schema").c_str(), &st) == 0) return -1;
  fmt::print(stderr, "aup {}: {} is not a store: it has no schema file ({})\n", command, dir, how);
  return kExitUsage;
}

int disasm(const DisasmOptions& o) {
  int rc = kExitOk;
  auto m = load(o.module, rc);
  if (!m) return rc;
  if (!o.ir) {
    fmt::print("{}", vm::disassemble(*m));
    return kExitOk;
  }
  m->prepare();  // the IR holds the constants as values
  std::string ir, error;
  if (!vm::jit::function_ir(*m, o.function, !o.unoptimized, ir, error)) {
    fmt::print(stderr, "aup disasm: {}\n", error);
    return kExitUsage;
  }
  fmt::print("{}", ir);
  return kExitOk;
}

namespace {

// A progress line on a terminal while opening a big store takes long.
class OpenProgress {
 public:
  OpenProgress() : tty_(isatty(fileno(stderr)) != 0), start_(std::chrono::steady_clock::now()) {}
  void operator()(uint64_t entries, uint64_t rows) {
    if (!tty_) return;
    auto elapsed = std::chrono::steady_clock::now() - start_;
    if (elapsed < std::chrono::seconds(1)) return;
    fmt::print(stderr, "\raup: opening the store: {} from images, {}", counted(rows, "row", "rows"),
               counted(entries, "log entry", "log entries"));
    shown_ = true;
  }
  ~OpenProgress() {
    if (shown_) fmt::print(stderr, "\n");
  }
  OpenProgress(const OpenProgress&) = delete;
  OpenProgress& operator=(const OpenProgress&) = delete;

 private:
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

namespace {

// Bytes this process had the kernel send to storage (/proc/self/io's
// write_bytes: the log, the images, and what the file system adds), or -1.
int64_t process_write_bytes() {
  std::FILE* f = std::fopen("/proc/self/io", "r");
  if (!f) return -1;
  char line[128];
  int64_t bytes = -1;
  while (std::fgets(line, sizeof line, f)) {
    long long v = 0;
    if (std::sscanf(line, "write_bytes: %lld", &v) == 1) bytes = v;
  }
  std::fclose(f);
  return bytes;
}

void print_stats(storage::Store& store) {
  store.drain();  // a checkpoint still running counts too
  const storage::StoreStats& s = store.stats();
  auto us = [](uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
  fmt::print(stderr,
             "aup: totals {{\"commits\":{},\"log_bytes\":{},\"image_bytes\":{},\"images_written\":{},"
             "\"checkpoints\":{},\"checkpoint_failures\":{},\"commit_p50_us\":{:.1f},\"commit_p99_us\":{:.1f},"
             "\"commit_max_us\":{:.1f},\"process_write_bytes\":{}}}\n",
             s.commits, s.log_bytes, s.image_bytes, s.images_written, s.checkpoints, s.checkpoint_failures,
             us(s.commit.percentile_ns(0.5)), us(s.commit.percentile_ns(0.99)), us(s.commit.max_ns()),
             process_write_bytes());
}

}  // namespace

namespace {

// The default engine leaves a module this large to the VM: LLVM takes
// about 0.3 ms per bytecode instruction, so past this a first start (before
// the cache has the code) would spend seconds compiling.
constexpr size_t kJitDefaultMaxInstructions = 20'000;

size_t instruction_count(const vm::Module& m) {
  size_t n = 0;
  for (const vm::Function& f : m.functions) n += f.code.size();
  return n;
}

void print_jit_stats(const vm::jit::CompileStats& cs) {
  fmt::print(stderr,
             "aup: jit {{\"functions\":{},\"instructions\":{},\"cache\":\"{}\",\"translate_ms\":{:.1f},"
             "\"optimize_ms\":{:.1f},\"codegen_ms\":{:.1f},\"link_ms\":{:.1f},\"compile_ms\":{:.1f}}}\n",
             cs.functions, cs.instructions, vm::jit::cache_use_name(cs.cache), cs.translate_ms, cs.optimize_ms,
             cs.codegen_ms, cs.link_ms, cs.translate_ms + cs.optimize_ms + cs.codegen_ms + cs.link_ms);
}

// Native code for `m` per --engine, or none (the VM). `--engine jit` asked
// for by name must work (exit 2 if it cannot); the default (jit) steps
// back to the VM, saying why on stderr, when the module is very large or
// the JIT cannot be loaded.
int choose_engine(const RunOptions& o, const vm::Module& m, std::unique_ptr<vm::NativeCode>& native) {
  std::string engine = o.engine;
  if (engine.empty()) {
    // $AUP_ENGINE stands in for --engine (a machine or a test suite that
    // wants one engine throughout).
    const char* env = std::getenv("AUP_ENGINE");
    if (env && *env) {
      engine = env;
      if (engine != "vm" && engine != "jit") {
        fmt::print(stderr, "aup run: AUP_ENGINE={}: expected vm or jit\n", engine);
        return kExitUsage;
      }
    }
  }
  bool asked = !engine.empty();
  if (engine == "vm") return kExitOk;
  if (size_t n = instruction_count(m); !asked && n > kJitDefaultMaxInstructions) {
    if (o.stats) {
      fmt::print(stderr, "aup: {} instructions: on the VM (the default engine compiles up to {}; --engine jit "
                         "compiles any)\n", n, kJitDefaultMaxInstructions);
    }
    return kExitOk;
  }
  vm::jit::CompileStats cs;
  vm::jit::CompileOptions co;
  co.cache_dir = vm::jit::default_cache_dir();
  std::string error;
  native = vm::jit::compile(m, co, error, &cs);
  if (!native) {
    if (asked) {
      fmt::print(stderr, "aup run: --engine jit: {}\n", error);
      return kExitUsage;
    }
    fmt::print(stderr, "aup: running on the VM: {}\n", error);
    return kExitOk;
  }
  if (o.stats) print_jit_stats(cs);
  return kExitOk;
}

}  // namespace

namespace {

// Refused before anything is loaded or made (the store directory): an
// address that cannot be, a --data that is a file.
int refuse_before_start(const RunOptions& o) {
  bool http = false;
  for (const std::string& spec : o.listen) {
    runtime::ListenAddress where;
    std::string error;
    if (!runtime::parse_listen_address(spec, where, error)) {
      fmt::print(stderr, "aup run: --listen: {}\n", error);
      return kExitUsage;
    }
    http = http || where.http;
  }
  if (o.http_timeout_seconds && !http) {
    fmt::print(stderr, "aup run: --http-timeout needs an HTTP address: --listen http://HOST:PORT\n");
    return kExitUsage;
  }
  if (!o.cluster.empty()) {
    std::vector<std::string> endpoints;
    std::string name, error;
    if (!runtime::parse_cluster_address(o.cluster, endpoints, name, error)) {
      fmt::print(stderr, "aup run: {}\n", error);
      return kExitUsage;
    }
    runtime::ListenAddress where;
    if (!runtime::parse_listen_address(o.advertise, where, error) || where.http) {
      fmt::print(stderr, "aup run: --advertise: {}\n",
                 error.empty() ? "the others reach a node on a line-protocol address (unix:PATH or HOST:PORT), not "
                                 "HTTP"
                               : error);
      return kExitUsage;
    }
  }
  if (!o.replica_of.empty()) {
    runtime::ListenAddress where;
    std::string error;
    if (!runtime::parse_listen_address(o.replica_of, where, error) || where.http) {
      fmt::print(stderr, "aup run: --replica-of: {}\n",
                 error.empty() ? "a replica follows a line-protocol address (unix:PATH or HOST:PORT), not HTTP" : error);
      return kExitUsage;
    }
  }
  if (!o.memory) return refuse_data_file("run", o.data);
  return -1;
}

// Opens (or creates) the store at --data, replaying it into `tables`;
// says on stderr what opening it did (created, migrated, keys kept from
// now on, a torn tail cut). The store keeps idempotency keys when --keys
// asks for some, or when it kept them before (`report`).
int open_store(const RunOptions& o, storage::Io& fs, const storage::Schema& schema, runtime::StateTables& tables,
               std::unique_ptr<storage::Store>& store, storage::StoreOpenReport& report) {
  storage::StoreOptions sto;
  if (o.segment_bytes) sto.segment_bytes = o.segment_bytes;
  if (o.image_min_bytes) sto.image_min_bytes = o.image_min_bytes;
  if (o.log_min_bytes) sto.log_min_bytes = o.log_min_bytes;
  sto.keep_keys = o.keys && *o.keys > 0;
  storage::Status st;
  {
    OpenProgress progress;
    st = storage::Store::open(fs, o.data, schema, sto, tables, store, report,
                              [&progress](uint64_t e, uint64_t r) { progress(e, r); });
  }
  if (!st.ok()) {
    // A store this process may not write can still be served for queries.
    bool unwritable = (st.err == EACCES || st.err == EROFS || st.err == EPERM) && !report.created;
    fmt::print(stderr, "aup run: {}{}\n", st.message,
               unwritable ? " (to serve it for queries without writing anything, add --read-only)" : "");
    // A store in use, or a disk that refuses, is the environment; a
    // damaged or mismatched store is for the user to fix.
    bool environment = st.err == EWOULDBLOCK || st.err == EACCES || st.err == ENOSPC || st.err == EROFS ||
                       st.err == EDQUOT || st.err == EPERM || st.err == EIO || st.err == ENOTDIR;
    return environment ? kExitUsage : kExitErrors;
  }
  if (report.created) fmt::print(stderr, "aup: created the store {}\n", o.data);
  for (const std::string& path : report.leftovers_removed) {
    fmt::print(stderr, "aup: removed {}, left by a write that did not finish (it was never part of the store)\n",
               path);
  }
  for (const std::string& change : report.migrated) fmt::print(stderr, "aup: migrated {}: {}\n", o.data, change);
  if (report.keys_added) {
    using storage::kKeyTables;
    fmt::print(stderr, "aup: the store {} keeps idempotency keys from now on (its own tables `{}` and `{}`)\n",
               o.data, kKeyTables[storage::kKeysTable].name, kKeyTables[storage::kKeyOrderTable].name);
  }
  if (report.torn) fmt::print(stderr, "aup: the log ended in a torn write ({}); it was cut\n", report.torn_where);
  return kExitOk;
}

// Fills the module's indexes from the tables just recovered: indexes are
// not stored (docs/store-format.md), so this is part of every open. A
// unique index that finds two rows with equal values refuses the open.
int build_indexes(const vm::Module& m, vm::State& state) {
  if (m.indexes.empty()) return kExitOk;
  bool tty = isatty(fileno(stderr)) != 0;
  auto start = std::chrono::steady_clock::now();
  bool shown = false;
  // As OpenProgress: a line on a terminal once the work has taken a second,
  // or before an index over a million rows (which takes about that).
  auto progress = [&](uint32_t i) {
    size_t rows = state.table(m.indexes[i].table).size();
    if (!tty || (std::chrono::steady_clock::now() - start < std::chrono::seconds(1) && rows < 1000000)) return;
    fmt::print(stderr, "\raup: opening the store: building index `{}` of `{}` ({}, {} of {})", m.indexes[i].name,
               m.tables[m.indexes[i].table].name, counted(rows, "row", "rows"), i + 1, m.indexes.size());
    shown = true;
  };
  std::string error;
  bool ok = state.rebuild_indexes(error, progress);
  if (shown) fmt::print(stderr, "\n");
  if (!ok) {
    fmt::print(stderr, "aup run: cannot open the store: {}\n", error);
    return kExitErrors;
  }
  return kExitOk;
}

// Answers the requests of stdin, or of the sockets of --listen, until the
// input ends or a signal comes; `d` makes the events durable (or not).
int serve(const RunOptions& o, const runtime::ServiceOptions& so, runtime::Service& service, vm::State& state,
          runtime::Durability& d, runtime::Shipper* shipper = nullptr, runtime::OwnerTasks* tasks = nullptr) {
  // A closed stdout or a gone client must be an error we report, not a
  // silent death.
  std::signal(SIGPIPE, SIG_IGN);
  if (o.listen.empty()) {
    runtime::StdioOptions io;
    if (o.max_line_bytes) io.max_line_bytes = o.max_line_bytes;
    io.fixed_now = o.fixed_time;
    io.max_batch = o.max_batch;
    io.bail = o.bail;
    return runtime::serve_stdio(service, d, io, STDIN_FILENO, STDOUT_FILENO, stderr);
  }
  runtime::ServerOptions server;
  server.io_threads = o.io_threads ? *o.io_threads : runtime::default_io_threads();
  if (o.max_connections) server.max_connections = o.max_connections;
  if (o.max_pending) server.max_pending = o.max_pending;
  if (o.max_output_bytes) server.max_output_bytes = o.max_output_bytes;
  if (o.max_line_bytes) server.max_line_bytes = o.max_line_bytes;
  if (o.http_timeout_seconds) server.http_timeout_seconds = o.http_timeout_seconds;
  server.max_batch = o.max_batch;
  server.fixed_now = o.fixed_time;
  server.stats = o.stats;
  server.service = so;
  server.shipper = shipper;
  server.tasks = tasks;
  return runtime::serve_socket(service, state, d, server, *o.bound, stderr);
}

// The keys' window: --keys, else the default for a store that keeps keys
// (`kept`: its open said so).
runtime::KeyWindow key_window(const RunOptions& o, bool kept) {
  runtime::KeyWindow w;
  w.age_seconds = o.keys_age_seconds;
  w.count = o.keys ? *o.keys : kept ? runtime::kDefaultKeyWindow : 0;
  return w;
}

// The Service that applies events, with the keys it keeps (if any).
struct Owner {
  Owner(const vm::Module& m, vm::State& state, const runtime::ServiceOptions& so, runtime::KeyWindow w)
      : service(m, state, so) {
    if (w.count == 0) return;
    keys = std::make_unique<runtime::KeyTable>(state, w);
    service.set_keys(keys.get());
  }
  runtime::Service service;
  std::unique_ptr<runtime::KeyTable> keys;
};

// A replica's store says so (storage/role.h); a store that is a replica
// is refused without --replica-of.
int take_role(const RunOptions& o, storage::Io& fs, const storage::Store& store) {
  std::string primary;
  storage::Status st = storage::read_replica_of(fs, o.data, primary);
  if (!st.ok() && st.err != ENOENT) {
    fmt::print(stderr, "aup run: {}\n", st.message);
    return kExitUsage;
  }
  if (!o.cluster.empty()) {
    // The cluster decides the role: a store that was a replica by hand
    // is one no more.
    if (st.ok()) st = storage::remove_replica_of(fs, o.data);
    if (!st.ok() && st.err != ENOENT) {
      fmt::print(stderr, "aup run: {}\n", st.message);
      return kExitUsage;
    }
    return kExitOk;
  }
  if (o.replica_of.empty()) {
    if (st.ok()) {
      fmt::print(stderr,
                 "aup run: the store {} is a replica of {} (term {}): run it with --replica-of {}, or make it a "
                 "primary with `aup promote --data {}`\n",
                 o.data, primary, store.term(), primary, o.data);
      return kExitUsage;
    }
    return kExitOk;
  }
  if (st.ok() && primary == o.replica_of) return kExitOk;
  st = storage::write_replica_of(fs, o.data, o.replica_of);
  if (!st.ok()) {
    fmt::print(stderr, "aup run: {}\n", st.message);
    return kExitUsage;
  }
  return kExitOk;
}

// A restart is the server's own stop, then main starts aup run again.
void restart_self() { ::kill(::getpid(), SIGTERM); }

// A node of a cluster (runtime/cluster.h): its role is etcd's to decide.
int serve_in_cluster(const RunOptions& o, const runtime::ServiceOptions& so, Owner& owner, vm::State& state,
                     runtime::StoreDurability& durable, storage::Store& store, storage::Io& fs,
                     runtime::Shipper& shipper) {
  runtime::ClusterOptions co;
  std::string error;
  bool parsed = runtime::parse_cluster_address(o.cluster, co.etcd, co.name, error);
  assert(parsed);  // refuse_before_start() checked it
  (void)parsed;
  co.node = o.node;
  co.advertise = o.advertise;
  co.lease_ttl_seconds = static_cast<int>(o.lease_ttl_seconds);
  co.sync_replicas = o.sync_replicas.value_or(0);
  runtime::OwnerTasks tasks;
  durable.refuse_events(runtime::Code::Unavailable,
                        fmt::format("this node has not joined the cluster {} yet: send it again shortly", co.name));
  shipper.refuse_replicas(fmt::format("this node has not joined the cluster {} yet", co.name));
  runtime::Cluster cluster(co, store, fs, tasks, durable, shipper, stderr, restart_self);
  durable.set_gate([&cluster] { return cluster.may_answer(); });
  if (so.metrics) so.metrics->set_replication([&cluster] { return cluster.figures(); });
  int served = serve(o, so, owner.service, state, durable, &shipper, &tasks);
  if (so.metrics) so.metrics->set_replication(nullptr);
  durable.set_gate(nullptr);
  return cluster.restarting() ? kRunAgain : served;
}

// The store served as what --replica-of or --cluster make it: a replica,
// a node of a cluster, or (any store served on an address) a primary that
// replicas may follow.
int serve_store(const RunOptions& o, const runtime::ServiceOptions& so, Owner& owner, vm::State& state,
                runtime::StateTables& tables, runtime::StoreDurability& durable, storage::Store& store,
                storage::Io& fs) {
  if (!o.replica_of.empty()) {
    tables.follow_rows();
    durable.set_replica_of(o.replica_of);
    runtime::OwnerTasks tasks;
    runtime::Follower follower(o.replica_of, store, fs, tasks, stderr, restart_self);
    if (so.metrics) so.metrics->set_replication([&follower] { return follower.figures(); });
    int served = serve(o, so, owner.service, state, durable, nullptr, &tasks);
    if (so.metrics) so.metrics->set_replication(nullptr);
    return follower.restarting() ? kRunAgain : served;
  }
  if (o.listen.empty()) return serve(o, so, owner.service, state, durable);
  runtime::Shipper shipper(fs, o.data, store.schema(), stderr);
  durable.set_shipper(&shipper);
  int served;
  if (o.cluster.empty()) {
    // A primary once replicas follow it, or --sync-replicas says it is one.
    uint32_t term = store.term(), k = o.sync_replicas.value_or(0);
    bool declared = o.sync_replicas.has_value();
    if (so.metrics) {
      so.metrics->set_replication([&shipper, term, k, declared] {
        runtime::ReplicationFigures f = shipper.figures(k, term);
        return f.replicas > 0 || declared ? f : runtime::ReplicationFigures{0, static_cast<double>(term)};
      });
    }
    served = serve(o, so, owner.service, state, durable, &shipper);
    if (so.metrics) so.metrics->set_replication(nullptr);
  } else {
    tables.follow_rows();  // it may be a replica, whose entries move index entries with their rows
    served = serve_in_cluster(o, so, owner, state, durable, store, fs, shipper);
  }
  durable.set_shipper(nullptr);
  return served;
}

// The state kept in a store: opened, served, its figures printed.
int run_on_store(const RunOptions& o, const vm::Module& m, vm::State& state, const runtime::ServiceOptions& so) {
  std::unique_ptr<storage::Io> fs = store_io("run", stderr);
  if (!fs) return kExitUsage;
  std::string error;
  runtime::StateTables tables(state);
  std::unique_ptr<storage::Store> store;
  storage::StoreOpenReport report;
  if (int rc = open_store(o, *fs, runtime::schema_of(m), tables, store, report); rc != kExitOk) return rc;
  if (int rc = build_indexes(m, state); rc != kExitOk) return rc;
  runtime::KeyWindow window = key_window(o, report.keeps_keys);
  // Key rows go to the store's key tables: a window means the store has them.
  assert(window.count == 0 || report.keeps_keys);
  Owner owner(m, state, so, window);
  runtime::StoreDurability durable(state, *store);
  if (int rc = take_role(o, *fs, *store); rc != kExitOk) return rc;
  auto ms = [](double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000 + 0.5)); };
  if (o.sync_replicas || !o.replica_of.empty() || !o.cluster.empty()) {
    durable.set_replication(o.sync_replicas.value_or(0), ms(o.sync_timeout_seconds));
  }
  durable.set_after_timeout(ms(o.after_timeout_seconds));
  int served = serve_store(o, so, owner, state, tables, durable, *store, *fs);
  if (o.stats) print_stats(*store);
  return served;
}

// --read-only: what writes a store, or takes part in replication, has no
// meaning on one never written.
int refuse_with_read_only(const RunOptions& o) {
  std::string what = !o.replica_of.empty()     ? "--replica-of (a replica writes what it copies)"
                     : !o.cluster.empty()      ? "--cluster (a node may become the primary)"
                     : o.keys.has_value()      ? "--keys (keys are kept with the events it refuses)"
                     : o.sync_replicas         ? "--sync-replicas (no events, no replicas to wait for)"
                     : o.segment_bytes != 0    ? "--segment-size (no log is written)"
                     : o.image_min_bytes != 0  ? "--image-min (no image is written)"
                     : o.log_min_bytes != 0    ? "--log-min (no image is written)"
                                               : std::string();
  if (what.empty()) return -1;
  fmt::print(stderr, "aup run: --read-only writes nothing, so it does not go with {}\n", what);
  return kExitUsage;
}

// --read-only: the store read into the state and served, never written
// (storage/read_only.h); every event refused.
int run_read_only(const RunOptions& o, const vm::Module& m, vm::State& state, const runtime::ServiceOptions& so) {
  std::unique_ptr<storage::Io> fs = store_io("run", stderr);
  if (!fs) return kExitUsage;
  std::string error;
  runtime::StateTables tables(state);
  std::unique_ptr<storage::ReadOnlyStore> store;
  storage::ReadOnlyReport report;
  storage::Status st = storage::ReadOnlyStore::open(*fs, o.data, runtime::schema_of(m), tables, store, report);
  if (!st.ok()) {
    fmt::print(stderr, "aup run: {}\n", st.message);
    // Damage and a mismatched module are the user's to fix (err 0); a
    // missing store, one in use, or a failed read, the environment.
    return st.err != 0 ? kExitUsage : kExitErrors;
  }
  for (const std::string& change : report.not_migrated) {
    fmt::print(stderr, "aup: {} is not migrated (read-only): {}, served as its default\n", o.data, change);
  }
  if (report.torn) {
    fmt::print(stderr, "aup: the log ends in a torn write ({}); left as it is (read-only)\n", report.torn_where);
  }
  if (int rc = build_indexes(m, state); rc != kExitOk) return rc;
  fmt::print(stderr, "aup: serving the store {} read-only, as of save {}: queries are answered, events refused{}\n",
             o.data, report.last_seq,
             report.held ? "" : " (it has no LOCK file: nothing keeps an `aup run` from writing it meanwhile)");
  Owner owner(m, state, so, runtime::KeyWindow{});
  runtime::ReadOnlyDurability durable(state, o.data, report.last_seq);
  return serve(o, so, owner.service, state, durable);
}

}  // namespace

namespace {

// Opens the replica's store as it was written (its own schema, no module)
// and begins the term after its last entry's; then it is a replica no
// more. A crash between the two leaves a replica in a new term, which
// promoting again moves on by one more.
int promote_store(const std::string& dir, storage::Io& fs, const std::string& primary) {
  storage::Schema stored;
  storage::Status st = storage::read_schema_file(fs, dir, stored);
  storage::Schema module;
  for (const storage::TableSchema& t : stored.tables) {
    if (!storage::is_key_table(t.name)) module.tables.push_back(t);
  }
  module.vars = stored.vars;
  storage::MemoryTables tables(stored);
  std::unique_ptr<storage::Store> store;
  storage::StoreOpenReport report;
  if (st.ok()) st = storage::Store::open(fs, dir, module, storage::StoreOptions{}, tables, store, report, {});
  uint32_t term = store ? store->term() + 1 : 0;
  if (st.ok() && term == 0) st = storage::Status::error("the store is in its last term; it cannot begin another");
  if (st.ok()) st = store->begin_term(term);
  if (st.ok()) st = storage::remove_replica_of(fs, dir);
  if (!st.ok()) {
    fmt::print(stderr, "aup promote: {}\n", st.message);
    return st.err == EWOULDBLOCK ? kExitUsage : kExitErrors;
  }
  fmt::print(stderr, "aup: the store {} was a replica of {}; it is a primary now, in term {}, from save {}\n", dir,
             primary, term, store->last_seq());
  return kExitOk;
}

}  // namespace

int promote(const PromoteOptions& o) {
  if (int rc = refuse_data_file("promote", o.data); rc >= 0) return rc;
  if (int rc = refuse_missing_store("promote", o.data); rc >= 0) return rc;
  std::unique_ptr<storage::Io> fs = store_io("promote", stderr);
  if (!fs) return kExitUsage;
  std::string primary;
  storage::Status st = storage::read_replica_of(*fs, o.data, primary);
  if (!st.ok()) {
    fmt::print(stderr, "aup promote: {}\n",
               st.err == ENOENT ? fmt::format("the store {} is not a replica (it has no replica-of file): it is "
                                              "a primary already, or not a store",
                                              o.data)
                                : st.message);
    return st.err == ENOENT ? kExitErrors : kExitUsage;
  }
  return promote_store(o.data, *fs, primary);
}

namespace {

#if defined(__SANITIZE_ADDRESS__)
#define AUP_LEAK_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define AUP_LEAK_CHECKED 1
#endif
#endif

// The state of a run, left to the operating system when the run ends: the
// process exits (or execs itself again) right after, and freeing every
// row, node and text one by one took a third of the time a W=10 TPC-C
// store took to open and exit (docs/benchmarks.md, *Opening a store*).
// A build with a leak checker frees it, so that a leak elsewhere shows.
struct StateAtExit {
  std::unique_ptr<vm::State> state;
  ~StateAtExit() {
#ifndef AUP_LEAK_CHECKED
    (void)state.release();
#endif
  }
};

}  // namespace

int run(const RunOptions& given) {
  if (int rc = refuse_before_start(given); rc >= 0) return rc;
  runtime::BoundListeners bound;
  RunOptions o = given;
  o.bound = &bound;
  if (int rc = o.read_only ? refuse_with_read_only(o) : -1; rc >= 0) return rc;
  if ((!o.replica_of.empty() || !o.cluster.empty()) && (o.memory || o.listen.empty())) {
    fmt::print(stderr, "aup run: {} needs a store (--data DIR) and an address to answer queries on "
                       "(--listen ADDRESS)\n",
               o.cluster.empty() ? "--replica-of" : "--cluster");
    return kExitUsage;
  }
  int rc = kExitOk;
  auto m = load(o.module, rc);
  if (!m) return rc;
  m->prepare();
  StateAtExit held{std::make_unique<vm::State>(*m)};
  vm::State& state = *held.state;
  // Compiled once, here, before the store opens: every Service (the owner's
  // and each query thread's) runs the same code.
  std::unique_ptr<vm::NativeCode> native;
  if (int engine_rc = choose_engine(o, *m, native); engine_rc != kExitOk) return engine_rc;
  // Every address bound before the store is opened or made: one that
  // cannot be served (no such host, a port in use, a missing directory)
  // leaves nothing behind. The sockets are kept for the server.
  if (std::string error; !bound.bind(o.listen, error)) {
    fmt::print(stderr, "aup run: --listen: {}\n", error);
    return kExitUsage;
  }
  // The stats request's figures (runtime/metrics.h): made before the store
  // opens, so uptime and checkpoint age count from the start.
  runtime::Metrics metrics;
  metrics.set_build(AUP_VERSION, native ? "jit" : "vm");
  if (native) metrics.set_jit_code_bytes(native->code_bytes);
  runtime::ServiceOptions so;
  if (o.step_budget) so.step_budget = o.step_budget;
  so.native = native.get();
  so.metrics = &metrics;
  if (o.read_only) return run_read_only(o, *m, state, so);
  if (!o.memory) return run_on_store(o, *m, state, so);
  Owner owner(*m, state, so, key_window(o, false));
  runtime::MemoryDurability memory(state);
  return serve(o, so, owner.service, state, memory);
}

}  // namespace aup::cli

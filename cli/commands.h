// The work behind `aup disasm`, `aup run` and `aup backup` (main.cpp only parses the
// command line; `aup check` and `aup build` are the front end's own,
// compiler/driver.h). Each returns the exit code: 0 success, 1 a problem
// the user must fix (a module with errors, a damaged module file or
// store), 2 usage or environment.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aup::vm {
struct Module;
}  // namespace aup::vm

namespace aup::storage {
class Io;
}  // namespace aup::storage

namespace aup::runtime {
class BoundListeners;
}

namespace aup::cli {

struct DisasmOptions {
  std::string module;
  bool ir = false;           // LLVM IR (as --engine jit compiles it) instead of bytecode
  std::string function;      // with --ir: only this function
  bool unoptimized = false;  // with --ir: before LLVM's optimizations
};
int disasm(const DisasmOptions& o);

struct RunOptions {
  std::string module;
  bool memory = false;
  std::string data = "aup-data";
  uint64_t step_budget = 0;     // 0: the default
  uint64_t max_line_bytes = 0;  // 0: the default
  uint32_t max_batch = 0;       // 0: every event read together
  uint64_t segment_bytes = 0;   // 0: the default (64 MiB)
  uint64_t image_min_bytes = 0; // 0: the default (1 MiB)
  uint64_t log_min_bytes = 0;   // 0: the default (64 MiB)
  // --read-only: the store served as it is, never written
  // (storage/read_only.h): queries answered, events refused.
  bool read_only = false;
  std::optional<double> fixed_time;
  // "vm" (interpret the bytecode), "jit" (compile it with LLVM), or empty:
  // the default, jit, except for very large modules or when the JIT
  // cannot be loaded (then the VM, said on stderr).
  std::string engine;
  bool stats = false;           // print the store's figures at exit (and, serving, a line a second)
  // --keys: idempotency keys kept (runtime/keys.h); unset: none, unless the
  // store already keeps them (then runtime::kDefaultKeyWindow).
  std::optional<uint64_t> keys;
  double keys_age_seconds = 0;  // 0: no age limit
  // --listen (any number): serve connections instead of stdin. run() binds
  // them all (`bound`) before the store is opened or made: a bad address
  // leaves nothing behind.
  std::vector<std::string> listen;
  runtime::BoundListeners* bound = nullptr;
  // --bail: over stdin, stop at the first request that fails (exit 1).
  bool bail = false;
  uint32_t http_timeout_seconds = 0;  // 0: the default
  std::optional<uint32_t> io_threads;  // unset: runtime::default_io_threads()
  uint32_t max_connections = 0;
  uint32_t max_pending = 0;
  uint64_t max_output_bytes = 0;
  // Replication (docs/replication.md). --replica-of ADDRESS: follow that
  // primary. --sync-replicas K: answer an event once K replicas hold it
  // too (given at all, events are answered with their saves), waiting at
  // most --sync-timeout; --after-timeout: how long a query waits for its
  // `after` save.
  std::string replica_of;
  // --cluster etcd://HOST:PORT[,...]/NAME --node ID --advertise ADDRESS
  // (runtime/cluster.h): etcd elects the primary; --lease-ttl its lease's.
  std::string cluster, node, advertise;
  uint32_t lease_ttl_seconds = 5;
  std::optional<uint32_t> sync_replicas;
  double sync_timeout_seconds = 5;
  double after_timeout_seconds = 5;
};
// run()'s answer when the store is to be opened again (a replica that cut
// its log or received a copy: runtime/follower.h): main starts `aup run`
// again with the same arguments. Never an exit status.
inline constexpr int kRunAgain = -1;
int run(const RunOptions& o);

// `aup promote --data DIR`: a stopped replica's store begins a new term
// and is a replica no more (docs/replication.md).
struct PromoteOptions {
  std::string data = "aup-data";
};
int promote(const PromoteOptions& o);

// `aup backup`: a copy of the store `data` as of one save, made while it
// may be served (storage/backup.h), into the new directory `to`.
struct BackupOptions {
  std::string data = "aup-data";
  std::string to;
};
int backup(const BackupOptions& o);

// `--data` naming something that is there and is not a directory (a
// regular file) is the caller's mistake: said for `aup COMMAND`, exit 2.
// -1 when `dir` is a directory or nothing yet.
int refuse_data_file(std::string_view command, const std::string& dir);

// A module from an .aup source (compiled now, diagnostics on stderr) or an
// .aupm file, as `aup run` loads it; null with the exit code set when it
// cannot be had.
std::unique_ptr<vm::Module> load_module(const std::string& path, int& exit_code);

// For a command that reads a store and never makes one (`aup replay`,
// `aup backup`, `aup promote`): `dir` with no store in it is said so, with
// how a store is named (--data DIR), exit 2. -1 when it holds a store
// (or is a file: refuse_data_file()).
int refuse_missing_store(std::string_view command, const std::string& dir);

// The files a store command works on: the system's, or the fault plan
// $AUP_FAULTS names (storage/io.h). Null after saying on `err` why the
// plan cannot be read (the caller exits kExitUsage).
std::unique_ptr<storage::Io> store_io(std::string_view command, std::FILE* err);

}  // namespace aup::cli

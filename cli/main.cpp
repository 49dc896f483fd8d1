// aup: the command users type. It only parses the command line; each
// subcommand's work lives in a library (compiler/, vm/, runtime/) behind
// cli/commands.h. An option that would be ignored in the company of
// another (`--memory` with `--data`, `--max-pending` without `--listen`) is
// refused, not dropped: a user who wrote it meant something by it.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/call.h"
#include "cli/cluster_status.h"
#include "cli/commands.h"
#include "cli/huge_pages.h"
#include "cli/rows.h"
#include "cli/shell.h"
#include "compiler/check_cli.h"
#include "runtime/replay.h"

namespace {

// `aup run` again, the same executable with the same arguments (its
// store is to be reopened: aup::cli::kRunAgain). Returns only if it could
// not be started.
int start_again(char** argv) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    std::fflush(nullptr);
    execv(self, argv);
  }
  std::fprintf(stderr, "aup run: cannot start again to reopen the store: %s\n", std::strerror(errno));
  return 1;
}

using aup::cli::BackupOptions;
using aup::cli::CallOptions;
using aup::cli::DisasmOptions;
using aup::cli::PromoteOptions;
using aup::cli::RunOptions;
using aup::cli::ShellOptions;
using aup::cli::StatsOptions;
using aup::runtime::ReplayOptions;

CLI::App* add_disasm_command(CLI::App& app, DisasmOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "disasm", "Print a module's schema and bytecode, one instruction a line with source positions;\n"
                "with --ir, the LLVM IR `aup run --engine jit` compiles instead.");
  cmd->add_option("module", o.module, "an .aupm module file, or an .aup source (compiled first)")
      ->required()
      ->type_name("MODULE");
  CLI::Option* ir = cmd->add_flag("--ir", o.ir, "print LLVM IR (after LLVM's O2 optimizations, as it runs)");
  cmd->add_option("--function", o.function, "with --ir: only this handler, query or helper (default: all)")
      ->type_name("NAME")
      ->needs(ir);
  cmd->add_flag("--unoptimized", o.unoptimized, "with --ir: the IR as translated, before optimizing")->needs(ir);
  return cmd;
}

// `now` for every event and query: any time a double holds each whole
// millisecond of exactly, no NaN, no infinity.
constexpr double kMaxFixedTime = 9007199254740992.0;  // 2^53 ms, about 285,000 years

CLI::Validator fixed_time_check() {
  return CLI::Validator(
      [](std::string& text) {
        char* end = nullptr;
        double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v)) {
          return text + ": expected a time, a finite number of milliseconds since the Unix epoch";
        }
        if (std::fabs(v) > kMaxFixedTime) return text + ": expected a time within ±2^53 ms (9007199254740992)";
        return std::string();
      },
      "");
}

// What `aup run` runs and how: the module, the engine, the time, the
// limits of one request.
void add_run_basics(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("module", o.module, "an .aupm module file, or an .aup source (compiled first)")
      ->required()
      ->type_name("MODULE");
  cmd.add_option("--engine", o.engine,
                 "how module code runs: jit (the default: native code compiled with LLVM at load, kept\n"
                 "in a cache, $AUP_JIT_CACHE or ~/.cache/aup/jit) or vm (the bytecode interpreter); the\n"
                 "same results, byte for byte. By default a module of over 20,000 instructions, or a\n"
                 "machine where the JIT cannot load, runs on the VM. $AUP_ENGINE, if set, stands in for\n"
                 "this option")
      ->check(aup::one_of({"vm", "jit"}))
      ->type_name("vm|jit");
  cmd.add_option_function<double>(
         "--fixed-time", [&o](const double& ms) { o.fixed_time = ms; },
         "use this time (ms since the Unix epoch, within ±2^53) as `now` for every event and query\n"
         "(for tests; default: the clock)")
      ->type_name("MS")
      ->check(fixed_time_check());
  cmd.add_option("--step-budget", o.step_budget,
                 "steps (loop rounds and calls) one event or query may take (default 10000000; 1 to 2^40)")
      ->type_name("N")
      ->check(aup::whole_number(1, uint64_t{1} << 40));
  cmd.add_option("--max-line", o.max_line_bytes, "longest request line in bytes (default 16 MiB; 64 bytes to 1 GiB)")
      ->type_name("BYTES")
      ->check(aup::whole_number(64, uint64_t{1} << 30, true));
  cmd.add_option("--max-batch", o.max_batch,
                 "at most N events per commit (default: all read together; 1 to 1000000)")
      ->type_name("N")
      ->check(aup::whole_number(1, 1000000));
  CLI::Option* keys = cmd.add_option_function<uint64_t>(
      "--keys", [&o](const uint64_t& n) { o.keys = n; },
      "keep the idempotency keys of up to N events (a request's \"key\": a retry of it is answered\n"
      "again, not applied twice; docs/protocol.md), in the store with their events. A store that\n"
      "kept keys goes on keeping them (100000 unless this says otherwise; 0: take no new ones;\n"
      "at most 2^32)");
  keys->check(aup::whole_number(0, uint64_t{1} << 32))->type_name("N");
  cmd.add_option("--keys-age", o.keys_age_seconds,
                 "and keep none longer than this many seconds (default: no age limit; 1 to 1e10)")
      ->check(aup::number_between(1.0, 1e10))
      ->type_name("SECONDS")
      ->needs(keys);
  cmd.add_flag("--stats", o.stats,
               "print figures on stderr: the JIT's compile times at start (`aup: jit {...}`); at exit,\n"
               "the store's (`aup: totals {...}`: commits, bytes written, checkpoints, commit latency\n"
               "(write + fdatasync) p50/p99/max; none with --memory); with --listen also a line a second\n"
               "(`aup: stats {...}`): events/s, queries/s, batch size, commit p50/p99, the owner thread's\n"
               "share of a core, snapshot nodes copied and recycled, log bytes, connections");
}

// Where the state lives: a store directory and how it keeps its log and
// images, or memory only (then none of those mean anything).
void add_store_options(CLI::App& cmd, RunOptions& o) {
  CLI::Option* memory =
      cmd.add_flag("--memory", o.memory, "keep the state in memory only: nothing is written, nothing survives");
  cmd.add_option("--data", o.data, "the store directory (made if missing)")
      ->capture_default_str()
      ->type_name("DIR")
      ->excludes(memory);
  cmd.add_option("--segment-size", o.segment_bytes, "bytes per log segment (default 64 MiB; 4 KiB to 16 GiB)")
      ->type_name("BYTES")
      ->check(aup::whole_number(4096, uint64_t{1} << 34, true))
      ->excludes(memory);
  cmd.add_option("--image-min", o.image_min_bytes,
                 "least log bytes for a table before it gets a new image (default 1 MiB; 1 byte to 1 TiB)")
      ->type_name("BYTES")
      ->check(aup::whole_number(1, uint64_t{1} << 40, true))
      ->excludes(memory);
  cmd.add_option("--log-min", o.log_min_bytes,
                 "least live log bytes before the oldest table gets a new image (default 64 MiB; 1 byte\n"
                 "to 1 TiB)")
      ->type_name("BYTES")
      ->check(aup::whole_number(1, uint64_t{1} << 40, true))
      ->excludes(memory);
  cmd.add_flag("--read-only", o.read_only,
               "serve the store as it is and write nothing (a read-only volume, files this user may not\n"
               "write): queries are answered, every event is refused `not_primary`; no LOCK file, log,\n"
               "checkpoint or other file is made. The store must exist; an `aup run` that writes it is\n"
               "refused meanwhile (docs/operations.md, \"Serving a store read-only\")")
      ->excludes(memory);
}

// Serving sockets instead of stdin, and the limits that only serving has.
// docs/replication.md: a replica, a primary's durability level, the waits.
void add_replication_options(CLI::App& cmd, RunOptions& o, CLI::Option* listen) {
  CLI::Option* replica = cmd.add_option("--replica-of", o.replica_of,
                                        "follow the primary at ADDRESS (unix:PATH or HOST:PORT): copy its log entries "
                                        "into this\nstore as it commits them, answer queries, refuse events with "
                                        "`not_primary`\n(docs/replication.md). Needs --data and --listen")
                             ->type_name("ADDRESS")
                             ->needs(listen);
  CLI::Option* cluster =
      cmd.add_option("--cluster", o.cluster,
                     "be a node of the cluster NAME, whose primary etcd elects (docs/replication.md): the\n"
                     "primary takes events, the others follow it and take over when it is lost. Needs\n"
                     "--data, --listen, --node and --advertise")
          ->type_name("etcd://HOST:PORT[,HOST:PORT...]/NAME")
          ->needs(listen)
          ->excludes(replica);
  CLI::Option* node = cmd.add_option("--node", o.node, "this node's name in its cluster (letters, digits, -_.)")
                          ->type_name("ID")
                          ->needs(cluster);
  CLI::Option* advertise =
      cmd.add_option("--advertise", o.advertise,
                     "the line-protocol address the cluster's other nodes and clients reach this node on\n"
                     "(unix:PATH or HOST:PORT)")
          ->type_name("ADDRESS")
          ->needs(cluster);
  cluster->needs(node)->needs(advertise);
  cmd.add_option("--lease-ttl", o.lease_ttl_seconds,
                 "seconds of this node's lease in etcd: a primary not heard from for that long is replaced\n"
                 "(default 5; 2 to 300)")
      ->type_name("SECONDS")
      ->check(aup::whole_number(2, 300))
      ->needs(cluster);
  CLI::Option* sync = cmd.add_option_function<uint32_t>(
                             "--sync-replicas", [&o](const uint32_t& k) { o.sync_replicas = k; },
                             "answer an event only once its batch is durable here and on K replicas; given\n"
                             "at all (0 too), every event's answer carries its save number, `\"save\": N`\n"
                             "(docs/replication.md; 0 to 64)")
                         ->type_name("K")
                         ->check(aup::whole_number(0, 64))
                         ->needs(listen);
  cmd.add_option("--sync-timeout", o.sync_timeout_seconds,
                 "seconds an event waits for its K replicas before it is answered `unavailable`,\n"
                 "perhaps written (default 5; 0.001 to 3600)")
      ->type_name("SECONDS")
      ->check(aup::number_between(0.001, 3600.0))
      ->needs(sync);
  cmd.add_option("--after-timeout", o.after_timeout_seconds,
                 "seconds a query with `after` waits for this node to reach that save (default 5;\n"
                 "0.001 to 3600)")
      ->type_name("SECONDS")
      ->check(aup::number_between(0.001, 3600.0))
      ->needs(listen);
}

// An option that may be given again, one value an occurrence (`--from 1
// --from a`, `--listen A --listen B`): the word after its value is never
// taken for a second one (`--listen A MODULE` leaves MODULE).
CLI::Option* repeatable(CLI::Option* o) {
  return o->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void add_listen_options(CLI::App& cmd, RunOptions& o) {
  CLI::Option* listen =
      cmd.add_option("--listen", o.listen,
                     "serve many connections instead of stdin, speaking the line protocol on unix:PATH\n"
                     "(mode 0600), HOST:PORT or :PORT (loopback), or HTTP on http://HOST:PORT or\n"
                     "http://:PORT (loopback); may be given more than once; each address is printed on\n"
                     "stderr")
          ->type_name("ADDR");
  repeatable(listen);
  cmd.add_flag("--bail", o.bail,
               "over stdin: stop at the first request that fails (its answer is the last one printed;\n"
               "nothing after it is run) and exit 1")
      ->excludes(listen);
  cmd.add_option_function<uint32_t>(
         "--io-threads", [&o](const uint32_t& n) { o.io_threads = n; },
         "with --listen: threads that read, write and run queries; 0: the owner thread serves\n"
         "the connections itself, each request run to completion (default: 0 when this process\n"
         "may run on at most two CPUs, else 2; at most 64)")
      ->type_name("N")
      ->check(aup::whole_number(0, 64))
      ->needs(listen);
  cmd.add_option("--max-connections", o.max_connections,
                 "with --listen: connections at once; more are answered `unavailable` (default 1024;\n"
                 "1 to 1000000)")
      ->type_name("N")
      ->check(aup::whole_number(1, 1000000))
      ->needs(listen);
  cmd.add_option("--max-pending", o.max_pending,
                 "with --listen: requests of one connection read but not yet answered; past it the\n"
                 "connection is not read until answers are taken (default 1024; 1 to 1000000)")
      ->type_name("N")
      ->check(aup::whole_number(1, 1000000))
      ->needs(listen);
  cmd.add_option("--http-timeout", o.http_timeout_seconds,
                 "with --listen http://...: seconds an HTTP request may take to arrive whole, from its\n"
                 "first byte; a slower one is answered 408 and closed (default 10; 1 to 3600)")
      ->type_name("SECONDS")
      ->check(aup::whole_number(1, 3600))
      ->needs(listen);
  cmd.add_option("--max-output", o.max_output_bytes,
                 "with --listen: bytes of answers waiting for one connection before it is no longer\n"
                 "read (default 16 MiB; 4 KiB to 1 TiB)")
      ->type_name("BYTES")
      ->check(aup::whole_number(4096, uint64_t{1} << 40, true))
      ->needs(listen);
  add_replication_options(cmd, o, listen);
}

CLI::App* add_run_command(CLI::App& app, RunOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "run", "Open (or create) the store, replay it, then apply events and answer queries: one JSON\n"
             "request a line on stdin, one response a line on stdout, in order, until end of input or\n"
             "SIGINT/SIGTERM. Events read together are committed together (one fdatasync) before any\n"
             "of them is answered.\n"
             "Exit status: 0 done; 1 a module with errors or a damaged store, an event answered\n"
             "`unavailable` (the store could not commit it; a request that fails otherwise is an answer\n"
             "like any other), or with --bail a request that failed; 2 usage or environment.");
  add_run_basics(*cmd, o);
  add_store_options(*cmd, o);
  add_listen_options(*cmd, o);
  return cmd;
}

CLI::App* add_backup_command(CLI::App& app, BackupOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "backup", "Copy a store as of one save into a new directory, also while `aup run` serves it (the\n"
                "server does not wait). The copy is made in DEST.partial, synced, renamed to DEST and\n"
                "verified; it opens as a store (restoring is opening it). docs/operations.md.\n"
                "Exit status: 0 copied and verified, 1 the source is damaged, 2 usage or environment.");
  cmd->add_option("--data", o.data, "the store directory")->capture_default_str()->type_name("DIR");
  cmd->add_option("--to", o.to, "the directory to make (it must not exist)")->required()->type_name("DEST");
  return cmd;
}

CLI::App* add_promote_command(CLI::App& app, PromoteOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "promote", "Make a stopped replica's store a primary: it begins a new term (so that its entries are told\n"
                 "from the old primary's) and is a replica no more; then `aup run` it without --replica-of\n"
                 "(docs/replication.md, \"Failing over by hand\").");
  cmd->add_option("--data", o.data, "the replica's store directory")->capture_default_str()->type_name("DIR");
  return cmd;
}

CLI::App* add_replay_command(CLI::App& app, ReplayOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "replay", "Inspect a store without running module code and without writing to it: by default a\n"
                "summary of its tables, images and log segments. A store a running `aup run` serves is\n"
                "read as of its newest durable save (docs/store-format.md, \"Reading a served store\").\n"
                "Exit status: 0 fine, 1 damage, 2 usage or a store that cannot be read.");
  cmd->add_option("--data", o.data, "the store directory")->capture_default_str()->type_name("DIR");
  cmd->add_flag("--verify", o.verify, "read everything; check every digest and the log's chain");
  cmd->add_flag("--entries", o.entries, "one JSON line per log entry");
  CLI::Option* dump = cmd->add_option("--dump", o.dump, "print a table's rows as JSON lines")->type_name("TABLE");
  CLI::Option* vars = cmd->add_flag("--vars", o.vars, "print the vars as one JSON object")->excludes(dump);
  CLI::Option* at = cmd->add_option_function<uint64_t>(
                           "--at", [&o](const uint64_t& seq) { o.at = seq; },
                           "with --dump or --vars: as of this save number (default: the last)")
                        ->type_name("SEQ")
                        ->check(aup::whole_number(0, UINT64_MAX));
  // --at means something only for what --dump or --vars prints (CLI11's
  // needs() asks for all of its options, not one of them).
  cmd->callback([at, dump, vars] {
    if (at->count() && !dump->count() && !vars->count()) throw CLI::ValidationError("--at needs --dump or --vars");
  });
  return cmd;
}

CLI::App* add_call_command(CLI::App& app, CallOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "call", "Send one request to a running `aup run --listen` server and print its answer line.\n"
              "The request: NAME then its arguments, by name (from=1 to=2) or in order (balance 1),\n"
              "checked against the server's module first; a bare word is a text for a text argument,\n"
              "anything else is JSON. Or one raw JSON request line.\n"
              "Exit status: 0 answered ok, 1 the request failed (code and message on stderr),\n"
              "2 usage or connection problems.");
  cmd->add_option("address", o.address,
                  "where the server listens: unix:PATH, HOST:PORT, :PORT or http://HOST:PORT; or several,\n"
                  "a comma between (a cluster's nodes): the first that answers is asked, and an event a\n"
                  "replica refuses (`not_primary`) is sent to the primary it names")
      ->required()
      ->type_name("ADDRESS[,ADDRESS...]");
  cmd->add_option("request", o.words, "NAME [ARG ...], or a JSON request")->required()->type_name("NAME [ARG ...]");
  cmd->add_option("--timeout", o.timeout_seconds, "seconds to wait for each answer")
      ->capture_default_str()
      ->type_name("SECONDS")
      ->check(aup::number_between(0.001, 86400.0));
  cmd->add_option("--key", o.key,
                  "the event's idempotency key (docs/protocol.md, \"Retries that never apply twice\"): a retry\n"
                  "with the same key is answered again, not applied twice, by a server run with --keys;\n"
                  "refused for a query")
      ->type_name("KEY");
  return cmd;
}

CLI::App* add_cluster_command(CLI::App& app, aup::cli::ClusterStatusOptions& o, CLI::App*& status) {
  CLI::App* cmd = app.add_subcommand("cluster", "Look at a cluster whose primary etcd elects (docs/replication.md)");
  cmd->require_subcommand(1);
  status = cmd->add_subcommand(
      "status", "Every node of the cluster as etcd lists it and what each says of itself: its role, term,\n"
                "last save, and a replica's lag in saves and milliseconds.\n"
                "Exit status: 0 a primary leads and every node answered, 1 not, 2 usage or etcd unreachable.");
  status->add_option("--cluster", o.cluster, "the cluster, as its nodes were started with --cluster")
      ->required()
      ->type_name("etcd://HOST:PORT[,HOST:PORT...]/NAME");
  status->add_flag("--json", o.json, "one JSON object instead of the table");
  status->add_option("--timeout", o.timeout_seconds, "seconds to wait for each node's answer")
      ->capture_default_str()
      ->type_name("SECONDS")
      ->check(aup::number_between(0.001, 3600.0));
  return cmd;
}

CLI::App* add_stats_command(CLI::App& app, StatsOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "stats", "Ask a running `aup run --listen` server for its counters and gauges (events applied and\n"
               "failed by code, commits and their latency over the last minute, log and image bytes,\n"
               "checkpoint age, connections, memory: docs/operations.md, \"Monitoring\") and print them\n"
               "a metric a line in its unit (µs/ms/s, KiB/MiB, %), or with --json the answer line. The\n"
               "request is not an event: it does not wait for a commit and is not logged.\n"
               "Exit status: 0 answered, 1 the server refused the request, 2 usage or connection problems.");
  cmd->add_option("address", o.address, "where the server listens: unix:PATH, HOST:PORT, :PORT or http://HOST:PORT")
      ->required()
      ->type_name("ADDRESS");
  cmd->add_flag("--json", o.json, "print the answer line as the server wrote it (one line of JSON)");
  cmd->add_flag("--memory", o.memory,
                "also where memory goes, table by table: a walk of every row and text, which holds the owner\n"
                "(tens of ms at a few hundred MB) unless the server has --io-threads");
  cmd->add_option("--timeout", o.timeout_seconds, "seconds to wait for the answer")
      ->capture_default_str()
      ->type_name("SECONDS")
      ->check(aup::number_between(0.001, 86400.0));
  return cmd;
}

CLI::App* add_shell_command(CLI::App& app, ShellOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "shell", "Type requests by hand: against a running server (ADDRESS), or a store the shell opens\n"
               "itself (MODULE --data DIR, MODULE --memory). Requests as `aup call` takes them (NAME\n"
               "ARG ...) or as JSON lines; tab completes names and arguments; history is kept across\n"
               "sessions; rows print as a table (.mode table|line|json); .help lists the dot commands.\n"
               "Ctrl-C drops the line; Ctrl-C twice on an empty line, Ctrl-D or .quit leaves (a --memory\n"
               "shell whose state changed asks first). Without a terminal it reads the same lines from\n"
               "stdin and prints one answer a line.\n"
               "Exit status, as `aup run`'s: 0 done (a request that failed is an answer like any other),\n"
               "1 an event answered `unavailable` (the store could not commit it), or with --bail a\n"
               "request that failed; 2 usage or connection problems, or a store it cannot open (one a\n"
               "server holds: use `aup shell ADDRESS`).");
  cmd->add_option("target", o.target,
                  "unix:PATH, HOST:PORT, :PORT or http://HOST:PORT, or several with a comma between (the\n"
                  "first that answers; events a replica refuses go to the primary it names); or an\n"
                  ".aup/.aupm module with --data or --memory")
      ->required()
      ->type_name("ADDRESS|MODULE");
  CLI::Option* data = cmd->add_option("--data", o.data, "open this store with MODULE")->type_name("DIR");
  cmd->add_flag("--memory", o.memory, "run MODULE with its state in memory only")->excludes(data);
  cmd->add_option("--history", o.history, "the history file (default $AUP_HISTORY, else ~/.aup_history)")
      ->type_name("FILE");
  cmd->add_option("--timeout", o.timeout_seconds, "seconds to wait for each answer")
      ->capture_default_str()
      ->type_name("SECONDS")
      ->check(aup::number_between(0.001, 86400.0));
  cmd->add_flag("--bail", o.bail,
                "without a terminal: stop at the first request that fails (or line refused), exit 1");
  return cmd;
}

// ---- rows by hand (cli/rows.h)

constexpr const char* kRowsAddress =
    "where the server listens on the line protocol: unix:PATH, HOST:PORT or :PORT; or\n"
    "several, a comma between (a cluster's nodes: a replica answers reads too)";

void add_timeout(CLI::App& cmd, double& seconds) {
  cmd.add_option("--timeout", seconds, "seconds to wait for each answer")
      ->capture_default_str()
      ->type_name("SECONDS")
      ->check(aup::number_between(0.001, 86400.0));
}

CLI::App* add_get_command(CLI::App& app, aup::cli::GetOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "get", "Print the row of TABLE with the key KEY... (one value for each key field, in key order),\n"
             "as one JSON line, or nothing when there is none: a `read` request, answered as a query\n"
             "is (docs/protocol.md, \"The read request\"). Values are typed as `aup call` types them.\n"
             "Exit status: 0 answered, 1 the server refused the read, 2 usage or connection problems.");
  cmd->add_option("address", o.address, kRowsAddress)->required()->type_name("ADDRESS");
  cmd->add_option("table", o.table, "the table")->required()->type_name("TABLE");
  cmd->add_option("key", o.key, "the key's values, in key order (or one JSON array of them)")
      ->required()
      ->type_name("KEY...");
  add_timeout(*cmd, o.timeout_seconds);
  return cmd;
}

CLI::App* add_scan_command(CLI::App& app, aup::cli::ScanOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "scan", "Print TABLE's rows in key order (or an index's), one JSON line each: those from --from\n"
              "to --to (inclusive; each the first values of the order's fields), at most --limit of\n"
              "them; when more follow, how to continue is said on stderr (--all reads on to the end).\n"
              "Exit status: 0 answered, 1 the server refused the read, 2 usage or connection problems.");
  cmd->add_option("address", o.address, kRowsAddress)->required()->type_name("ADDRESS");
  cmd->add_option("table", o.table, "the table")->required()->type_name("TABLE");
  repeatable(cmd->add_option("--from", o.from,
                  "the first rows' values, one a flag in the order's field order (--from 1 --from a),\n"
                  "or one JSON array of them ('[1,\"a\"]')")
      ->type_name("VALUE"));
  repeatable(cmd->add_option("--to", o.to,
                             "the last rows' values, as --from's (inclusive: --to 5 ends after every row with 5)")
      ->type_name("VALUE"));
  cmd->add_option("--index", o.index, "read in this index's order (its fields, then the key's)")->type_name("NAME");
  cmd->add_option_function<uint32_t>(
         "--limit", [&o](const uint32_t& n) { o.limit = n; }, "rows at most (default 100, at most 10000)")
      ->type_name("N")
      ->check(aup::whole_number(1, 10000));
  cmd->add_flag("--all", o.all, "read on, page after page, to the end of the range");
  add_timeout(*cmd, o.timeout_seconds);
  return cmd;
}

CLI::App* add_dump_command(CLI::App& app, aup::cli::DumpOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "dump", "Print the rows of a store's tables as NDJSON, {\"table\":NAME,\"row\":{...}} a line, each\n"
              "table in key order, for `aup load` into another store (docs/operations.md, \"Moving rows\n"
              "between stores\"). From a served store (ADDRESS: read page by page), or from a store\n"
              "directory (--data DIR: as of its newest durable save, also while it is served).\n"
              "Exit status: 0 dumped, 1 the server refused or the store is damaged, 2 usage or environment.");
  CLI::Option* address = cmd->add_option("address", o.address, kRowsAddress)->type_name("ADDRESS");
  cmd->add_option("--data", o.data, "a store directory to read instead of a server")
      ->type_name("DIR")
      ->excludes(address);
  repeatable(cmd->add_option("--table", o.tables, "only this table (may be given more than once; default: every table)")
      ->type_name("NAME"));
  add_timeout(*cmd, o.timeout_seconds);
  return cmd;
}

CLI::App* add_load_command(CLI::App& app, aup::cli::LoadOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "load", "Add the rows of `aup dump` lines (FILE, or stdin) to the store --data DIR, opened with\n"
              "MODULE (created if absent), which may differ from the module they were dumped with: each\n"
              "row is checked against MODULE's record of its table (field names and types, defaults for\n"
              "fields left out, keys and unique indexes unique). The first that does not fit is said\n"
              "with its line, table and field, and nothing is loaded; else all are one log entry.\n"
              "Exit status: 0 loaded, 1 a row that does not fit or a damaged store, 2 usage or environment.");
  cmd->add_option("module", o.module, "the store's module: an .aup source or an .aupm file")
      ->required()
      ->type_name("MODULE");
  cmd->add_option("input", o.input, "the dump lines (default: standard input)")->type_name("FILE");
  cmd->add_option("--data", o.data, "the store directory")->capture_default_str()->type_name("DIR");
  return cmd;
}

struct RowsCommands {
  aup::cli::GetOptions get;
  aup::cli::ScanOptions scan;
  aup::cli::DumpOptions dump;
  aup::cli::LoadOptions load;
  CLI::App* get_cmd = nullptr;
  CLI::App* scan_cmd = nullptr;
  CLI::App* dump_cmd = nullptr;
  CLI::App* load_cmd = nullptr;
};

void add_rows_commands(CLI::App& app, RowsCommands& r) {
  r.get_cmd = add_get_command(app, r.get);
  r.scan_cmd = add_scan_command(app, r.scan);
  r.dump_cmd = add_dump_command(app, r.dump);
  r.load_cmd = add_load_command(app, r.load);
}

// The exit status of the rows command given, or -1 when none was.
int run_rows_command(const RowsCommands& r) {
  if (r.get_cmd->parsed()) return aup::cli::get(r.get, stdout, stderr);
  if (r.scan_cmd->parsed()) return aup::cli::scan(r.scan, stdout, stderr);
  if (r.dump_cmd->parsed()) return aup::cli::dump(r.dump, stdout, stderr);
  if (r.load_cmd->parsed()) return aup::cli::load(r.load, stderr);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"aup: durable applications from small typed modules.\n"
               "Write tables, events and queries in an .aup file; aup checks, builds and runs it.",
               "aup"};
  app.set_version_flag("-V,--version", "aup " AUP_VERSION);
  aup::use_help_formatter(app);  // before the commands: each takes it from its parent
  app.require_subcommand(1);
  app.footer("Run `aup COMMAND --help` (or `aup help COMMAND`) for a command's options.");

  aup::CheckOptions check;
  CLI::App* check_cmd = aup::add_check_command(app, check);
  aup::BuildOptions build;
  CLI::App* build_cmd = aup::add_build_command(app, build);
  DisasmOptions disasm;
  CLI::App* disasm_cmd = add_disasm_command(app, disasm);
  RunOptions run;
  CLI::App* run_cmd = add_run_command(app, run);
  ReplayOptions replay;
  CLI::App* replay_cmd = add_replay_command(app, replay);
  CallOptions call;
  CLI::App* call_cmd = add_call_command(app, call);
  StatsOptions stats;
  CLI::App* stats_cmd = add_stats_command(app, stats);
  aup::cli::ClusterStatusOptions cluster_status;
  CLI::App* cluster_status_cmd = nullptr;
  add_cluster_command(app, cluster_status, cluster_status_cmd);
  ShellOptions shell;
  CLI::App* shell_cmd = add_shell_command(app, shell);
  BackupOptions backup;
  CLI::App* backup_cmd = add_backup_command(app, backup);
  PromoteOptions promote;
  CLI::App* promote_cmd = add_promote_command(app, promote);

  RowsCommands rows;
  add_rows_commands(app, rows);
  aup::name_command_groups(app);
  if (int rc = aup::missing_command(app, argc, argv); rc >= 0) return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return aup::usage_error(app, e);
  }
  if (check_cmd->parsed()) return aup::run_check(check, stdout, stderr);
  if (build_cmd->parsed()) return aup::run_build(build, stdout, stderr);
  if (disasm_cmd->parsed()) return aup::cli::disasm(disasm);
  if (run_cmd->parsed()) {
    aup::cli::prefer_huge_pages(argv);  // before anything is read or opened
    int rc = aup::cli::run(run);
    return rc == aup::cli::kRunAgain ? start_again(argv) : rc;
  }
  if (call_cmd->parsed()) return aup::cli::call(call, stdout, stderr);
  if (stats_cmd->parsed()) return aup::cli::stats(stats, stdout, stderr);
  if (cluster_status_cmd->parsed()) return aup::cli::cluster_status(cluster_status, stdout, stderr);
  if (shell_cmd->parsed()) return aup::cli::shell(shell, "/proc/self/exe");
  if (backup_cmd->parsed()) return aup::cli::backup(backup);
  if (promote_cmd->parsed()) return aup::cli::promote(promote);
  if (int rc = run_rows_command(rows); rc >= 0) return rc;
  if (replay_cmd->parsed()) {
    if (int rc = aup::cli::refuse_data_file("replay", replay.data); rc >= 0) return rc;
    if (int rc = aup::cli::refuse_missing_store("replay", replay.data); rc >= 0) return rc;
    std::unique_ptr<aup::storage::Io> io = aup::cli::store_io("replay", stderr);
    if (!io) return aup::kExitUsage;
    return aup::runtime::replay(*io, replay, stdout, stderr);
  }
  return aup::kExitUsage;
}

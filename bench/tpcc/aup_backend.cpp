#include "bench/tpcc/aup_backend.h"

#include <sys/un.h>

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "bench/tpcc/aup_answers.h"
#include "bench/tpcc/aup_dump.h"
#include "bench/tpcc/aup_json.h"
#include "bench/tpcc/aup_pipeline.h"
#include "bench/server/client.h"
#include "bench/server/server_process.h"
#include "bench/server/temp_dir.h"

namespace aup::tpcc {

namespace {

namespace server = aup::bench::server;

// sockaddr_un::sun_path holds 108 bytes with the terminating NUL; a data
// directory deeper than that gets its socket in a short temporary one.
constexpr size_t kMaxSocketPathBytes = sizeof(sockaddr_un::sun_path) - 1;
// Load requests in flight on the one load connection. Group commit takes
// whatever has arrived, so a few dozen keep the server busy while it
// commits; the bound keeps them far below the server's --max-pending
// (1024 per connection) and, at kMaxBatchRows rows a request (about
// 1.4 MB), what is in flight to about 45 MB.
constexpr uint64_t kLoadWindow = 32;
// Rows loaded between two progress calls (W=1 has about 600,000).
constexpr uint64_t kProgressRows = 50'000;

// A connection to the server; the client's errors (no server listening)
// rethrown naming aup.
server::Connection connect(const std::string& socket) {
  try {
    return server::Connection(socket);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("aup: {}", e.what()));
  }
}

// Reads exactly one answer line into `out` (its capacity is reused). A
// connection with one request in flight has one answer coming; more lines
// mean the server answered something not asked.
void receive_one(server::Connection& c, std::string& out) {
  size_t lines = 0;
  c.receive([&](std::string_view line) {
    if (lines++ == 0) out.assign(line);
  });
  if (lines != 1) throw std::runtime_error(fmt::format("aup: {} answers to one request, the first: {}", lines, out));
}

// Sends one request line (newline included) and parses its answer into
// `json`; the connection's errors (a closed connection, no answer for
// 30 s) are rethrown naming aup.
void ask(server::Connection& c, std::string_view request, std::string& answer, JsonLine& json,
         std::string_view what) {
  try {
    c.send(request);
    receive_one(c, answer);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("aup: {}: {}", what, e.what()));
  }
  json.parse(answer, what);
}

// One terminal: its own connection, one transaction in flight. Buffers are
// kept between transactions, so a warm terminal allocates only the
// result's values.
class AupTerminal final : public Terminal {
 public:
  explicit AupTerminal(const std::string& socket) : conn_(connect(socket)) {}

  TxResult execute(const Transaction& tx) override {
    uint64_t id = next_id_++;
    request_.clear();
    append_request_json(request_, tx, id);
    request_ += '\n';
    ask(conn_, request_, answer_, json_, name_of(kind_of(tx)));
    return tx_result(tx, id, json_);
  }

 private:
  server::Connection conn_;
  uint64_t next_id_ = 1;
  std::string request_;
  std::string answer_;
  JsonLine json_;
};

// One terminal on a connection that others share (aup_pipeline.h): one
// transaction in flight of its own, among the others' on the connection.
class SharedTerminal final : public Terminal {
 public:
  explicit SharedTerminal(std::shared_ptr<SharedConnection> conn) : conn_(std::move(conn)) {}

  TxResult execute(const Transaction& tx) override {
    uint64_t id = conn_->next_id();
    request_.clear();
    append_request_json(request_, tx, id);
    request_ += '\n';
    std::string_view what = name_of(kind_of(tx));
    conn_->ask(waiter_, id, request_, what);
    json_.parse(waiter_.answer, what);
    return tx_result(tx, id, json_);
  }

 private:
  std::shared_ptr<SharedConnection> conn_;
  std::string request_;
  Waiter waiter_;
  JsonLine json_;
};

// The load events on one connection, at most kLoadWindow unanswered; every
// answer must be ok and in order.
class LoadPipeline {
 public:
  LoadPipeline(const std::string& socket, const std::function<void(uint64_t)>& progress)
      : conn_(connect(socket)), progress_(progress) {}

  // Sends one request line (without its newline) with the next id.
  void send(const std::string& line) {
    while (sent_ - answered_ >= kLoadWindow) take_answers();
    out_.assign(line);
    out_ += '\n';
    try {
      conn_.send(out_);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(fmt::format("aup: loading: {}", e.what()));
    }
    ++sent_;
  }

  // Waits for every answer.
  void finish() {
    while (answered_ < sent_) take_answers();
    if (progress_) progress_(rows_);
  }

 private:
  void take_answers() {
    lines_.clear();
    try {
      conn_.receive([&](std::string_view line) { lines_.emplace_back(line); });
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(fmt::format("aup: loading: {}", e.what()));
    }
    for (const std::string& line : lines_) {
      if (answered_ == sent_) throw std::runtime_error(fmt::format("aup: an answer to no load request: {}", line));
      json_.parse(line, "a load event");
      rows_ += static_cast<uint64_t>(json_.whole(ok_result(json_, ++answered_), "rows"));
    }
    if (progress_ && rows_ - rows_reported_ >= kProgressRows) {
      progress_(rows_);
      rows_reported_ = rows_;
    }
  }

  server::Connection conn_;
  const std::function<void(uint64_t)>& progress_;  // may be empty
  uint64_t sent_ = 0;      // requests sent; their ids are 1..sent_
  uint64_t answered_ = 0;  // answers read, in order
  uint64_t rows_ = 0;
  uint64_t rows_reported_ = 0;
  std::string out_;
  std::vector<std::string> lines_;  // answers read by one receive (at most kLoadWindow)
  JsonLine json_;
};

void check_config(const BackendConfig& c) {
  if (c.kind != "aup") throw std::runtime_error("the aup backend was asked for kind `" + c.kind + "`");
  if (c.aup.empty()) throw std::runtime_error("the aup backend needs the aup executable (none was given)");
  if (c.module.empty()) throw std::runtime_error("the aup backend needs the module tpcc.aup (none was given)");
  if (c.dir.empty()) throw std::runtime_error("the aup backend needs a data directory (none was given)");
}

void check_warehouses(int64_t warehouses) {
  if (warehouses < 1 || warehouses > kMaxWarehouses) {
    throw std::runtime_error(fmt::format("aup: {} warehouses, the module takes 1 to {}", warehouses, kMaxWarehouses));
  }
}

// The server is started when first needed (load, terminal, a query,
// figures) and again when needed after dump() or close() stopped it; its
// socket is config.dir/aup.sock, or in a short temporary directory when that
// path is too long for sun_path. A backend destroyed without close() kills
// its server (ServerProcess's destructor). Terminals hold only their
// connection: they may outlive the backend, but answer nothing once the
// server is gone.
class AupBackend final : public Backend {
 public:
  explicit AupBackend(const BackendConfig& config) : config_(config), store_dir_(config.dir + "/store") {
    check_config(config);
    check_connections(config);
    std::filesystem::create_directories(config.dir);
    device_ = std::make_unique<bench::BlockDevice>(config.dir);
    socket_ = config.dir + "/aup.sock";
    if (socket_.size() > kMaxSocketPathBytes) {
      socket_dir_ = std::make_unique<server::TempDir>("/tmp", "aup-tpcc");
      socket_ = socket_dir_->path() + "/aup.sock";
    }
  }

  std::string name() const override { return "aup"; }

  void load(const LoadConfig& config, const std::function<void(uint64_t rows)>& progress) override {
    check_warehouses(config.warehouses);
    if (config.batch_rows < 1 || config.batch_rows > kMaxBatchRows) {
      throw std::runtime_error(fmt::format("aup: a load batch of {} rows (1 to {})", config.batch_rows, kMaxBatchRows));
    }
    running();
    LoadPipeline pipeline(socket_, progress);
    LoadRequestWriter writer([&](const std::string& line) { pipeline.send(line); }, 1);
    generate_load(config, writer);
    // Each answer came after its batch's fdatasync: ok means durable.
    pipeline.finish();
  }

  // A connection of its own unless config.connections asks for fewer than
  // the terminals; then terminal i shares connection i % connections, made
  // by the first terminal that needs it.
  std::unique_ptr<Terminal> terminal(uint32_t index) override {
    running();
    uint32_t n = config_.connections;
    if (n == 0 || n == config_.terminals) return std::make_unique<AupTerminal>(socket_);
    std::lock_guard<std::mutex> lock(mu_);
    if (shared_.size() != n) shared_.resize(n);
    uint32_t k = index % n;
    std::shared_ptr<SharedConnection>& c = shared_[k];
    if (!c) c = std::make_shared<SharedConnection>(connect(socket_), (config_.terminals - k + n - 1) / n);
    return std::make_unique<SharedTerminal>(c);
  }

  std::vector<std::string> consistency(int64_t warehouses) override {
    check_warehouses(warehouses);
    running();
    server::Connection c = connect(socket_);
    std::string request, answer;
    JsonLine json;
    std::vector<std::string> problems;
    for (int64_t w = 1; w <= warehouses; ++w) {
      request = fmt::format("{{\"query\":\"consistency\",\"args\":{{\"w\":{0}}},\"id\":{0}}}\n", w);
      ask(c, request, answer, json, "consistency");
      std::vector<std::string> found = consistency_problems(json, ok_result(json, static_cast<uint64_t>(w)), w);
      problems.insert(problems.end(), found.begin(), found.end());
    }
    return problems;
  }

  TableCounts counts() override {
    running();
    server::Connection c = connect(socket_);
    std::string answer;
    JsonLine json;
    ask(c, "{\"query\":\"sizes\",\"id\":1}\n", answer, json, "sizes");
    return table_counts(json, ok_result(json, 1));
  }

  ProcessFigures figures() override { return process_figures(running().pid(), *device_); }

  // Stops the server (so every row it answered is in the store and nothing
  // writes to it) and reads the rows back; a later call that needs the
  // server starts it again.
  State dump() override {
    close();
    return dump_store(config_.aup, store_dir_);
  }

  void close() override {
    std::unique_ptr<server::ServerProcess> s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      s = std::move(server_);
      shared_.clear();  // the next terminals connect to the next server
    }
    if (s) s->stop();  // a server that does not stop cleanly is killed as `s` goes
  }

 private:
  // The running server, started if there is none.
  server::ServerProcess& running() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!server_) {
      server::ServerConfig c;
      c.aup = config_.aup;
      c.module = config_.module;
      c.socket = socket_;
      c.data_dir = store_dir_;
      c.io_threads = config_.io_threads;
      c.cpus = config_.server_cpus;
      if (!config_.engine.empty()) c.extra_args = {"--engine", config_.engine};
      server_ = std::make_unique<server::ServerProcess>(c);
    }
    return *server_;
  }

  BackendConfig config_;
  std::string store_dir_;
  std::unique_ptr<bench::BlockDevice> device_;  // made once the directory is
  std::string socket_;
  std::unique_ptr<server::TempDir> socket_dir_;  // outlives the server (declared before it)
  // terminal() may be called from the terminals' threads; the rest is
  // called by one thread once they are gone (backend.h).
  std::mutex mu_;
  std::unique_ptr<server::ServerProcess> server_;  // null: not running
  // The shared connections to it, when config_.connections asks for them;
  // each also held by its terminals.
  std::vector<std::shared_ptr<SharedConnection>> shared_;
};

}  // namespace

std::unique_ptr<Backend> make_aup_backend(const BackendConfig& config) { return std::make_unique<AupBackend>(config); }

}  // namespace aup::tpcc

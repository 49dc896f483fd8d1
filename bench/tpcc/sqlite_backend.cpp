// The SQLite backend: the three configurations (connection settings, and
// who runs the write transactions), the terminals, load and close. The SQL
// itself is in sqlite_tpcc.cpp, the retry on SQLITE_BUSY in sqlite_run.cpp,
// the grouped writer in sqlite_writer.cpp.
#include "bench/tpcc/sqlite_backend.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "bench/tpcc/sqlite_db.h"
#include "bench/tpcc/sqlite_run.h"
#include "bench/tpcc/sqlite_tpcc.h"
#include "bench/tpcc/sqlite_writer.h"

namespace aup::tpcc {
namespace {

// ---- the configurations -------------------------------------------------------------

struct Settings {
  bool tuned = false;    // mmap, a large cache, temp_store in memory, rarer checkpoints, 1 KiB pages on disk
  bool grouped = false;  // write transactions through one writer thread (sqlite_writer.h)
  bool small_pages = false;  // tuned on a block device: 1 KiB pages, a quarter of the bytes per row written
};

Settings settings_of(const BackendConfig& config) {
  Settings s;
  if (config.kind == "sqlite-tuned" || config.kind == "sqlite-grouped") s.tuned = true;
  if (config.kind == "sqlite-grouped") s.grouped = true;
  if (!s.tuned && config.kind != "sqlite") {
    throw std::runtime_error("unknown SQLite backend `" + config.kind + "` (sqlite, sqlite-tuned, sqlite-grouped)");
  }
  s.small_pages = s.tuned && config.on_disk;
  return s;
}

// sqlite-tuned's figures. The mmap covers the whole W=4 database (57 MB
// after load) many times over, so reads are memory loads instead of
// read() calls; the cache is per connection.
constexpr int64_t kTunedMmapBytes = int64_t{1} << 30;         // 1 GiB
constexpr int64_t kTunedCacheKiB = 64 * 1024;                 // 64 MiB
constexpr int64_t kTunedCheckpointBytes = 40 * 1024 * 1024;   // a WAL checkpoint every 40 MiB of frames
constexpr int64_t kSmallPageBytes = 1024;
// SQLite's default page size (SQLITE_DEFAULT_PAGE_SIZE in Debian's build).
constexpr int64_t kDefaultPageBytes = 4096;

// Runs a pragma that answers with the mode it set, and checks the answer.
void set_mode(Db& db, const std::string& pragma, const std::string& expected) {
  std::string got = db.query_text(pragma);
  if (got != expected) {
    throw std::runtime_error(db.label() + ": " + pragma + " answered `" + got + "`, not `" + expected + "`");
  }
}

// The per-connection settings; journal_mode is the database's (kept in
// its file), set once by load().
void configure(Db& db, const Settings& s) {
  db.exec("PRAGMA busy_timeout = " + std::to_string(kBusyTimeoutMs));
  // FULL: in WAL mode the WAL is fsynced at every COMMIT, so an answer is
  // durable when it is given, as aup's are.
  db.exec("PRAGMA synchronous = FULL");
  if (!s.tuned) return;
  db.exec("PRAGMA mmap_size = " + std::to_string(kTunedMmapBytes));
  db.exec("PRAGMA cache_size = -" + std::to_string(kTunedCacheKiB));  // negative: KiB, not pages
  db.exec("PRAGMA temp_store = MEMORY");
  const int64_t page_bytes = db.query_int("PRAGMA page_size");
  db.exec("PRAGMA wal_autocheckpoint = " + std::to_string(kTunedCheckpointBytes / page_bytes));
}

// ---- files ----------------------------------------------------------------------------------

// fsync of a file or a directory (the directory makes a new file's name durable).
void sync_path(const std::string& label, const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(label + ": cannot open " + path + " to sync it: " + std::strerror(errno));
  int rc = ::fsync(fd);
  int error = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error(label + ": cannot sync " + path + ": " + std::strerror(error));
}

// Copies the WAL into the database file and empties it; throws when a
// reader or writer of another connection keeps it from finishing.
void checkpoint(Db& db) {
  Statement s = db.prepare("PRAGMA wal_checkpoint(TRUNCATE)");
  if (s.step() && s.integer(0) != 0) {
    throw std::runtime_error(db.label() + ": the WAL checkpoint could not finish: another connection is busy");
  }
}

// The page size is fixed when the file is made, and a loaded database may
// come from another configuration (the matrix loads once and copies the
// files): VACUUM rebuilds it with this configuration's page size, which
// WAL mode forbids, hence the round trip through DELETE.
void ensure_page_size(Db& db, int64_t page_bytes) {
  if (db.query_int("PRAGMA page_size") == page_bytes) return;
  set_mode(db, "PRAGMA journal_mode = DELETE", "delete");
  db.exec("PRAGMA page_size = " + std::to_string(page_bytes));
  db.exec("VACUUM");
  set_mode(db, "PRAGMA journal_mode = WAL", "wal");
  if (db.query_int("PRAGMA page_size") != page_bytes) {
    throw std::runtime_error(db.label() + ": the page size could not be changed to " + std::to_string(page_bytes));
  }
}

std::unique_ptr<Db> open_connection(const std::string& path, const std::string& label, const Settings& settings) {
  auto db = std::make_unique<Db>(path, label);
  configure(*db, settings);
  return db;
}

// ---- terminals -----------------------------------------------------------------------

// A connection of its own for reads (and, unless grouped, for writes).
// What must outlive it: the backend, whose writer and terminal count it
// uses.
class SqliteTerminal final : public Terminal {
 public:
  SqliteTerminal(std::unique_ptr<Db> db, GroupWriter* writer, std::atomic<uint32_t>& open_terminals)
      : db_(std::move(db)), writer_(writer), open_terminals_(open_terminals) {}
  ~SqliteTerminal() override {
    db_.reset();  // closes the connection
    open_terminals_.fetch_sub(1);
  }
  SqliteTerminal(const SqliteTerminal&) = delete;
  SqliteTerminal& operator=(const SqliteTerminal&) = delete;

  // Reads run here even when grouped: a plain BEGIN ... COMMIT on the
  // terminal's connection gives Order-Status and Stock-Level one snapshot
  // for their statements, and in WAL mode a reader neither waits for the
  // writer nor holds it up, so handing reads to the writer would only
  // queue them behind fsyncs.
  TxResult execute(const Transaction& tx) override {
    if (writer_ && !is_read_only(tx)) return writer_->submit(tx);
    return run_alone(*db_, tx);
  }

 private:
  std::unique_ptr<Db> db_;
  GroupWriter* writer_;  // null unless sqlite-grouped
  std::atomic<uint32_t>& open_terminals_;
};

// ---- the backend -----------------------------------------------------------------------

// What must outlive it: nothing; its terminals must not outlive it.
class SqliteBackend final : public Backend {
 public:
  explicit SqliteBackend(const BackendConfig& config);
  ~SqliteBackend() override;
  SqliteBackend(const SqliteBackend&) = delete;
  SqliteBackend& operator=(const SqliteBackend&) = delete;

  std::string name() const override { return config_.kind; }
  void load(const LoadConfig& config, const std::function<void(uint64_t rows)>& progress) override;
  std::unique_ptr<Terminal> terminal(uint32_t index) override;
  std::vector<std::string> consistency(int64_t warehouses) override { return check_consistency(admin(), warehouses); }
  State dump() override { return read_state(admin()); }
  TableCounts counts() override { return count_rows(admin()); }
  ProcessFigures figures() override { return process_figures(0, *device_); }
  void close() override;

 private:
  Db& admin();
  [[noreturn]] void refuse(const std::string& sentence) const { throw std::runtime_error(name() + ": " + sentence); }
  void make_durable();

  BackendConfig config_;
  Settings settings_;
  std::string path_;
  std::unique_ptr<bench::BlockDevice> device_;  // made once the directory is
  std::unique_ptr<Db> admin_;            // load, consistency, dump, counts, the final checkpoint
  std::unique_ptr<GroupWriter> writer_;  // sqlite-grouped, from the first terminal on
  std::atomic<uint32_t> open_terminals_{0};
  bool closed_ = false;
};

SqliteBackend::SqliteBackend(const BackendConfig& config)
    : config_(config), settings_(settings_of(config)), path_((std::filesystem::path(config.dir) / "tpcc.db").string()) {
  std::error_code ec;
  std::filesystem::create_directories(config_.dir, ec);
  if (ec) refuse("cannot make the directory " + config_.dir + ": " + ec.message());
  device_ = std::make_unique<bench::BlockDevice>(config_.dir);
  admin_ = open_connection(path_, name(), settings_);
  if (has_schema(*admin_)) {
    ensure_page_size(*admin_, settings_.small_pages ? kSmallPageBytes : kDefaultPageBytes);
    set_mode(*admin_, "PRAGMA journal_mode = WAL", "wal");
    configure(*admin_, settings_);  // the checkpoint interval follows the page size
  }
}

SqliteBackend::~SqliteBackend() {
  // Not closed: abandon. The writer must still be joined; the
  // connections close quietly in their destructors.
  writer_.reset();
}

Db& SqliteBackend::admin() {
  if (closed_) refuse("the backend is closed");
  return *admin_;
}

// Loading is redone, never recovered, when interrupted: no journal and no
// fsync until the end, which then makes everything durable at once.
void SqliteBackend::load(const LoadConfig& config, const std::function<void(uint64_t rows)>& progress) {
  Db& db = admin();
  if (has_schema(db)) refuse(path_ + " already holds a database; load needs an empty directory");
  // Before the first table: the page size is fixed when the file is made.
  if (settings_.small_pages) db.exec("PRAGMA page_size = " + std::to_string(kSmallPageBytes));
  set_mode(db, "PRAGMA journal_mode = OFF", "off");
  db.exec("PRAGMA synchronous = OFF");
  create_schema(db);
  insert_population(db, config, progress);
  set_mode(db, "PRAGMA journal_mode = WAL", "wal");
  configure(db, settings_);
  make_durable();
}

void SqliteBackend::make_durable() {
  checkpoint(*admin_);
  sync_path(name(), path_);
  sync_path(name(), config_.dir);
}

std::unique_ptr<Terminal> SqliteBackend::terminal(uint32_t index) {
  if (closed_) refuse("the backend is closed");
  if (index >= kMaxTerminals) {
    refuse("terminal " + std::to_string(index) + " is beyond the limit of " + std::to_string(kMaxTerminals));
  }
  if (settings_.grouped && !writer_) {
    writer_ = std::make_unique<GroupWriter>(open_connection(path_, name(), settings_));
  }
  auto terminal =
      std::make_unique<SqliteTerminal>(open_connection(path_, name(), settings_), writer_.get(), open_terminals_);
  open_terminals_.fetch_add(1);
  return terminal;
}

void SqliteBackend::close() {
  if (closed_) return;
  const uint32_t open = open_terminals_.load();
  if (open > 0) refuse("cannot close while " + std::to_string(open) + " terminals are open");
  if (writer_) writer_->stop();
  checkpoint(*admin_);
  admin_->close();
  closed_ = true;
}

}  // namespace

std::unique_ptr<Backend> make_sqlite_backend(const BackendConfig& config) {
  return std::make_unique<SqliteBackend>(config);
}

}  // namespace aup::tpcc

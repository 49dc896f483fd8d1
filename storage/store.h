// A store: a directory holding the schema it was written with, an image per
// table (and one for the vars), and the log (docs/store-format.md).
//
//   DIR/LOCK            flock'd while a process has the store open
//   DIR/READERS, LIVE   for readers of the store while it is served (storage/live.h)
//   DIR/schema          tables and vars (schema_file.h)
//   DIR/image-<table>   every row of a table as of a save number (image_format.h)
//   DIR/image.vars      every var as of a save number
//   DIR/log-N           log segments (log_format.h)
//
// The state is each image plus every log entry after the save number that
// image covers. Opening reads it through recovery (storage/recovery.h: the
// images, the log replayed), cuts a torn tail, and migrates when the module
// only adds (tables, vars, defaulted fields): everything is rewritten in
// the new layout before the schema file changes.
//
// The store's own tables (storage/key_tables.h: the idempotency keys)
// follow the module's in a store that keeps keys: the store's schema is
// the module's plus them. A store that has none gains them when an open
// asks (StoreOptions::keep_keys): their two images, empty, then the schema
// file; once the schema file names them every open keeps them.
//
// Threads: everything here runs on the owner thread except the image
// writing of a checkpoint, which runs on its own thread from copy-on-write
// snapshots of the tables (BTree::share): the owner keeps committing.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "storage/cut.h"
#include "storage/io.h"
#include "storage/latency.h"
#include "storage/live.h"
#include "storage/log.h"
#include "storage/records.h"
#include "storage/schema.h"
#include "storage/status.h"
#include "storage/terms.h"

namespace aup::storage {

class Recovery;
struct SchemaDiff;

struct StoreOptions {
  uint64_t segment_bytes = log_format::kDefaultSegmentBytes;
  // Checkpoint policy (docs/store-format.md): a table whose log records since its
  // image exceed its image's bytes (at least image_min_bytes) gets a new
  // image; when the whole live log exceeds all images' bytes (at least
  // log_min_bytes), the table holding the oldest needed entry does.
  uint64_t image_min_bytes = uint64_t{1} << 20;
  uint64_t log_min_bytes = uint64_t{64} << 20;
  bool background = true;  // false: checkpoints run in tick() itself (fault tests)
  // Keep idempotency keys: a store without the key tables gains them.
  bool keep_keys = false;
  // A store not served is read (`aup replay`, `aup backup`) under a shared
  // lock on its LOCK file; an open waits this long for such readers to
  // finish before it refuses. A node that restarts itself (a cut, a copy,
  // a step down) would otherwise die of a reader's moment.
  uint32_t readers_wait_ms = 10000;
};

struct StoreOpenReport {
  bool created = false;
  bool copy_installed = false;      // a copy received from a primary replaced the store (storage/copy.h)
  uint64_t cut_after = UINT64_MAX;  // a cut of the log back to this save was finished (storage/cut.h)
  std::vector<std::string> migrated;  // the module's additions applied
  bool keeps_keys = false;  // the store has its key tables (StoreOptions::keep_keys, or kept before)
  bool keys_added = false;  // and gained them in this open
  uint64_t images = 0;
  uint64_t image_rows = 0;
  uint64_t entries = 0;     // log entries read
  uint64_t last_seq = 0;
  bool torn = false;
  std::string torn_where;
  // DIR/NAME.new files a write that did not finish left (a checkpoint's
  // image, the schema file, ...), removed by this open (storage/file_io.h,
  // is_leftover): the paths.
  std::vector<std::string> leftovers_removed;
};

struct StoreStats {
  uint64_t commits = 0;
  uint64_t log_bytes = 0;      // entry bytes appended
  uint64_t checkpoints = 0;    // finished
  uint64_t images_written = 0;
  uint64_t image_bytes = 0;
  uint64_t checkpoint_failures = 0;
  // Each commit() from its start to its return (encoding, write and
  // fdatasync: what the batch's clients wait for): the one timing of a
  // commit, which the runtime's figures read too.
  LatencyHistogram commit;
};

// Called during a long open: entries replayed, rows loaded so far.
using OpenProgress = std::function<void(uint64_t entries, uint64_t rows)>;

class Store {
 public:
  // Opens (or creates) the store in `dir` for a module whose schema is
  // `schema` (the module's tables alone), filling `tables` (empty, in the
  // module's layout, the key tables after its own: a vm::State's). Refuses
  // a locked, damaged or incompatible store, saying why.
  static Status open(Io& io, const std::string& dir, const Schema& schema, StoreOptions o, Tables& tables,
                     std::unique_ptr<Store>& out, StoreOpenReport& report, const OpenProgress& progress);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Writes one batch as one log entry and syncs it. Returns when the entry
  // is durable. A refusal says why, and `fate` what became of the batch:
  // certainly not written, or perhaps written (a failed sync whose entry
  // could not be withdrawn either). After a failed write or sync the store
  // is unavailable until reopened; a refusal that changed nothing (no space
  // for a new segment) leaves it available.
  Status commit(BatchEncoder& batch, Fate& fate);
  // A replica's (docs/replication.md): entries its primary wrote, with the
  // primary's terms and save numbers, which must follow one another from
  // the next after this store's last save, in terms no older than its
  // own. Written one after another and synced once (a failure leaves the
  // store unavailable, as a failed commit does), then applied to the
  // tables, whose indexes follow each row when they say so
  // (Tables::follows_rows). A payload that does not apply is refused after
  // it is durable: the store is then unavailable, and the next open
  // refuses the same entry.
  struct Copy {
    uint32_t term = 0;
    uint64_t seq = 0;
    std::span<const uint8_t> payload;
  };
  Status append_copies(std::span<const Copy> copies);
  Status append_copy(uint32_t term, uint64_t seq, std::span<const uint8_t> payload) {
    Copy c{term, seq, payload};
    return append_copies({&c, 1});
  }
  // A node made primary (`aup promote`, or elected): term `term`, later
  // than the last, begins at the next save, in the term history first
  // (storage/terms.h), then as an entry with no changes, so that the log
  // itself says the term began before any event of it is answered.
  Status begin_term(uint32_t term);
  // The term the next entry is written in (the newest of the history; 0
  // on a store never in a cluster), and the whole history.
  uint32_t term() const { return terms_.last_term(); }
  const TermHistory& terms() const { return terms_; }
  // A replica that holds entries its primary does not (storage/cut.h):
  // waits for a running checkpoint, then, unless an image covers a save
  // past `save` (refused, ERANGE: only a copy of the primary's store can
  // replace it), keeps every entry after `save` in a side file and marks
  // the log to be cut there at the next open. The store then takes nothing
  // more: it is to be reopened.
  Status cut_after(uint64_t save, CutPrepared& out);
  // Log entries after save `seq` are kept (not released by a checkpoint)
  // while a replica still needs them; UINT64_MAX: none does.
  void retain_after(uint64_t seq) { retain_after_ = seq; }
  bool unavailable() const { return !unavailable_.empty(); }
  // Why every later event is refused (before it runs: not written).
  const std::string& unavailable_reason() const { return unavailable_; }
  uint64_t last_seq() const { return last_seq_; }
  // The greatest save an image covers: the log cannot be cut back past it.
  uint64_t images_cover() const;

  // Between batches, on the owner thread: takes in a finished checkpoint
  // and starts one when the policy asks.
  void tick();
  // Waits for a running checkpoint to finish and takes it in.
  void drain();
  // Images of every table and the vars, now, on this thread.
  Status checkpoint_all();

  const StoreStats& stats() const { return stats_; }
  // The last commit()'s time, as stats().commit counted it.
  uint64_t last_commit_ns() const { return last_commit_ns_; }
  uint64_t live_log_bytes() const { return log_->live_bytes(); }
  // The bytes of the images the state is read from now (every table's
  // and the vars').
  uint64_t image_bytes() const {
    uint64_t n = 0;
    for (uint64_t b : image_bytes_) n += b;
    return n;
  }
  const std::string& dir() const { return dir_; }
  // The store's schema: the module's, and the key tables when it keeps
  // them. What a batch is encoded against.
  const Schema& schema() const { return schema_; }

 private:
  Store(Io& io, std::string dir, const Schema& schema, StoreOptions o, Tables& tables);
  // open's steps around recovery (storage/recovery.h).
  Status lock_directory();
  Status finish_work_under_way(StoreOpenReport& report);
  Status read_or_create_schema(Recovery& recovery, Schema& stored, bool& created);
  Status refuse_mismatch(const Schema& stored) const;
  void take_recovered(Recovery& recovery);
  Status write_first_images(const Schema& stored, StoreOpenReport& report);
  Status add_key_images();
  Status checkpoint_now(std::vector<uint32_t> tables_to_write);
  struct Job;
  void start_checkpoint(std::vector<uint32_t> tables_to_write);
  Status finish_checkpoint();
  void release_covered();
  void release_covered_now();
  Status fail_commit(const Status& failed, Fate& fate);
  Status write_batch(BatchEncoder& batch, Fate& fate);
  void took(uint64_t seq, size_t payload, bool last = true);
  Status write_copies(std::span<const Copy> copies);
  Status start_term(uint32_t term, uint64_t seq);
  static void report_background(const Status& st);

  Io& io_;
  std::string dir_;
  Schema schema_;  // the module's at first; the store's once its schema file is read
  StoreOptions o_;
  Tables& tables_;
  int lock_fd_ = -1;
  ReadersGate readers_;
  bool release_waiting_ = false;  // release_covered() found a reader: tick() tries again
  LiveMarkWriter live_;
  std::unique_ptr<Log> log_;
  uint64_t last_seq_ = 0;
  std::string unavailable_;
  // Per table (and, at index tables, the vars): the save number its image
  // covers, its image's bytes, and log bytes written for it since.
  std::vector<uint64_t> image_seq_;
  std::vector<uint64_t> image_bytes_;
  std::vector<uint64_t> since_image_;
  std::vector<uint64_t> entry_bytes_;  // scratch for BatchEncoder::encode
  std::unique_ptr<Job> job_;
  TermHistory terms_;  // as DIR/terms holds it
  uint64_t retry_after_ = 0;  // after a failed checkpoint: not before this save number
  uint64_t retain_after_ = UINT64_MAX;  // retain_after()
  std::unique_ptr<SchemaMap> self_map_;  // append_copy's: the store's schema onto its own tables
  StoreStats stats_;
  uint64_t last_commit_ns_ = 0;
};

}  // namespace aup::storage

// Reading a store's state back (docs/store-format.md, "Opening a store"):
// the schema file it was written with, an image per table and one for the
// vars, then the log's entries after the save number each image covers.
// This is the one reader of a store. Store::open recovers through it and
// adds only what a writable open needs (the lock, creating a store,
// deciding a migration, the log's writable mode, which cuts a torn tail,
// and the first images); `aup replay` (runtime/replay.h) prints what it is
// told. The reader itself writes nothing.
//
// What it finds it tells a RecoveryReporter as it goes, the way a log
// reader tells its reporter of corruption: each image read, a damaged
// image, images that do not reach back to the log's first entry, each log
// entry, a torn tail, damage in the schema file or the log (each with the
// file and the byte), the log's segments. An operating error (a read that fails, its
// Status carrying the errno) is not damage: it is never reported, it ends
// the read and comes back as the step's Status.
//
// Files named NAME.new are never read: each is a durable replacement not
// finished (storage/file_io.h), renamed into place only once whole and
// synced, so one left over was never part of the store. Store::open
// removes them after taking the lock (docs/store-format.md, "Opening a
// store", step 1); a read-only reader leaves them.
//
// The steps run in order, and the caller may act between them: Store::open
// creates a missing schema and refuses a mismatched module after step 1,
// and `aup replay --at` refuses an image newer than the save it asks for
// after step 2.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "storage/io.h"
#include "storage/log.h"
#include "storage/records.h"
#include "storage/schema.h"
#include "storage/status.h"
#include "storage/terms.h"

namespace aup::storage {

struct RecoveryOptions {
  // Read on past damage (aup replay): a damaged image is reported and the
  // log is still read and verified whole, but not applied to that image's
  // table (its records would meet rows that are not there and blame the
  // log for the image's damage); entries found missing are reported once,
  // and then none of the log is applied. Otherwise (Store::open) the first
  // damage refuses. Damage in the schema file or the log ends the read
  // either way.
  bool read_past_damage = false;
  // No entry after this save number is applied (aup replay --at SEQ): each
  // table ends as of it, or as of its image when the image covers a later
  // save.
  uint64_t apply_through = UINT64_MAX;
  // Each entry's changes counted for the reporter (aup replay --entries).
  bool summarize_entries = false;
  // How the log is opened: writable for Store::open (a torn tail is cut
  // and the log is positioned for appending), read_only for replay.
  Log::Options log;
};

// Told what recovery finds. A table number t equal to the number of tables
// means the vars.
class RecoveryReporter {
 public:
  virtual ~RecoveryReporter() = default;
  // Image t, read whole: it covers save `seq`, is `bytes` long and held
  // `rows` rows (the vars' image: vars).
  virtual void image_read(uint32_t /*t*/, uint64_t /*seq*/, uint64_t /*bytes*/, uint64_t /*rows*/) {}
  // Image t is damaged: `why` names the file and, wherever one applies,
  // the byte. Reading past damage, its table is left without the log.
  virtual void image_damaged(uint32_t /*t*/, const Status& /*why*/) {}
  // Damage in the schema file or the log (the read ends there): `why`
  // names the file and the byte.
  virtual void damage(const Status& /*why*/) {}
  // Image t covers only up to save `covered`, but the log's oldest entry
  // follows save `first_prev_seq`: the entries between are lost.
  virtual void missing_entries(uint32_t /*t*/, uint64_t /*first_prev_seq*/, uint64_t /*covered*/) {}
  // Each log entry in order, before it is applied; `changes` is its
  // summary with RecoveryOptions::summarize_entries, else null.
  virtual void entry(const LogEntry& /*e*/, const PayloadSummary* /*changes*/) {}
  // The log ends in a torn write (`where`: "log-3 at byte 4096: digest
  // mismatch"); a writable open has cut it.
  virtual void torn_tail(const std::string& /*where*/) {}
  // The whole log was read: what it holds, segment by segment.
  virtual void log_read(const LogOpenReport& /*report*/, const std::vector<Log::Segment>& /*chain*/) {}
};

class Recovery {
 public:
  Recovery(Io& io, std::string dir, RecoveryOptions o, RecoveryReporter& reporter)
      : io_(io), dir_(std::move(dir)), o_(o), reporter_(reporter) {}

  // 1. The schema the store was written with; err == ENOENT when there is
  //    no schema file.
  Status read_schema(Schema& stored);
  // 2. Every image into `tables` (empty, in `layout`'s layout: a module's,
  //    to which the images' and the log's columns are matched by name, or
  //    `stored` itself). A missing image is no image: it covers save 0. A
  //    table of the layout that `stored` lacks is new: empty, no image read.
  //    `stored`, `layout` and `tables` must outlive read_log().
  Status load_images(const Schema& stored, const Schema& layout, Tables& tables);
  // Between 2 and 3, reading a served store (storage/live.h): the log is
  //    read up to byte `end` of segment `segment` and no further.
  void cut_log_at(uint64_t segment, uint64_t end) {
    o_.log.cut_segment = segment;
    o_.log.cut_end = end;
  }
  // 3. The log: its entries after the images applied, up to
  //    RecoveryOptions::apply_through. Refuses when images do not reach
  //    back to its first entry (unless reading past damage). The term
  //    history (storage/terms.h) is read first, and every entry's term
  //    must be the one it gives the entry's save: a newer term than it
  //    knows begins at that entry (its file was written before the entry,
  //    so this is only a history copied from elsewhere, or none: a store
  //    from before terms), an older or another one is damage.
  Status read_log();

  // After load_images, per table and then the vars: the save each image
  // covers (0: none, or damaged) and its bytes (0: none).
  const std::vector<uint64_t>& image_seq() const { return image_seq_; }
  const std::vector<uint64_t>& image_bytes() const { return image_bytes_; }
  // After read_log: the log bytes applied to each since its image (the
  // checkpoint policy's measure, storage/store.h), and the newest save (the
  // log's last entry or the newest image).
  const std::vector<uint64_t>& applied_bytes() const { return applied_bytes_; }
  uint64_t last_seq() const { return last_seq_; }
  const LogOpenReport& log_report() const { return log_report_; }
  // The opened log (after read_log), for a writable open to append to.
  std::unique_ptr<Log> take_log() { return std::move(log_); }
  // After read_log: the term history as the log bears it out, without
  // terms that begin past the last save (begun, and a crash came before
  // their first entry); and whether that differs from DIR/terms (a
  // writable open writes it).
  const TermHistory& terms() const { return terms_; }
  bool terms_changed() const { return terms_changed_; }

 private:
  Status took_image(uint32_t t, const Status& st, uint64_t seq, uint64_t bytes, uint64_t rows);
  Status load_vars_image(const Schema& layout, Tables& tables);
  Status visit(const LogEntry& e);
  Status check_reaches_back(uint64_t first_prev_seq);
  Status refuse_entry(const LogEntry& e, const Status& why);
  Status check_term(const LogEntry& e);

  Io& io_;
  std::string dir_;
  RecoveryOptions o_;
  RecoveryReporter& reporter_;
  const Schema* stored_ = nullptr;
  const Schema* layout_ = nullptr;
  Tables* tables_ = nullptr;
  SchemaMap map_;
  std::vector<uint64_t> image_seq_;
  std::vector<uint64_t> image_bytes_;
  std::vector<bool> damaged_;
  std::vector<bool> fresh_;  // per layout table: the stored schema lacks it
  // Per table: entries up to this save are not applied to it (its image's
  // save, or all of them when its image is damaged).
  std::vector<uint64_t> apply_after_;
  uint64_t all_covered_ = 0;  // the least of apply_after_: entries up to it are not even decoded
  std::vector<uint64_t> applied_bytes_;
  uint64_t entries_ = 0;
  uint64_t visited_seq_ = 0;  // the save number of the last entry visited
  bool missing_ = false;          // entries are missing: nothing more is applied
  bool refused_in_visit_ = false;  // the log's refusal came from visit(), which has reported it
  uint64_t last_seq_ = 0;
  std::unique_ptr<Log> log_;
  LogOpenReport log_report_;
  TermHistory terms_;
  bool terms_changed_ = false;
};

}  // namespace aup::storage

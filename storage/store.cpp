#include "storage/store.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "storage/copy.h"
#include "storage/file_io.h"
#include "storage/image.h"
#include "storage/key_tables.h"
#include "storage/recovery.h"
#include "storage/schema_file.h"

namespace aup::storage {

struct Store::Job {
  uint64_t seq = 0;
  std::vector<uint32_t> tables;
  std::vector<const vm::Node*> roots;
  std::vector<uint64_t> pending;  // since_image_ of each table when the snapshot was taken
  std::vector<ImageWritten> written;
  std::vector<uint64_t> vars;  // var values (texts retained)
  ImageWritten vars_written;
  Status status;
  std::atomic<bool> done{false};
  std::thread thread;
  // A snapshot root not dropped keeps its nodes shared forever (the owner
  // copies them at every change); one dropped twice frees nodes in use.
  // finish_checkpoint drops them, once.
  ~Job() { assert(roots.empty() && !thread.joinable()); }
};

namespace {

std::string errno_text(int e) { return std::strerror(e); }

// Whether a directory holds store files (a store whose schema file is
// gone: its layout must not be guessed).
Status has_data_files(Io& io, const std::string& dir, bool& found) {
  std::vector<std::string> names;
  if (int rc = io.list_dir(dir, names); rc < 0) {
    return Status::error(fmt::format("cannot list {}: {}", dir, errno_text(-rc)), -rc);
  }
  found = std::any_of(names.begin(), names.end(), [](std::string_view n) {
    return n.rfind("log-", 0) == 0 || n.rfind("image-", 0) == 0 || n == "image.vars";
  });
  return Status::good();
}

// What recovery finds, as a writable open needs it: counted into the open's
// report and shown as progress. Damage needs no handling here: recovery
// refuses it.
class OpenReporter : public RecoveryReporter {
 public:
  // `schema`: the store's, as the images are read (its tables number them).
  OpenReporter(const Schema& schema, StoreOpenReport& report, const OpenProgress& progress)
      : schema_(schema), report_(report), progress_(progress) {}
  void image_read(uint32_t t, uint64_t, uint64_t, uint64_t rows) override {
    ++report_.images;
    if (t == schema_.tables.size()) return;
    report_.image_rows += rows;
    if (progress_) progress_(report_.entries, report_.image_rows);
  }
  void entry(const LogEntry&, const PayloadSummary*) override {
    if (++report_.entries % 4096 == 0 && progress_) progress_(report_.entries, report_.image_rows);
  }

 private:
  const Schema& schema_;
  StoreOpenReport& report_;
  const OpenProgress& progress_;
};

}  // namespace

Store::Store(Io& io, std::string dir, const Schema& schema, StoreOptions o, Tables& tables)
    : io_(io), dir_(std::move(dir)), schema_(schema), o_(o), tables_(tables) {}

Store::~Store() {
  drain();
  log_.reset();
  if (lock_fd_ >= 0) io_.close(lock_fd_);  // releases the flock
}

// Recovery (storage/recovery.h) reads the store; around it a writable open
// creates the directory and takes its lock, creates a new store's schema,
// refuses a module the store cannot migrate to, opens the log writable (a
// torn tail is cut), and writes the first images, a migration's or the key
// tables'.
Status Store::open(Io& io, const std::string& dir, const Schema& schema, StoreOptions o, Tables& tables,
                   std::unique_ptr<Store>& out, StoreOpenReport& report, const OpenProgress& progress) {
  for (const TableSchema& t : schema.tables) {
    // Only a module file made by hand can: no name in the language holds a `$`.
    if (is_key_table(t.name)) {
      return Status::error(fmt::format("the module has a table `{}`, a name of the store's own", t.name));
    }
  }
  std::unique_ptr<Store> s(new Store(io, dir, schema, o, tables));
  Status st = s->lock_directory();
  if (st.ok()) st = s->finish_work_under_way(report);
  if (!st.ok()) return st;
  OpenReporter reporter(s->schema_, report, progress);
  RecoveryOptions ro;
  ro.log.segment_bytes = o.segment_bytes;
  Recovery recovery(io, dir, ro, reporter);
  Schema stored;
  st = s->read_or_create_schema(recovery, stored, report.created);
  if (st.ok()) st = s->refuse_mismatch(stored);
  if (st.ok()) st = recovery.load_images(stored, s->schema_, tables);
  if (st.ok()) st = recovery.read_log();
  if (!st.ok()) return st;
  s->take_recovered(recovery);
  if (recovery.terms_changed()) st = write_terms(io, dir, s->terms_);
  if (!st.ok()) return st;
  report.last_seq = s->last_seq_;
  report.torn = recovery.log_report().torn;
  report.torn_where = recovery.log_report().torn_where;
  st = s->write_first_images(stored, report);
  if (!st.ok()) return st;
  s->release_covered();
  s->log_->set_readers_gate(&s->readers_);
  s->live_.publish(s->last_seq_, s->log_->end().segment, s->log_->end().offset);
  out = std::move(s);
  return Status::good();
}

// Before anything reads the store: the NAME.new files of writes that did
// not finish removed (they were never part of the store: storage/file_io.h,
// is_leftover), then a copy received from a primary, and a cut of the log,
// each finished if one is under way (storage/copy.h, storage/cut.h). Looked
// for in one listing, so that a store with none of them (nearly every
// store) is opened with no other call.
Status Store::finish_work_under_way(StoreOpenReport& report) {
  std::vector<std::string> names;
  if (int rc = io_.list_dir(dir_, names); rc < 0) {
    return Status::error(fmt::format("cannot list {}: {}", dir_, errno_text(-rc)), -rc);
  }
  for (const std::string& n : names) {
    if (!is_leftover(n)) continue;
    // Not synced: a removal a crash undoes is done again at the next open.
    std::string path = dir_ + "/" + n;
    if (int rc = io_.unlink(path); rc < 0 && rc != -ENOENT) {
      return Status::error(fmt::format("cannot remove {} (left by a write that did not finish): {}", path,
                                       errno_text(-rc)),
                           -rc);
    }
    report.leftovers_removed.push_back(path);
  }
  auto has = [&](std::string_view n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  Status st;
  if (has("copy") || has("copy.partial")) st = install_copy(io_, dir_, report.copy_installed);
  // (An installed copy took any marker with the store it replaced.)
  if (st.ok() && has("cut") && !report.copy_installed) st = finish_cut(io_, dir_, report.cut_after);
  return st;
}

// One process at a time: a second `aup run` on the same store is refused.
Status Store::lock_directory() {
  if (int rc = io_.mkdir(dir_, 0755); rc < 0 && rc != -EEXIST) {
    return Status::error(fmt::format("cannot create the store directory {}: {}", dir_, errno_text(-rc)), -rc);
  }
  std::string path = dir_ + "/LOCK";
  std::string holder;
  // Held shared, by readers only, when a shared lock can be taken beside them.
  auto only_readers = [&] {
    std::string ignored;
    int fd = io_.lock(path, /*exclusive=*/false, ignored);
    if (fd >= 0) io_.close(fd);
    return fd >= 0;
  };
  auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(o_.readers_wait_ms);
  bool readers = false;
  for (;;) {
    lock_fd_ = io_.lock(path, /*exclusive=*/true, holder);
    if (lock_fd_ != -EWOULDBLOCK) break;
    readers = only_readers();
    if (!readers || std::chrono::steady_clock::now() >= give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (lock_fd_ == -EWOULDBLOCK && readers) {
    return Status::error(fmt::format("the store {} is being read (aup replay or aup backup of a store not served, "
                                     "or aup run --read-only) for over {} ms; try again once they finish",
                                     dir_, o_.readers_wait_ms),
                         EWOULDBLOCK);
  }
  if (lock_fd_ == -EWOULDBLOCK) {
    return Status::error(fmt::format("the store {} is in use by another aup{}", dir_,
                                     holder.empty() ? "" : fmt::format(" (pid {})", holder)),
                         EWOULDBLOCK);
  }
  if (lock_fd_ < 0) return Status::error(fmt::format("cannot lock {}: {}", path, errno_text(-lock_fd_)), -lock_fd_);
  // A reader of the served store finds these (storage/live.h); the mark
  // says Opening until the open is done.
  Status st = live_.open(io_, dir_);
  if (st.ok()) st = readers_.open(io_, dir_);
  return st;
}

// The schema the store was written with. A directory without one is a new
// store, given the module's, unless it holds store files: refusing beats
// guessing their layout. The store's own schema follows: the module's,
// with the key tables when the store has them or is to keep keys.
Status Store::read_or_create_schema(Recovery& recovery, Schema& stored, bool& created) {
  Status st = recovery.read_schema(stored);
  if (st.ok()) {
    if (o_.keep_keys || has_key_tables(stored)) add_key_tables(schema_);
    return st;
  }
  if (st.err != ENOENT) return st;
  bool data = false;
  st = has_data_files(io_, dir_, data);
  if (!st.ok()) return st;
  if (data) {
    return Status::error(fmt::format("{} holds store files but no schema file; refusing to guess their layout", dir_));
  }
  if (o_.keep_keys) add_key_tables(schema_);
  stored = schema_;
  st = write_schema_file(io_, dir_, stored);
  if (!st.ok()) return st;
  created = true;
  return Status::good();
}

// A module whose schema the store cannot migrate to (storage/schema_file.h).
Status Store::refuse_mismatch(const Schema& stored) const {
  SchemaDiff diff = compare_schemas(stored, schema_);
  if (diff.refusals.empty()) return Status::good();
  std::string list;
  for (const std::string& r : diff.refusals) list += "\n  - " + r;
  return Status::error(fmt::format("the store {} does not match the module:{}\n(a store migrates only "
                                   "additions: new tables, new vars, new fields with defaults)",
                                   dir_, list));
}

// Where recovery left the store: each image's save and bytes, the log
// bytes since, the last save, and the log, open for appending.
void Store::take_recovered(Recovery& recovery) {
  size_t n = schema_.tables.size();
  image_seq_ = recovery.image_seq();
  image_bytes_ = recovery.image_bytes();
  since_image_ = recovery.applied_bytes();
  entry_bytes_.assign(n + 1, 0);
  last_seq_ = recovery.last_seq();
  log_ = recovery.take_log();
  assert(image_seq_.size() == n + 1 && since_image_.size() == n + 1 && log_);
  assert(log_->last_seq() <= last_seq_);
  terms_ = recovery.terms();
  log_->set_term(terms_.last_term());
}

// A new store gets an (empty) image of every table, so each one's coverage
// is known from the first entry on; so does a store missing an image (a
// crash or a failure came while it was being created). A migration writes
// everything in the new layout first, then the schema. A store that only
// gains the key tables gets their images, then the schema.
Status Store::write_first_images(const Schema& stored, StoreOpenReport& report) {
  report.keeps_keys = has_key_tables(schema_);
  report.keys_added = report.keeps_keys && (report.created || !has_key_tables(stored));
  if (report.created) return checkpoint_all();
  Schema gained = stored;  // the stored schema with the key tables it gains, if any
  if (report.keys_added) add_key_tables(gained);
  SchemaDiff diff = compare_schemas(gained, schema_);  // the module's own additions
  // An image missing of a table the store had, or of the vars (the key
  // tables it gains have none yet).
  bool missing_image = false;
  for (size_t t = 0; t < image_bytes_.size(); ++t) {
    bool had = t == schema_.tables.size() || stored.table_index(schema_.tables[t].name) >= 0;
    missing_image = missing_image || (had && image_bytes_[t] == 0);
  }
  if (diff.same() && !report.keys_added) return missing_image ? checkpoint_all() : Status::good();
  if (diff.same() && !missing_image) return add_key_images();
  Status st = checkpoint_all();
  if (!st.ok()) return st;
  st = write_schema_file(io_, dir_, schema_);
  if (!st.ok()) return st;
  report.migrated = diff.additions;
  return Status::good();
}

// Not a migration: no table of the store changes, so no other table's
// image is written again. A crash between the images and the schema file
// leaves images no schema names: the next open does not read them
// (Recovery::load_images), and writes them again if it keeps keys.
Status Store::add_key_images() {
  std::vector<uint32_t> keys;
  for (size_t t = schema_.tables.size() - kKeyTableCount; t < schema_.tables.size(); ++t) {
    keys.push_back(static_cast<uint32_t>(t));
  }
  Status st = checkpoint_now(std::move(keys));
  if (!st.ok()) return st;
  io_.point("keys.before_schema");
  return write_schema_file(io_, dir_, schema_);
}

// The commit is timed here, once, around everything it does (encoding,
// write, fdatasync, or a refusal): stats_.commit and last_commit_ns() are
// what `aup run --data`'s totals, --stats and the stats request report.
Status Store::commit(BatchEncoder& batch, Fate& fate) {
  fate = Fate::NotWritten;
  auto started = std::chrono::steady_clock::now();
  Status st = write_batch(batch, fate);
  last_commit_ns_ = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count());
  stats_.commit.add(last_commit_ns_);
  return st;
}

// One copy: the batch is encoded straight into the log's buffer, behind
// the entry header the log reserves, and written from there.
Status Store::write_batch(BatchEncoder& batch, Fate& fate) {
  if (unavailable()) return Status::error(unavailable_);
  std::fill(entry_bytes_.begin(), entry_bytes_.end(), 0);
  std::vector<uint8_t>& entry = log_->begin_entry();
  const size_t header = entry.size();
  batch.encode(tables_, entry, entry_bytes_);
  const size_t payload = entry.size() - header;
  if (payload == 0) return Status::good();  // nothing changed: nothing to write
  // The log never holds a save the store has not taken (a failed commit
  // leaves the store unavailable), so this one comes right after its last.
  // (The log's last may be older: images can cover saves past it.)
  assert(log_->last_seq() <= last_seq_);
  uint64_t seq = last_seq_ + 1;
  io_.point("commit.before_write");
  Status st = log_->append_entry(seq);
  if (!st.ok() && !log_->broken()) return st;  // not written (no space for a new segment): the store carries on
  if (st.ok()) {
    io_.point("commit.after_write");
    st = log_->sync();
  }
  if (!st.ok()) return fail_commit(st, fate);
  io_.point("commit.after_sync");
  took(seq, payload);
  return Status::good();
}

Status Store::append_copies(std::span<const Copy> copies) {
  if (unavailable()) return Status::error(unavailable_);
  uint32_t term = terms_.last_term();
  for (size_t i = 0; i < copies.size(); ++i) {
    if (copies[i].seq != last_seq_ + 1 + i) {
      return Status::error(
          fmt::format("entry {} does not follow this store's last save, {}", copies[i].seq, last_seq_ + i));
    }
    if (copies[i].term < term) {
      return Status::error(
          fmt::format("entry {} is of term {}, older than this store's term, {}", copies[i].seq, copies[i].term, term));
    }
    term = copies[i].term;
  }
  Status st = write_copies(copies);
  if (!st.ok()) return st;
  if (!self_map_) self_map_ = std::make_unique<SchemaMap>(map_schema(schema_, schema_));
  std::vector<uint64_t> covered(entry_bytes_.size(), 0);
  for (size_t i = 0; i < copies.size(); ++i) {
    std::fill(entry_bytes_.begin(), entry_bytes_.end(), 0);
    st = apply_payload(copies[i].payload, schema_, *self_map_, copies[i].seq, covered, tables_, &entry_bytes_);
    if (!st.ok()) {
      unavailable_ = fmt::format("the store takes no more entries: entry {} is durable but does not apply ({})",
                                 copies[i].seq, st.message);
      return Status::error(unavailable_);
    }
    took(copies[i].seq, copies[i].payload.size(), i + 1 == copies.size());
  }
  return Status::good();
}

// The copies written one after another and synced once (a new term noted
// in the history before its first entry): all durable, or the store
// unavailable. A refusal that changed nothing (the first entry's) leaves
// it available; past the first, the log holds entries the store has not
// taken, so any failure makes it unavailable until reopened (recovery then
// takes what is really there; a replica asks again for the rest).
Status Store::write_copies(std::span<const Copy> copies) {
  log_->allow_runs();
  Fate fate = Fate::NotWritten;
  for (size_t i = 0; i < copies.size(); ++i) {
    const Copy& c = copies[i];
    Status st = c.term > terms_.last_term() ? start_term(c.term, c.seq) : Status::good();
    if (st.ok()) {
      std::vector<uint8_t>& entry = log_->begin_entry();
      entry.insert(entry.end(), c.payload.begin(), c.payload.end());
      st = log_->append_entry(c.seq);
    }
    if (st.ok()) continue;
    if (log_->broken()) return fail_commit(st, fate);
    if (i == 0) return st;
    unavailable_ = fmt::format(
        "the store takes no more entries: entries {} to {} are written to the log but not taken ({}); reopen it",
        copies.front().seq, c.seq - 1, st.message);
    return Status::error(unavailable_);
  }
  Status st = log_->sync();
  return st.ok() ? st : fail_commit(st, fate);
}

Status Store::begin_term(uint32_t term) {
  if (unavailable()) return Status::error(unavailable_);
  if (term <= terms_.last_term()) {
    return Status::error(fmt::format("term {} does not follow this store's term, {}", term, terms_.last_term()));
  }
  uint64_t seq = last_seq_ + 1;
  Status st = start_term(term, seq);
  if (!st.ok()) return st;
  std::fill(entry_bytes_.begin(), entry_bytes_.end(), 0);
  log_->begin_entry();
  Fate fate = Fate::NotWritten;
  st = log_->append_entry(seq);
  if (st.ok()) st = log_->sync();
  if (!st.ok()) return log_->broken() ? fail_commit(st, fate) : st;
  took(seq, 0);
  return Status::good();
}

uint64_t Store::images_cover() const { return *std::max_element(image_seq_.begin(), image_seq_.end()); }

Status Store::cut_after(uint64_t save, CutPrepared& out) {
  if (unavailable()) return Status::error(unavailable_);
  drain();
  uint64_t covered = images_cover();
  if (covered > save) {
    return Status::error(fmt::format("its images cover save {}, past save {}: a copy of the primary's store "
                                     "must replace it",
                                     covered, save),
                         ERANGE);
  }
  Status st = prepare_cut(io_, dir_, save, out);
  if (!st.ok()) return st;
  unavailable_ = fmt::format("the store's log is to be cut back to save {}: reopen it", save);
  return Status::good();
}

// Term `term` begins at save `seq`, in DIR/terms before any entry of it is
// written: a crash between leaves a term that begins past the last save,
// which the next open forgets (storage/terms.h).
Status Store::start_term(uint32_t term, uint64_t seq) {
  TermHistory next = terms_;
  next.begin(term, seq);
  Status st = write_terms(io_, dir_, next);
  if (!st.ok()) return st;
  terms_ = std::move(next);
  log_->set_term(term);
  return Status::good();
}

// A durable entry `seq` of `payload` bytes, taken in: the save numbers
// chain (the log's last is this one, one past the store's last), readers
// of the served store may read up to its end, and its bytes count towards
// each table's next checkpoint.
void Store::took(uint64_t seq, size_t payload, bool last) {
  assert(seq == last_seq_ + 1 && log_->last_seq() >= seq && (!last || log_->last_seq() == seq));
  const Log::Segment& s = log_->segments().back();
  assert(s.last_seq >= seq && s.used <= s.size && s.used % log_format::kAlign == 0);
  last_seq_ = seq;
  // The mark is the last entry's: a reader cut there reads every entry
  // up to it and takes its save as the one it holds.
  if (last) live_.publish(seq, log_->end().segment, log_->end().offset);
  uint64_t counted = 0;
  for (size_t t = 0; t < entry_bytes_.size(); ++t) {
    since_image_[t] += entry_bytes_[t];
    counted += entry_bytes_[t];
  }
  // Every payload byte belongs to one table's group or the vars'.
  assert(counted == payload);
  (void)counted;
  (void)s;
  ++stats_.commits;
  stats_.log_bytes += log_format::entry_bytes(payload);
}

// A write or sync failed: the disk's state is uncertain, so the store takes
// no more events until it is reopened (and recovery reads what is really
// there). The batch's entry is withdrawn if that still works, so its events
// can be answered as certainly not written.
Status Store::fail_commit(const Status& failed, Fate& fate) {
  // Every later event is refused with this, before it runs: not written.
  unavailable_ =
      "the store takes no events since a write to the log failed (" + failed.message + "); restart aup to recover";
  Status w = log_->withdraw();
  if (w.ok()) {
    fate = Fate::NotWritten;
    return Status::error(unavailable_, failed.err);
  }
  fate = Fate::PerhapsWritten;
  return Status::error(fmt::format("{}; withdrawing the entry failed too ({}), so whether these events survive the "
                                   "restart is unknown",
                                   unavailable_, w.message),
                       failed.err);
}

void Store::tick() {
  if (job_ && job_->done.load(std::memory_order_acquire)) report_background(finish_checkpoint());
  if (release_waiting_ && !job_) release_covered();  // a reader held it back: tried each batch until it goes
  if (job_ || unavailable() || last_seq_ < retry_after_) return;
  size_t n = schema_.tables.size();
  std::vector<uint32_t> chosen;
  uint64_t image_total = 0;
  for (size_t t = 0; t < n; ++t) {
    image_total += image_bytes_[t];
    if (since_image_[t] > std::max(image_bytes_[t], o_.image_min_bytes)) chosen.push_back(static_cast<uint32_t>(t));
  }
  if (chosen.empty() && log_->live_bytes() > std::max(image_total, o_.log_min_bytes)) {
    // The changed table whose image is oldest holds the oldest entry still
    // needed: its new image lets segments go. (Unchanged tables hold nothing:
    // release_covered moves their images' save numbers up.)
    size_t oldest = n;
    for (size_t t = 0; t < n; ++t) {
      if (since_image_[t] > 0 && (oldest == n || image_seq_[t] < image_seq_[oldest])) oldest = t;
    }
    if (oldest < n) chosen.push_back(static_cast<uint32_t>(oldest));
  }
  if (!chosen.empty()) start_checkpoint(std::move(chosen));
}

void Store::start_checkpoint(std::vector<uint32_t> tables_to_write) {
  auto job = std::make_unique<Job>();
  job->seq = last_seq_;
  job->tables = std::move(tables_to_write);
  for (uint32_t t : job->tables) {
    job->roots.push_back(tables_.table(t).share());  // copy-on-write from here on
    job->pending.push_back(since_image_[t]);
  }
  job->written.resize(job->tables.size());
  for (uint32_t v = 0; v < schema_.vars.size(); ++v) {
    uint64_t value = tables_.var(v);
    if (schema_.vars[v].type == FieldType::Text) vm::retain(reinterpret_cast<vm::TextObj*>(value));
    job->vars.push_back(value);
  }
  Job* j = job.get();
  auto work = [this, j] {
    for (size_t i = 0; i < j->tables.size() && j->status.ok(); ++i) {
      uint32_t t = j->tables[i];
      j->status = write_table_image(io_, dir_, schema_.tables[t], tables_.table(t), j->roots[i], j->seq, j->written[i]);
    }
    if (j->status.ok()) j->status = write_vars_image(io_, dir_, schema_, j->vars, j->seq, j->vars_written);
    j->done.store(true, std::memory_order_release);
  };
  job_ = std::move(job);
  if (o_.background) {
    job_->thread = std::thread(work);
  } else {
    work();  // finish_checkpoint takes it in at the next tick (or at once, below)
  }
}

Status Store::finish_checkpoint() {
  Job& j = *job_;
  if (j.thread.joinable()) j.thread.join();
  assert(j.roots.size() == j.tables.size());
  for (size_t i = 0; i < j.tables.size(); ++i) tables_.table(j.tables[i]).drop_root(const_cast<vm::Node*>(j.roots[i]));
  j.roots.clear();
  for (uint32_t v = 0; v < j.vars.size(); ++v) {
    if (schema_.vars[v].type == FieldType::Text) vm::release(reinterpret_cast<vm::TextObj*>(j.vars[v]));
  }
  size_t n = schema_.tables.size();
  if (j.status.ok()) {
    for (size_t i = 0; i < j.tables.size(); ++i) {
      uint32_t t = j.tables[i];
      // An image's save never moves back: the log before it may be gone.
      assert(j.seq >= image_seq_[t] && since_image_[t] >= j.pending[i]);
      image_seq_[t] = j.seq;
      image_bytes_[t] = j.written[i].bytes;
      since_image_[t] -= j.pending[i];
      ++stats_.images_written;
      stats_.image_bytes += j.written[i].bytes;
    }
    assert(j.seq >= image_seq_[n]);
    image_seq_[n] = j.seq;
    image_bytes_[n] = j.vars_written.bytes;
    since_image_[n] = 0;
    ++stats_.checkpoints;
    job_.reset();
    release_covered();
    return Status::good();
  } else {
    // The old images and the whole log are still there: nothing is lost.
    // Try again after a while rather than at every batch.
    ++stats_.checkpoint_failures;
    retry_after_ = last_seq_ + 1000;
    Status failed = j.status;
    job_.reset();
    return failed;
  }
}

void Store::drain() {
  if (job_) report_background(finish_checkpoint());  // joins the thread
}

// A background checkpoint that failed costs nothing but log space: say so
// and carry on (tick() tries again later).
void Store::report_background(const Status& st) {
  if (st.ok()) return;
  std::fprintf(stderr, "aup: checkpoint failed (the log keeps everything; retrying later): %s\n", st.message.c_str());
}

Status Store::checkpoint_all() {
  std::vector<uint32_t> all;
  for (size_t t = 0; t < schema_.tables.size(); ++t) all.push_back(static_cast<uint32_t>(t));
  return checkpoint_now(std::move(all));
}

// Images of `tables_to_write` and the vars, now, on this thread.
Status Store::checkpoint_now(std::vector<uint32_t> tables_to_write) {
  drain();
  bool background = o_.background;
  o_.background = false;
  start_checkpoint(std::move(tables_to_write));
  o_.background = background;
  return finish_checkpoint();
}

// Segments whose entries every image covers leave the log. A table
// untouched since its image has its image's save number moved up first
// (the image is that table as of now too), so it does not hold the log.
// Moves unchanged images' save numbers up and lets the log drop what they
// all cover. Both change files a reader of the served store may be reading
// (storage/live.h), so while one reads this waits: tick() tries again
// after each batch (one flock that does not wait) until the readers go.
void Store::release_covered() {
  release_waiting_ = !readers_.keep_out();
  if (release_waiting_) return;
  release_covered_now();
  readers_.let_in();
}

void Store::release_covered_now() {
  size_t n = schema_.tables.size();
  for (size_t t = 0; t < n; ++t) {
    if (since_image_[t] == 0 && image_seq_[t] < last_seq_ && image_bytes_[t] > 0) {
      Status b = rewrite_image_seq(io_, table_image_path(dir_, schema_.tables[t].name), last_seq_);
      if (b.ok()) {
        image_seq_[t] = last_seq_;
      } else {
        report_background(b);  // the image and the log stay as they were; tried again after the next checkpoint
      }
    }
  }
  uint64_t covered = *std::min_element(image_seq_.begin(), image_seq_.end());
  assert(covered <= last_seq_);
  log_->release_through(std::min(covered, retain_after_));
}

}  // namespace aup::storage

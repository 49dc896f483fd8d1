#include "storage/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "storage/codec.h"
#include "storage/image.h"
#include "storage/image_format.h"
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
};

namespace {

std::string errno_text(int e) { return std::strerror(e); }

bool has_data_files(const std::string& dir) {
  bool found = false;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string_view n = e->d_name;
      if (n.rfind("log-", 0) == 0 || n.rfind("image-", 0) == 0 || n == "image.vars") found = true;
    }
    closedir(d);
  }
  return found;
}

// Stored columns -> the module's, by name (compare_schemas has refused
// anything else than additions).
SchemaMap build_map(const Schema& stored, const Schema& target) {
  SchemaMap m;
  m.target = &target;
  for (const TableSchema& st : stored.tables) {
    int ti = target.table_index(st.name);
    m.table.push_back(ti);
    std::vector<uint32_t> fields;
    for (const FieldSchema& sf : st.fields) {
      uint32_t j = 0;
      if (ti >= 0) {
        const TableSchema& tt = target.tables[static_cast<size_t>(ti)];
        while (j < tt.fields.size() && tt.fields[j].name != sf.name) ++j;
      }
      fields.push_back(j);
    }
    m.field.push_back(std::move(fields));
  }
  for (const TableSchema& tt : target.tables) {
    std::vector<uint64_t> defaults;
    for (const FieldSchema& f : tt.fields) {
      defaults.push_back(f.type == FieldType::Num ? std::bit_cast<uint64_t>(f.default_value.num)
                         : f.type == FieldType::Bool ? (f.default_value.boolean ? 1u : 0u)
                                                     : 0u);
    }
    m.defaults.push_back(std::move(defaults));
  }
  for (const VarSchema& sv : stored.vars) m.var.push_back(target.var_index(sv.name));
  return m;
}

// Rewrites an image's covered save number in place: the table has not
// changed since the image, so the image is the table as of `seq` too.
// A write that stops part way must not leave half a new header behind (the
// image would no longer open): the old header is written back, and still
// describes the image.
Status bump_image_seq(Io& io, const std::string& path, uint64_t seq) {
  int fd = io.open(path, O_RDWR, 0);
  if (fd < 0) return Status::error(fmt::format("cannot open {}: {}", path, errno_text(-fd)), -fd);
  uint8_t old[image_format::kHeaderBytes];
  ssize_t n = io.pread(fd, old, sizeof old, 0);
  auto fail = [&](std::string why, int e) {
    io.close(fd);
    return Status::error(fmt::format("cannot update {}: {}", path, why), e);
  };
  if (n < 0) return fail(errno_text(static_cast<int>(-n)), static_cast<int>(-n));
  if (n != sizeof old || std::memcmp(old, image_format::kMagic, 8) != 0) return fail("not an image", 0);
  uint8_t h[image_format::kHeaderBytes];
  std::memcpy(h, old, sizeof h);
  for (int i = 0; i < 8; ++i) h[16 + i] = static_cast<uint8_t>(seq >> (8 * i));
  uint64_t sum = XXH3_64bits(h, 56);
  for (int i = 0; i < 8; ++i) h[56 + i] = static_cast<uint8_t>(sum >> (8 * i));
  auto write_header = [&](const uint8_t* p) -> int {  // 0, or the errno
    size_t done = 0;
    while (done < sizeof h) {
      ssize_t w = io.pwrite(fd, p + done, sizeof h - done, static_cast<off_t>(done));
      if (w <= 0) return w < 0 ? static_cast<int>(-w) : EIO;
      done += static_cast<size_t>(w);
    }
    return 0;
  };
  if (int e = write_header(h); e != 0) {
    write_header(old);
    return fail(errno_text(e), e);
  }
  if (int rc = io.fsync(fd); rc < 0) return fail(errno_text(-rc), -rc);
  io.close(fd);
  return Status::good();
}

}  // namespace

Store::Store(Io& io, std::string dir, const Schema& schema, StoreOptions o, Tables& tables)
    : io_(io), dir_(std::move(dir)), schema_(schema), o_(o), tables_(tables) {}

Store::~Store() {
  drain();
  log_.reset();
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Status Store::open(Io& io, const std::string& dir, const Schema& schema, StoreOptions o, Tables& tables,
                   std::unique_ptr<Store>& out, StoreOpenReport& report, const OpenProgress& progress) {
  std::unique_ptr<Store> s(new Store(io, dir, schema, o, tables));
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::error(fmt::format("cannot create the store directory {}: {}", dir, errno_text(errno)), errno);
  }
  // One process at a time: a second `aup run` on the same store is refused.
  std::string lock_path = dir + "/LOCK";
  s->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (s->lock_fd_ < 0) return Status::error(fmt::format("cannot open {}: {}", lock_path, errno_text(errno)), errno);
  if (::flock(s->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    ssize_t n = ::pread(s->lock_fd_, pid, sizeof pid - 1, 0);
    std::string holder = n > 0 ? fmt::format(" (pid {})", std::string_view(pid, static_cast<size_t>(n))) : "";
    return Status::error(fmt::format("the store {} is in use by another aup{}", dir, holder), EWOULDBLOCK);
  }
  std::string me = std::to_string(::getpid());
  if (::ftruncate(s->lock_fd_, 0) != 0 || ::pwrite(s->lock_fd_, me.data(), me.size(), 0) < 0) {
    // The lock holds without the pid; the pid is only for messages.
  }

  // The schema the store was written with.
  Schema stored;
  Status st = read_schema_file(io, dir, stored);
  bool fresh = false;
  if (!st.ok() && st.err == ENOENT) {
    if (has_data_files(dir)) {
      return Status::error(fmt::format("{} holds store files but no schema file; refusing to guess their layout", dir));
    }
    fresh = true;
    stored = schema;
    st = write_schema_file(io, dir, stored);
    if (!st.ok()) return st;
    report.created = true;
  } else if (!st.ok()) {
    return st;
  }
  SchemaDiff diff = compare_schemas(stored, schema);
  if (!diff.refusals.empty()) {
    std::string list;
    for (const std::string& r : diff.refusals) list += "\n  - " + r;
    return Status::error(fmt::format("the store {} does not match the module:{}\n(a store migrates only "
                                     "additions: new tables, new vars, new fields with defaults)",
                                     dir, list));
  }
  SchemaMap map = build_map(stored, schema);
  size_t n = schema.tables.size();
  s->image_seq_.assign(n + 1, 0);
  s->image_bytes_.assign(n + 1, 0);
  s->since_image_.assign(n + 1, 0);
  s->entry_bytes_.assign(n + 1, 0);

  // Images, mapped into the module's layout by column names.
  for (uint32_t t = 0; t < n; ++t) {
    const TableSchema& target = schema.tables[t];
    ImageRead info;
    Status r = load_table_image(io, table_image_path(dir, target.name), target, tables.table(t), info, report.image_rows);
    if (progress) progress(report.entries, report.image_rows);
    if (!r.ok() && r.err == ENOENT) continue;
    if (!r.ok()) return r;
    s->image_seq_[t] = info.seq;
    s->image_bytes_[t] = info.bytes;
    ++report.images;
  }
  {
    ImageRead info;
    Status r = read_vars_image(io, vars_image_path(dir), info, [&](const VarSchema& v, uint64_t value) {
      int mi = schema.var_index(v.name);
      if (mi >= 0 && schema.vars[static_cast<size_t>(mi)].type == v.type) {
        tables.set_var(static_cast<uint32_t>(mi), value);
      } else if (v.type == FieldType::Text) {
        vm::release(reinterpret_cast<vm::TextObj*>(value));
      }
    });
    if (r.ok()) {
      s->image_seq_[n] = info.seq;
      s->image_bytes_[n] = info.bytes;
      ++report.images;
    } else if (r.err != ENOENT) {
      return r;
    }
  }

  // The log after the images.
  uint64_t all_covered = *std::min_element(s->image_seq_.begin(), s->image_seq_.end());
  // Every image must reach back to where the log begins, or entries between
  // are lost (a segment deleted or emptied by hand, say). Checked at the
  // first entry, before records meet rows that are not there.
  auto missing_entries = [&](uint64_t first_prev_seq) -> Status {
    for (size_t t = 0; t <= n; ++t) {
      if (s->image_seq_[t] < first_prev_seq) {
        std::string what = t < n ? fmt::format("table `{}`", schema.tables[t].name) : std::string("the vars");
        return Status::error(fmt::format("the store {} is missing log entries: its oldest entry follows save {}, "
                                         "but the image of {} covers only up to save {}",
                                         dir, first_prev_seq, what, s->image_seq_[t]));
      }
    }
    return Status::good();
  };
  LogOpenReport lr;
  Log::Options lo;
  lo.segment_bytes = o.segment_bytes;
  st = Log::open(
      io, dir, lo,
      [&](const LogEntry& e) -> Status {
        if (++report.entries == 1) {
          Status m = missing_entries(e.prev_seq);
          if (!m.ok()) return m;
        }
        if (progress && report.entries % 4096 == 0) progress(report.entries, report.image_rows);
        // Entries every image covers are not even decoded (they may be in an
        // older layout, from before a migration).
        if (e.seq <= all_covered) return Status::good();
        Status a = apply_payload(e.payload, stored, map, e.seq, s->image_seq_, tables, &s->since_image_);
        if (!a.ok()) return Status::error(fmt::format("log-{} at byte {}: {}", e.segment, e.offset, a.message));
        return Status::good();
      },
      s->log_, lr);
  if (!st.ok()) return st;
  report.torn = lr.torn;
  report.torn_where = lr.torn_where;
  s->last_seq_ = std::max(s->log_->last_seq(), *std::max_element(s->image_seq_.begin(), s->image_seq_.end()));
  report.last_seq = s->last_seq_;

  bool missing_image = std::find(s->image_bytes_.begin(), s->image_bytes_.end(), 0) != s->image_bytes_.end();
  if (fresh || (missing_image && diff.same())) {
    // Every table starts with an (empty) image, so each one's coverage is
    // known from the first entry on. (An image can be missing only when a
    // crash or a failure came while the store was being created.)
    st = s->checkpoint_all();
    if (!st.ok()) return st;
  } else if (!diff.same()) {
    // A migration: everything in the new layout first, then the schema.
    st = s->checkpoint_all();
    if (!st.ok()) return st;
    st = write_schema_file(io, dir, schema);
    if (!st.ok()) return st;
    report.migrated = diff.additions;
  }
  s->release_covered();
  out = std::move(s);
  return Status::good();
}

Status Store::commit(BatchEncoder& batch) {
  if (unavailable()) return Status::error(unavailable_);
  payload_.clear();
  std::fill(entry_bytes_.begin(), entry_bytes_.end(), 0);
  batch.encode(tables_, payload_, entry_bytes_);
  if (payload_.empty()) return Status::good();  // nothing changed: nothing to write
  uint64_t seq = last_seq_ + 1;
  io_.point("commit.before_write");
  auto started = std::chrono::steady_clock::now();
  Status st = log_->append(seq, payload_);
  if (!st.ok() && !log_->broken()) return Status::error("not written: " + st.message, st.err);  // e.g. ENOSPC
  if (st.ok()) {
    io_.point("commit.after_write");
    st = log_->sync();
    if (st.ok()) {
      io_.point("commit.after_sync");
      stats_.sync.add(static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count()));
      last_seq_ = seq;
      for (size_t t = 0; t < entry_bytes_.size(); ++t) since_image_[t] += entry_bytes_[t];
      ++stats_.commits;
      stats_.log_bytes += log_format::entry_bytes(payload_.size());
      return Status::good();
    }
  }
  return fail_commit(st);
}

// A write or sync failed: the disk's state is uncertain, so the store takes
// no more events until it is reopened (and recovery reads what is really
// there). The batch's entry is withdrawn if that still works, so its events
// can be answered as certainly not written.
Status Store::fail_commit(const Status& failed) {
  std::string why =
      "the store takes no events since a write to the log failed (" + failed.message + "); restart aup to recover";
  // Every later event is refused with this, before it runs: not written.
  unavailable_ = "not written: " + why;
  Status w = log_->withdraw();
  if (w.ok()) return Status::error(unavailable_, failed.err);
  return Status::error(fmt::format("perhaps written: {}; withdrawing the entry failed too ({}), so whether these "
                                   "events survive the restart is unknown",
                                   why, w.message),
                       failed.err);
}

void Store::tick() {
  if (job_ && job_->done.load(std::memory_order_acquire)) report_background(finish_checkpoint());
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
  for (size_t i = 0; i < j.tables.size(); ++i) tables_.table(j.tables[i]).drop_root(const_cast<vm::Node*>(j.roots[i]));
  for (uint32_t v = 0; v < j.vars.size(); ++v) {
    if (schema_.vars[v].type == FieldType::Text) vm::release(reinterpret_cast<vm::TextObj*>(j.vars[v]));
  }
  size_t n = schema_.tables.size();
  if (j.status.ok()) {
    for (size_t i = 0; i < j.tables.size(); ++i) {
      uint32_t t = j.tables[i];
      image_seq_[t] = j.seq;
      image_bytes_[t] = j.written[i].bytes;
      since_image_[t] -= j.pending[i];
      ++stats_.images_written;
      stats_.image_bytes += j.written[i].bytes;
    }
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
  drain();
  size_t n = schema_.tables.size();
  std::vector<uint32_t> all;
  for (size_t t = 0; t < n; ++t) all.push_back(static_cast<uint32_t>(t));
  bool background = o_.background;
  o_.background = false;
  start_checkpoint(std::move(all));
  o_.background = background;
  return finish_checkpoint();
}

// Segments whose entries every image covers leave the log. A table
// untouched since its image has its image's save number moved up first
// (the image is that table as of now too), so it does not hold the log.
void Store::release_covered() {
  size_t n = schema_.tables.size();
  for (size_t t = 0; t < n; ++t) {
    if (since_image_[t] == 0 && image_seq_[t] < last_seq_ && image_bytes_[t] > 0) {
      Status b = bump_image_seq(io_, table_image_path(dir_, schema_.tables[t].name), last_seq_);
      if (b.ok()) {
        image_seq_[t] = last_seq_;
      } else {
        report_background(b);  // the image and the log stay as they were; tried again after the next checkpoint
      }
    }
  }
  uint64_t covered = *std::min_element(image_seq_.begin(), image_seq_.end());
  log_->release_through(covered);
}

}  // namespace aup::storage

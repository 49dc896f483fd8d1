#include "storage/backup.h"

#include <fcntl.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include <fmt/core.h>

#include "storage/file_io.h"
#include "storage/live.h"
#include "storage/log.h"
#include "storage/memory_tables.h"
#include "storage/recovery.h"

namespace aup::storage {

namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;

// A file of the source, open for reading.
struct Source {
  std::string name;
  int fd = -1;
  uint64_t size = 0;
};

// The source files a backup copies, closed when it ends.
class Sources {
 public:
  explicit Sources(Io& io) : io_(io) {}
  ~Sources() {
    for (Source& s : files_) io_.close(s.fd);
  }
  Sources(const Sources&) = delete;
  Sources& operator=(const Sources&) = delete;

  // Opens the schema file and the images.
  Status open(const std::string& dir);
  const std::vector<Source>& files() const { return files_; }

 private:
  Io& io_;
  std::vector<Source> files_;
};

// Whether `name` is a file a backup copies as it is: the schema file or an
// image (not one being written, `.new`). The log is copied as its reader
// finds it.
bool copied(std::string_view name) {
  if (name == "schema" || name == "image.vars") return true;
  return name.rfind("image-", 0) == 0 && (name.size() < 10 || name.substr(name.size() - 4) != ".new");
}

Status Sources::open(const std::string& dir) {
  std::vector<std::string> names;
  if (int rc = io_.list_dir(dir, names); rc < 0) {
    return Status::error(fmt::format("cannot list {}: {}", dir, std::strerror(-rc)), -rc);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    Source s;
    s.name = name;
    if (!copied(name)) continue;
    std::string path = dir + "/" + name;
    s.fd = io_.open(path, O_RDONLY, 0);
    if (s.fd < 0) return Status::error(fmt::format("cannot open {}: {}", path, std::strerror(-s.fd)), -s.fd);
    int64_t size = io_.file_size(s.fd);
    if (size < 0) {
      io_.close(s.fd);
      return Status::error(fmt::format("cannot read {}: {}", path, std::strerror(static_cast<int>(-size))),
                           static_cast<int>(-size));
    }
    s.size = static_cast<uint64_t>(size);
    files_.push_back(s);
  }
  return Status::good();
}

// Copies the first `bytes` of `s` into the new file `to`, allocated to
// `alloc` bytes (a segment's whole size: the rest reads as zeros), synced.
class Copier {
 public:
  Copier(Io& io, BackupReport& report, const BackupProgress& progress)
      : io_(io), report_(report), progress_(progress), buf_(kChunkBytes) {}

  Status copy(const Source& s, const std::string& from, const std::string& to, uint64_t bytes, uint64_t alloc) {
    // A segment's used bytes are within its size (the log's reader stops
    // at its end), and a whole file is copied as it is.
    assert(alloc == 0 ? bytes == s.size : bytes <= alloc);
    int fd = io_.open(to, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return Status::error(fmt::format("cannot create {}: {}", to, std::strerror(-fd)), -fd);
    Status st = fill(s, from, fd, to, bytes, alloc);
    if (int rc = st.ok() ? io_.fsync(fd) : 0; rc < 0) {
      st = Status::error(fmt::format("cannot sync {}: {}", to, std::strerror(-rc)), -rc);
    }
    io_.close(fd);
    if (!st.ok()) return st;
    ++report_.files;
    io_.point("backup.copied");
    return Status::good();
  }

 private:
  Status fill(const Source& s, const std::string& from, int fd, const std::string& to, uint64_t bytes,
              uint64_t alloc) {
    if (alloc > 0) {
      if (int rc = io_.fallocate(fd, 0, static_cast<off_t>(alloc)); rc < 0) {
        return Status::error(fmt::format("cannot allocate {} bytes for {}: {}", alloc, to, std::strerror(-rc)), -rc);
      }
    }
    for (uint64_t at = 0; at < bytes;) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, bytes - at));
      size_t got = 0;
      Status st = read_at(io_, s.fd, buf_.data(), want, at, from, got);
      if (!st.ok()) return st;
      // A source shorter than it was when opened: it changed.
      if (got == 0) return Status::error(fmt::format("cannot read {}: {}", from, std::strerror(EIO)), EIO);
      st = write_all(io_, fd, buf_.data(), got, at, to);
      if (!st.ok()) return st;
      at += got;
      report_.bytes += got;
      if (progress_) progress_(report_.bytes);
    }
    return Status::good();
  }

  Io& io_;
  BackupReport& report_;
  const BackupProgress& progress_;
  std::vector<uint8_t> buf_;
};

// Recovery of the copy, read-only: it refuses the first damage (every
// digest and the chain are checked), so only a torn tail is heard here.
// Then the copy is checked against the source as it was read: a served
// store's copy holds exactly the save it was cut at, a stopped store's at
// least the last save of the source's log.
Status verify(Io& io, const std::string& to, uint64_t want_seq, bool live, BackupReport& report) {
  RecoveryOptions ro;
  ro.log.read_only = true;
  RecoveryReporter quiet;
  Recovery recovery(io, to, ro, quiet);
  Schema stored;
  Status st = recovery.read_schema(stored);
  if (!st.ok()) return st;
  MemoryTables tables(stored);
  st = recovery.load_images(stored, stored, tables);
  if (st.ok()) st = recovery.read_log();
  if (!st.ok()) return Status::error("the copy does not verify: " + st.message, st.err);
  if (live && recovery.last_seq() != want_seq) {
    return Status::error(fmt::format("the copy holds save {}, not save {} it was cut at", recovery.last_seq(), want_seq));
  }
  if (!live && recovery.last_seq() < want_seq) {
    return Status::error(fmt::format("the copy holds save {}, short of save {} where the source's log ends",
                                     recovery.last_seq(), want_seq));
  }
  report.seq = recovery.last_seq();
  report.rows = 0;
  for (uint32_t t = 0; t < stored.tables.size(); ++t) report.rows += tables.table(t).size();
  return Status::good();
}

// Makes DEST.partial, refusing a destination that exists (as anything, a
// dangling link included) or a partial one a stopped backup left.
Status make_partial(Io& io, const std::string& to, const std::string& partial) {
  int fd = io.open(to, O_PATH | O_NOFOLLOW, 0);
  if (fd >= 0) {
    io.close(fd);
    return Status::error(fmt::format("--to {}: it exists; a backup makes a new directory", to), EEXIST);
  }
  if (fd != -ENOENT) return Status::error(fmt::format("cannot open {}: {}", to, std::strerror(-fd)), -fd);
  if (int rc = io.mkdir(partial, 0755); rc < 0) {
    if (rc == -EEXIST) {
      return Status::error(fmt::format("{} exists: a backup that did not finish; remove it first", partial), EEXIST);
    }
    return Status::error(fmt::format("cannot create {}: {}", partial, std::strerror(-rc)), -rc);
  }
  return Status::good();
}

// After a refusal (not a crash), nothing half-made is left behind: the
// copy (DEST.partial, or DEST when the rename may not be durable) holds
// only the files this backup created. If removing it fails, it stays.
void remove_copy(Io& io, const std::string& copy) {
  std::vector<std::string> names;
  if (io.list_dir(copy, names) < 0) return;
  for (const std::string& name : names) io.unlink(copy + "/" + name);
  io.rmdir(copy);
}

// The copy's files, in order: the schema and the images (open before the
// cut), then the segments up to it. `cut_seq`: the save the copy must
// hold (served), or the last of the source's log.
Status copy_store(Io& io, ReadAccess& access, const std::string& dir, const std::string& partial, Copier& copier,
                  uint64_t& cut_seq) {
  Sources fixed(io);
  Status st = fixed.open(dir);
  if (!st.ok()) return st;
  if (std::none_of(fixed.files().begin(), fixed.files().end(), [](const Source& s) { return s.name == "schema"; })) {
    return Status::error(fmt::format("{} holds no store (no schema file)", dir), ENOENT);
  }
  uint64_t cut_segment = UINT64_MAX, cut_end = UINT64_MAX;
  if (access.live()) {
    LiveMark m;
    st = access.cut(m);
    if (!st.ok()) return st;
    cut_segment = m.segment;
    cut_end = m.end;
    cut_seq = m.seq;
  }
  // The log's chain as the one reader finds it (up to the cut when
  // served): each segment up to the end of its last entry, so neither a
  // torn tail nor a free segment is copied.
  Log::Options lo;
  lo.read_only = true;
  lo.cut_segment = cut_segment;
  lo.cut_end = cut_end;
  std::unique_ptr<Log> log;
  LogOpenReport opened;
  st = Log::open(io, dir, lo, [](const LogEntry&) { return Status::good(); }, log, opened);
  if (!st.ok()) return st;
  if (!access.live()) cut_seq = log->last_seq();
  for (const Source& s : fixed.files()) {
    st = copier.copy(s, dir + "/" + s.name, partial + "/" + s.name, s.size, 0);
    if (!st.ok()) return st;
  }
  for (const Log::Segment& seg : log->segments()) {
    Source s{fmt::format("log-{}", seg.number), seg.fd, seg.size};
    st = copier.copy(s, dir + "/" + s.name, partial + "/" + s.name, seg.used, seg.size);
    if (!st.ok()) return st;
  }
  return sync_directory(io, partial);
}

// Takes the source as a reader and copies it into DEST.partial, synced.
Status copy_into_partial(Io& io, const std::string& dir, const std::string& partial, BackupReport& report,
                         const BackupProgress& progress, uint64_t& cut_seq) {
  ReadAccess access(io);
  Status st = access.take(dir);
  if (!st.ok()) return st;
  report.live = access.live();
  report.holder = access.holder();
  Copier copier(io, report, progress);
  return copy_store(io, access, dir, partial, copier, cut_seq);
}

}  // namespace

// DEST.partial made, filled and synced; renamed to DEST; the parent synced;
// then verified. A crash at any point leaves DEST absent or whole.
Status backup(Io& io, const std::string& dir, const std::string& to, BackupReport& report,
              const BackupProgress& progress) {
  std::string partial = to + ".partial";
  Status st = make_partial(io, to, partial);
  if (!st.ok()) return st;
  uint64_t cut_seq = 0;
  st = copy_into_partial(io, dir, partial, report, progress, cut_seq);
  if (!st.ok()) {
    remove_copy(io, partial);
    return st;
  }
  io.point("backup.before_rename");  // DEST.partial whole and synced
  if (int rc = io.rename(partial, to); rc < 0) {
    remove_copy(io, partial);
    return Status::error(fmt::format("cannot rename {} to {}: {}", partial, to, std::strerror(-rc)), -rc);
  }
  io.point("backup.after_rename");  // DEST whole; the rename not yet durable
  std::string parent = std::filesystem::path(to).parent_path().string();
  st = sync_directory(io, parent.empty() ? "." : parent);
  if (!st.ok()) {
    // Whether the rename is durable is unknown: a refusal leaves no DEST
    // (one a retry would be refused for) any more than a DEST.partial.
    remove_copy(io, to);
    return st;
  }
  io.point("backup.after_dir_sync");
  return verify(io, to, cut_seq, report.live, report);
}

}  // namespace aup::storage

#include "storage/copy.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "storage/file_io.h"
#include "storage/live.h"
#include "storage/log.h"
#include "storage/memory_tables.h"
#include "storage/recovery.h"

namespace aup::storage {

namespace {

constexpr size_t kChunkBytes = size_t{1} << 20;
constexpr const char* kPartial = "copy.partial";
constexpr const char* kCopy = "copy";
constexpr const char* kManifest = "MANIFEST";

Status failed(std::string_view what, const std::string& path, int err) {
  return Status::error(fmt::format("{} {}: {}", what, path, std::strerror(err)), err);
}

// A file of the source, open for reading.
struct Source {
  std::string name;
  int fd = -1;
  uint64_t size = 0;
};

// The source files copied as they are, closed when it ends.
class Sources {
 public:
  explicit Sources(Io& io) : io_(io) {}
  ~Sources() {
    for (Source& s : files_) io_.close(s.fd);
  }
  Sources(const Sources&) = delete;
  Sources& operator=(const Sources&) = delete;

  // Opens the schema file, the term history and the images.
  Status open(const std::string& dir);
  const std::vector<Source>& files() const { return files_; }

 private:
  Io& io_;
  std::vector<Source> files_;
};

// Whether `name` is a file copied as it is: the schema file, the term
// history (storage/terms.h) or an image (not one being written, `.new`).
// The log is copied as its reader finds it.
bool copied(std::string_view name) {
  if (name == "schema" || name == "terms" || name == "image.vars") return true;
  return name.rfind("image-", 0) == 0 && (name.size() < 10 || name.substr(name.size() - 4) != ".new");
}

// Whether `name` is a file of a store's state (what a copy replaces).
bool store_file(std::string_view name) {
  return copied(name) || name.rfind("log-", 0) == 0 || name == "cut" || name.rfind("image-", 0) == 0;
}

Status Sources::open(const std::string& dir) {
  std::vector<std::string> names;
  if (int rc = io_.list_dir(dir, names); rc < 0) return failed("cannot list", dir, -rc);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (!copied(name)) continue;
    Source s;
    s.name = name;
    std::string path = dir + "/" + name;
    s.fd = io_.open(path, O_RDONLY, 0);
    if (s.fd < 0) return failed("cannot open", path, -s.fd);
    int64_t size = io_.file_size(s.fd);
    if (size < 0) {
      io_.close(s.fd);
      return failed("cannot read", path, static_cast<int>(-size));
    }
    s.size = static_cast<uint64_t>(size);
    files_.push_back(s);
  }
  return Status::good();
}

// The first `bytes` of source `s` (`from` its path) into the sink, as
// file `s.name` of `alloc` bytes.
Status send_file(Io& io, const Source& s, const std::string& from, uint64_t bytes, uint64_t alloc, CopySink& sink,
                 CopyReport& report, const CopyProgress& progress, std::vector<uint8_t>& buf) {
  // A segment's used bytes are within its size (the log's reader stops at
  // its end), and a whole file is copied as it is.
  assert(alloc == 0 ? bytes == s.size : bytes <= alloc);
  Status st = sink.begin_file(s.name, bytes, alloc);
  for (uint64_t at = 0; at < bytes && st.ok();) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, bytes - at));
    size_t got = 0;
    st = read_at(io, s.fd, buf.data(), want, at, from, got);
    // A source shorter than it was when opened: it changed.
    if (st.ok() && got == 0) st = failed("cannot read", from, EIO);
    if (st.ok()) st = sink.write(buf.data(), got);
    at += got;
    report.bytes += got;
    if (progress) progress(report.bytes);
  }
  if (st.ok()) st = sink.end_file();
  if (st.ok()) ++report.files;
  return st;
}

// The copy's files, in order: the schema, the term history and the images
// (open before the cut), then the segments up to it.
Status copy_files(Io& io, ReadAccess& access, const std::string& dir, CopySink& sink, CopyReport& report,
                  const CopyProgress& progress) {
  Sources fixed(io);
  Status st = fixed.open(dir);
  if (!st.ok()) return st;
  if (std::none_of(fixed.files().begin(), fixed.files().end(), [](const Source& s) { return s.name == "schema"; })) {
    return Status::error(fmt::format("{} holds no store (no schema file)", dir), ENOENT);
  }
  Log::Options lo;
  lo.read_only = true;
  if (access.live()) {
    LiveMark m;
    st = access.cut(m);
    if (!st.ok()) return st;
    lo.cut_segment = m.segment;
    lo.cut_end = m.end;
    report.seq = m.seq;
  }
  // The log's chain as the one reader finds it (up to the cut when
  // served): each segment up to the end of its last entry, so neither a
  // torn tail nor a free segment is copied.
  std::unique_ptr<Log> log;
  LogOpenReport opened;
  st = Log::open(io, dir, lo, [](const LogEntry&) { return Status::good(); }, log, opened);
  if (!st.ok()) return st;
  if (!access.live()) report.seq = log->last_seq();
  std::vector<uint8_t> buf(kChunkBytes);
  for (const Source& s : fixed.files()) {
    st = send_file(io, s, dir + "/" + s.name, s.size, 0, sink, report, progress, buf);
    if (!st.ok()) return st;
  }
  for (const Log::Segment& seg : log->segments()) {
    Source s{fmt::format("log-{}", seg.number), seg.fd, seg.size};
    st = send_file(io, s, dir + "/" + s.name, seg.used, seg.size, sink, report, progress, buf);
    if (!st.ok()) return st;
  }
  return Status::good();
}

// Every file of `dir` removed, then `dir` itself; what cannot be removed
// stays.
void remove_tree(Io& io, const std::string& dir) {
  std::vector<std::string> names;
  if (io.list_dir(dir, names) < 0) return;
  for (const std::string& name : names) io.unlink(dir + "/" + name);
  io.rmdir(dir);
}

}  // namespace

// ---- DirSink ----------------------------------------------------------------------------

DirSink::~DirSink() {
  if (fd_ >= 0) io_.close(fd_);
}

Status DirSink::begin_file(const std::string& name, uint64_t bytes, uint64_t alloc) {
  assert(fd_ < 0);  // end_file() closes the one before
  path_ = dir_ + "/" + name;
  fd_ = io_.open(path_, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd_ < 0) {
    int err = -fd_;
    fd_ = -1;
    return failed("cannot create", path_, err);
  }
  at_ = 0;
  bytes_ = bytes;
  if (alloc > 0) {
    if (int rc = io_.fallocate(fd_, 0, static_cast<off_t>(alloc)); rc < 0) {
      return Status::error(fmt::format("cannot allocate {} bytes for {}: {}", alloc, path_, std::strerror(-rc)), -rc);
    }
  }
  return Status::good();
}

Status DirSink::write(const uint8_t* p, size_t n) {
  assert(fd_ >= 0 && at_ + n <= bytes_);  // no more than begin_file() said
  Status st = write_all(io_, fd_, p, n, at_, path_);
  at_ += n;
  return st;
}

Status DirSink::end_file() {
  assert(fd_ >= 0);
  if (at_ != bytes_) {
    return Status::error(fmt::format("{} ends at byte {}, short of the {} bytes it was to have", path_, at_, bytes_),
                         EIO);
  }
  int rc = io_.fsync(fd_);
  io_.close(fd_);
  fd_ = -1;
  if (rc < 0) return failed("cannot sync", path_, -rc);
  ++files_;
  io_.point("backup.copied");
  return Status::good();
}

// ---- copying and verifying ------------------------------------------------------------

Status copy_store(Io& io, const std::string& dir, CopySink& sink, CopyReport& report, const CopyProgress& progress) {
  ReadAccess access(io);
  Status st = access.take(dir);
  if (!st.ok()) return st;
  report.live = access.live();
  report.holder = access.holder();
  return copy_files(io, access, dir, sink, report, progress);
}

// Recovery refuses the first damage (every digest and the chain are
// checked), so only a torn tail is heard here.
Status verify_copy(Io& io, const std::string& dir, uint64_t want_seq, bool exact, uint64_t& seq, uint64_t& rows) {
  RecoveryOptions ro;
  ro.log.read_only = true;
  RecoveryReporter quiet;
  Recovery recovery(io, dir, ro, quiet);
  Schema stored;
  Status st = recovery.read_schema(stored);
  if (!st.ok()) return st;
  MemoryTables tables(stored);
  st = recovery.load_images(stored, stored, tables);
  if (st.ok()) st = recovery.read_log();
  if (!st.ok()) return Status::error("the copy does not verify: " + st.message, st.err);
  if (exact && recovery.last_seq() != want_seq) {
    return Status::error(fmt::format("the copy holds save {}, not save {} it was cut at", recovery.last_seq(), want_seq));
  }
  if (!exact && recovery.last_seq() < want_seq) {
    return Status::error(fmt::format("the copy holds save {}, short of save {} where the source's log ends",
                                     recovery.last_seq(), want_seq));
  }
  seq = recovery.last_seq();
  rows = 0;
  for (uint32_t t = 0; t < stored.tables.size(); ++t) rows += tables.table(t).size();
  return Status::good();
}

// ---- a replica's copy -----------------------------------------------------------------

Status begin_received_copy(Io& io, const std::string& dir, std::string& partial) {
  partial = fmt::format("{}/{}", dir, kPartial);
  remove_tree(io, partial);
  if (int rc = io.mkdir(partial, 0755); rc < 0) return failed("cannot create", partial, -rc);
  return Status::good();
}

Status end_received_copy(Io& io, const std::string& dir, uint64_t seq) {
  std::string partial = fmt::format("{}/{}", dir, kPartial), copy = fmt::format("{}/{}", dir, kCopy);
  uint64_t held = 0, rows = 0;
  Status st = verify_copy(io, partial, seq, /*exact=*/true, held, rows);
  std::vector<std::string> names;
  if (int rc = st.ok() ? io.list_dir(partial, names) : 0; rc < 0) st = failed("cannot list", partial, -rc);
  if (!st.ok()) return st;
  std::sort(names.begin(), names.end());
  std::string manifest;
  for (const std::string& n : names) manifest += n + "\n";
  st = write_file_durably(io, partial, kManifest,
                          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(manifest.data()), manifest.size()),
                          DurableWrite{});
  if (!st.ok()) return st;
  io.point("copy.received");
  remove_tree(io, copy);  // an older copy never installed
  if (int rc = io.rename(partial, copy); rc < 0) return failed("cannot rename", partial + " to " + copy, -rc);
  return sync_directory(io, dir);
}

namespace {

// The manifest's names (the files of the copy, whether moved yet or not).
Status read_manifest(Io& io, const std::string& copy, std::vector<std::string>& names) {
  std::vector<uint8_t> bytes;
  Status st = read_file(io, copy + "/" + kManifest, bytes);
  if (!st.ok()) return st;
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view name = text.substr(0, nl);
    if (nl == std::string_view::npos || name.empty() || name.find('/') != std::string_view::npos) {
      return Status::error(fmt::format("{}/{} is damaged: one file name a line", copy, kManifest));
    }
    names.emplace_back(name);
    text.remove_prefix(nl + 1);
  }
  return Status::good();
}

// Moves what is left of the copy into `dir`, then removes the store files
// it does not name.
Status move_copy_in(Io& io, const std::string& dir, const std::string& copy, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    int rc = io.rename(copy + "/" + n, dir + "/" + n);
    if (rc < 0 && rc != -ENOENT) return failed("cannot rename", copy + "/" + n, -rc);
  }
  std::vector<std::string> present;
  if (int rc = io.list_dir(dir, present); rc < 0) return failed("cannot list", dir, -rc);
  for (const std::string& n : present) {
    if (!store_file(n) || std::find(names.begin(), names.end(), n) != names.end()) continue;
    if (int rc = io.unlink(dir + "/" + n); rc < 0) return failed("cannot remove", dir + "/" + n, -rc);
  }
  Status st = sync_directory(io, dir);
  if (st.ok()) io.point("copy.moved");
  return st;
}

}  // namespace

Status install_copy(Io& io, const std::string& dir, bool& installed) {
  installed = false;
  remove_tree(io, fmt::format("{}/{}", dir, kPartial));  // a receipt that did not finish
  std::string copy = fmt::format("{}/{}", dir, kCopy);
  std::vector<std::string> names;
  Status st = read_manifest(io, copy, names);
  if (st.err == ENOENT) {
    remove_tree(io, copy);  // renamed into place only with its manifest: none means none
    return Status::good();
  }
  if (st.ok()) st = move_copy_in(io, dir, copy, names);
  if (!st.ok()) return st;
  if (int rc = io.unlink(copy + "/" + kManifest); rc < 0) return failed("cannot remove", copy + "/" + kManifest, -rc);
  if (int rc = io.rmdir(copy); rc < 0) return failed("cannot remove", copy, -rc);
  installed = true;
  return sync_directory(io, dir);
}

}  // namespace aup::storage

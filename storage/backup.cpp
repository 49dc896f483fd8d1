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

#include "storage/copy.h"
#include "storage/file_io.h"

namespace aup::storage {

namespace {

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

}  // namespace

// DEST.partial made, filled and synced; renamed to DEST; the parent synced;
// then verified. A crash at any point leaves DEST absent or whole.
Status backup(Io& io, const std::string& dir, const std::string& to, BackupReport& report,
              const BackupProgress& progress) {
  std::string partial = to + ".partial";
  Status st = make_partial(io, to, partial);
  if (!st.ok()) return st;
  CopyReport copied;
  DirSink sink(io, partial);
  st = copy_store(io, dir, sink, copied, progress);
  report.live = copied.live;
  report.holder = copied.holder;
  report.files = copied.files;
  report.bytes = copied.bytes;
  if (st.ok()) st = sync_directory(io, partial);
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
  // A served store's copy holds exactly the save it was cut at, a stopped
  // store's at least the last save of the source's log.
  return verify_copy(io, to, copied.seq, copied.live, report.seq, report.rows);
}

}  // namespace aup::storage

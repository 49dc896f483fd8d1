#include "storage/file_io.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <cassert>
#include <cerrno>
#include <cstring>

namespace aup::storage {

namespace {

Status failed(std::string_view what, const std::string& path, int e) {
  return Status::error(fmt::format("{} {}: {}", what, path, std::strerror(e)), e);
}

void point(Io& io, std::string_view name) {
  if (!name.empty()) io.point(name);
}

}  // namespace

Status write_all(Io& io, int fd, const void* p, size_t n, uint64_t at, const std::string& path) {
  const auto* bytes = static_cast<const uint8_t*>(p);
  size_t done = 0;
  while (done < n) {
    ssize_t w = io.pwrite(fd, bytes + done, n - done, static_cast<off_t>(at + done));
    if (w <= 0) return failed("cannot write", path, w < 0 ? static_cast<int>(-w) : EIO);
    done += static_cast<size_t>(w);
  }
  return Status::good();
}

Status read_at(Io& io, int fd, void* out, size_t n, uint64_t at, const std::string& path, size_t& got) {
  auto* bytes = static_cast<uint8_t*>(out);
  got = 0;
  while (got < n) {
    ssize_t r = io.pread(fd, bytes + got, n - got, static_cast<off_t>(at + got));
    if (r < 0) return failed("cannot read", path, static_cast<int>(-r));
    if (r == 0) break;  // the file's end
    got += static_cast<size_t>(r);
  }
  return Status::good();
}

Status sync_directory(Io& io, const std::string& dir) {
  int dfd = io.open(dir, O_RDONLY | O_DIRECTORY, 0);
  int rc = dfd < 0 ? dfd : io.fsync(dfd);
  if (dfd >= 0) io.close(dfd);
  if (rc < 0) return failed("cannot sync the directory", dir, -rc);
  return Status::good();
}

Status read_file(Io& io, const std::string& path, std::vector<uint8_t>& out) {
  int fd = io.open(path, O_RDONLY, 0);
  if (fd < 0) return failed("cannot open", path, -fd);
  int64_t size = io.file_size(fd);
  Status st;
  size_t got = 0;
  if (size < 0) {
    st = failed("cannot read", path, static_cast<int>(-size));
  } else {
    out.resize(static_cast<size_t>(size));
    st = read_at(io, fd, out.data(), out.size(), 0, path, got);
  }
  io.close(fd);
  if (st.ok() && got != out.size()) {
    return Status::error(
        fmt::format("cannot read {}: it ends at byte {}, not at byte {} as when it was opened", path, got, size), EIO);
  }
  return st;
}

Status write_file_durably(Io& io, const std::string& dir, const std::string& name, std::span<const uint8_t> bytes,
                          const DurableWrite& how) {
  assert(bytes.empty() || !how.fill);  // one source of content
  std::string path = dir + "/" + name, tmp = path + ".new";
  int fd = io.open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return failed("cannot create", tmp, -fd);
  Status st = how.fill ? how.fill(fd, tmp) : write_all(io, fd, bytes.data(), bytes.size(), 0, tmp);
  if (st.ok()) {
    point(io, how.points.before_fsync);
    if (int rc = io.fsync(fd); rc < 0) st = failed("cannot sync", tmp, -rc);
  }
  io.close(fd);
  // A NAME.new that failed is never needed: removed now, it gives its
  // space back (a full disk is the likely failure). If the removal fails
  // too, the next open removes it (storage/recovery.h).
  if (!st.ok()) {
    io.unlink(tmp);
    return st;
  }
  point(io, how.points.before_rename);
  if (int rc = io.rename(tmp, path); rc < 0) {
    io.unlink(tmp);
    return failed("cannot rename", tmp + " to " + path, -rc);
  }
  point(io, how.points.after_rename);
  st = sync_directory(io, dir);
  if (!st.ok()) return st;
  point(io, how.points.after_dir_sync);
  return Status::good();
}

bool is_leftover(std::string_view name) {
  constexpr std::string_view kNew = ".new";
  if (name.size() <= kNew.size() || name.substr(name.size() - kNew.size()) != kNew) return false;
  std::string_view base = name.substr(0, name.size() - kNew.size());
  auto starts = [&](std::string_view prefix) { return base.size() > prefix.size() && base.rfind(prefix, 0) == 0; };
  return base == "schema" || base == "terms" || base == "replica-of" || base == "cut" || base == "image.vars" ||
         starts("image-") || starts("cut-");
}

}  // namespace aup::storage

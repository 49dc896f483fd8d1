#include "storage/io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace aup::storage {

namespace {
int result(int rc) { return rc < 0 ? -errno : rc; }
ssize_t sresult(ssize_t rc) { return rc < 0 ? -errno : rc; }
}  // namespace

int SystemIo::open(const std::string& path, int flags, int mode) {
  return result(::open(path.c_str(), flags | O_CLOEXEC, mode));
}
int SystemIo::close(int fd) { return result(::close(fd)); }
ssize_t SystemIo::pwrite(int fd, const void* data, size_t n, off_t at) {
  ssize_t rc;
  do {
    rc = ::pwrite(fd, data, n, at);
  } while (rc < 0 && errno == EINTR);
  return sresult(rc);
}
ssize_t SystemIo::pread(int fd, void* data, size_t n, off_t at) {
  ssize_t rc;
  do {
    rc = ::pread(fd, data, n, at);
  } while (rc < 0 && errno == EINTR);
  return sresult(rc);
}
int SystemIo::fdatasync(int fd) { return result(::fdatasync(fd)); }
int SystemIo::fsync(int fd) { return result(::fsync(fd)); }
int SystemIo::fallocate(int fd, off_t at, off_t n) {
  // posix_fallocate returns the error instead of setting errno.
  int rc = ::posix_fallocate(fd, at, n);
  return rc == 0 ? 0 : -rc;
}
int SystemIo::sync_file_range(int fd, off_t at, off_t n) {
  return result(::sync_file_range(fd, at, n, SYNC_FILE_RANGE_WRITE));
}
int SystemIo::ftruncate(int fd, off_t n) { return result(::ftruncate(fd, n)); }
int SystemIo::rename(const std::string& from, const std::string& to) {
  return result(::rename(from.c_str(), to.c_str()));
}
int SystemIo::unlink(const std::string& path) { return result(::unlink(path.c_str())); }
int SystemIo::mkdir(const std::string& path, int mode) {
  return result(::mkdir(path.c_str(), static_cast<mode_t>(mode)));
}
int SystemIo::rmdir(const std::string& path) { return result(::rmdir(path.c_str())); }
int SystemIo::map_shared(int fd, size_t bytes, bool writable, void*& out) {
  void* m = ::mmap(nullptr, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return -errno;
  out = m;
  return 0;
}
int SystemIo::unmap(void* at, size_t bytes) { return result(::munmap(at, bytes)); }
int SystemIo::flock(int fd, int operation) { return result(::flock(fd, operation)); }
int SystemIo::free_space(const std::string& dir, uint64_t& bytes) {
  struct statvfs v;
  if (::statvfs(dir.c_str(), &v) != 0) return -errno;
  bytes = static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
  return 0;
}
int64_t SystemIo::file_size(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return -errno;
  return st.st_size;
}
int SystemIo::list_dir(const std::string& dir, std::vector<std::string>& names) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return -errno;
  errno = 0;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  int e = errno;  // readdir returns null at the end and on an error, which sets errno
  ::closedir(d);
  return e ? -e : 0;
}
int SystemIo::lock(const std::string& path, bool exclusive, std::string& holder) {
  int fd = ::open(path.c_str(), (exclusive ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0644);
  if (fd < 0) return -errno;
  if (::flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    int e = errno;
    char pid[32] = {};
    ssize_t n = e == EWOULDBLOCK ? ::pread(fd, pid, sizeof pid - 1, 0) : 0;
    holder.assign(pid, n > 0 ? static_cast<size_t>(n) : 0);
    ::close(fd);
    return -e;
  }
  std::string me = std::to_string(::getpid());
  if (exclusive && (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0)) {
    // The lock holds without the pid; the pid is only for others' messages.
  }
  return fd;
}

// ---- faults -------------------------------------------------------------------

// Every rule about `what` counts this occurrence; the first whose count
// comes due fires.
FaultRule* FaultIo::hit(std::string_view what) {
  std::lock_guard<std::mutex> lock(mu_);
  FaultRule* fired = nullptr;
  for (FaultRule& r : rules_) {
    if (r.what != what) continue;
    if (++r.seen != r.nth || fired) continue;
    if (r.action == FaultRule::Action::Crash) {
      // A power cut: no destructor, no flush, nothing more reaches the disk.
      std::fprintf(stderr, "aup: fault plan: crash at %.*s (%llu)\n", static_cast<int>(what.size()),
                   what.data(), static_cast<unsigned long long>(r.nth));
      std::_Exit(kCrashExitCode);
    }
    fired = &r;
  }
  if (fired && announce_) {
    const auto nth = static_cast<unsigned long long>(fired->nth);
    if (fired->action == FaultRule::Action::Short) {
      std::fprintf(stderr, "aup: fault plan: short write at %.*s (%llu)\n", static_cast<int>(what.size()),
                   what.data(), nth);
    } else {
      std::fprintf(stderr, "aup: fault plan: %.*s (%llu) fails: %s\n", static_cast<int>(what.size()), what.data(),
                   nth, std::strerror(fired->err));
    }
  }
  return fired;
}

int FaultIo::open(const std::string& path, int flags, int mode) {
  if (FaultRule* r = hit("open")) return -r->err;
  return inner_->open(path, flags, mode);
}
ssize_t FaultIo::pwrite(int fd, const void* data, size_t n, off_t at) {
  if (FaultRule* r = hit("pwrite")) {
    if (r->action == FaultRule::Action::Short && n > 1) return inner_->pwrite(fd, data, n / 2, at);
    return -r->err;
  }
  return inner_->pwrite(fd, data, n, at);
}
ssize_t FaultIo::pread(int fd, void* data, size_t n, off_t at) {
  if (FaultRule* r = hit("pread")) return -r->err;
  return inner_->pread(fd, data, n, at);
}
int FaultIo::fdatasync(int fd) {
  if (FaultRule* r = hit("fdatasync")) return -r->err;
  return inner_->fdatasync(fd);
}
int FaultIo::fsync(int fd) {
  if (FaultRule* r = hit("fsync")) return -r->err;
  return inner_->fsync(fd);
}
int FaultIo::fallocate(int fd, off_t at, off_t n) {
  if (FaultRule* r = hit("fallocate")) return -r->err;
  return inner_->fallocate(fd, at, n);
}
int FaultIo::sync_file_range(int fd, off_t at, off_t n) {
  if (FaultRule* r = hit("sync_file_range")) return -r->err;
  return inner_->sync_file_range(fd, at, n);
}
int FaultIo::ftruncate(int fd, off_t n) {
  if (FaultRule* r = hit("ftruncate")) return -r->err;
  return inner_->ftruncate(fd, n);
}
int FaultIo::rename(const std::string& from, const std::string& to) {
  if (FaultRule* r = hit("rename")) return -r->err;
  return inner_->rename(from, to);
}
int FaultIo::unlink(const std::string& path) {
  if (FaultRule* r = hit("unlink")) return -r->err;
  return inner_->unlink(path);
}
int FaultIo::mkdir(const std::string& path, int mode) {
  if (FaultRule* r = hit("mkdir")) return -r->err;
  return inner_->mkdir(path, mode);
}
int FaultIo::rmdir(const std::string& path) {
  if (FaultRule* r = hit("rmdir")) return -r->err;
  return inner_->rmdir(path);
}
int FaultIo::map_shared(int fd, size_t bytes, bool writable, void*& out) {
  if (FaultRule* r = hit("map_shared")) return -r->err;
  return inner_->map_shared(fd, bytes, writable, out);
}
int FaultIo::flock(int fd, int operation) {
  if (FaultRule* r = hit("flock")) return -r->err;
  return inner_->flock(fd, operation);
}
int FaultIo::list_dir(const std::string& dir, std::vector<std::string>& names) {
  if (FaultRule* r = hit("list_dir")) return -r->err;
  return inner_->list_dir(dir, names);
}
int FaultIo::lock(const std::string& path, bool exclusive, std::string& holder) {
  if (FaultRule* r = hit("lock")) return -r->err;
  return inner_->lock(path, exclusive, holder);
}
void FaultIo::point(std::string_view name) { hit(name); }

// ---- plans ------------------------------------------------------------------------

namespace {

// The calls a fail rule may name. A misspelt call would make a rule that
// never fires, and a test that tests nothing. (Crash rules name points,
// which are not listed here.)
constexpr std::string_view kCalls[] = {"open",     "pread",  "pwrite", "fdatasync", "fsync", "fallocate",
                                       "sync_file_range", "ftruncate", "rename", "unlink", "mkdir", "rmdir",
                                       "list_dir", "lock",  "flock",  "map_shared"};

std::string call_list() {
  std::string s;
  for (std::string_view c : kCalls) s += (s.empty() ? "" : ", ") + std::string(c);
  return s;
}

// ACTION:WHAT:N[:ERRNO], split at the colons.
bool parse_rule(std::string_view rule, FaultRule& r, std::string& error) {
  auto refuse = [&](std::string why) {
    error = std::move(why);
    return false;
  };
  std::vector<std::string_view> parts;
  while (true) {
    size_t colon = rule.find(':');
    parts.push_back(rule.substr(0, colon));
    if (colon == std::string_view::npos) break;
    rule = rule.substr(colon + 1);
  }
  if (parts.size() < 3) return refuse("a fault rule is ACTION:WHAT:N[:ERRNO]");
  if (parts[0] == "crash") {
    r.action = FaultRule::Action::Crash;
  } else if (parts[0] == "fail") {
    r.action = FaultRule::Action::Fail;
  } else if (parts[0] == "short") {
    r.action = FaultRule::Action::Short;
  } else {
    return refuse("unknown fault action `" + std::string(parts[0]) + "` (crash, fail, short)");
  }
  r.what = std::string(parts[1]);
  bool known = std::find(std::begin(kCalls), std::end(kCalls), r.what) != std::end(kCalls);
  if (r.action != FaultRule::Action::Crash && !known) {
    return refuse("unknown call `" + r.what + "` (" + call_list() + ")");
  }
  if (r.action == FaultRule::Action::Short && r.what != "pwrite") return refuse("only pwrite can be short");
  r.nth = std::strtoull(std::string(parts[2]).c_str(), nullptr, 10);
  if (r.nth == 0) return refuse("a fault rule's N counts from 1");
  if (parts.size() > 3) {
    std::string e(parts[3]);
    r.err = e == "EIO"      ? EIO
            : e == "ENOSPC" ? ENOSPC
            : e == "EDQUOT" ? EDQUOT
            : e == "EROFS"  ? EROFS
                            : std::atoi(e.c_str());
    if (r.err <= 0) return refuse("unknown errno `" + e + "`");
  }
  return true;
}

}  // namespace

bool parse_fault_plan(std::string_view spec, std::vector<FaultRule>& out, std::string& error) {
  // Bounded: a plan is a handful of rules, never input from clients.
  constexpr size_t kMaxRules = 64;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view rule = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    FaultRule r;
    if (!parse_rule(rule, r, error)) return false;
    if (out.size() == kMaxRules) {
      error = "too many fault rules";
      return false;
    }
    out.push_back(r);
  }
  return true;
}

std::unique_ptr<Io> io_from_environment(std::string& error) {
  const char* spec = std::getenv("AUP_FAULTS");
  if (!spec || !*spec) return std::make_unique<SystemIo>();
  std::vector<FaultRule> rules;
  if (!parse_fault_plan(spec, rules, error)) return nullptr;
  return std::make_unique<FaultIo>(std::make_unique<SystemIo>(), std::move(rules), /*announce=*/true);
}

}  // namespace aup::storage

#include "storage/io.h"

#include <fcntl.h>
#include <sys/stat.h>
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
int64_t SystemIo::file_size(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return -errno;
  return st.st_size;
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
void FaultIo::point(std::string_view name) { hit(name); }

// ---- plans ------------------------------------------------------------------------

bool parse_fault_plan(std::string_view spec, std::vector<FaultRule>& out, std::string& error) {
  // Bounded: a plan is a handful of rules, never input from clients.
  constexpr size_t kMaxRules = 64;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view rule = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    std::vector<std::string_view> parts;
    while (true) {
      size_t colon = rule.find(':');
      parts.push_back(rule.substr(0, colon));
      if (colon == std::string_view::npos) break;
      rule = rule.substr(colon + 1);
    }
    FaultRule r;
    if (parts.size() < 3) {
      error = "a fault rule is ACTION:WHAT:N[:ERRNO]";
      return false;
    }
    if (parts[0] == "crash") {
      r.action = FaultRule::Action::Crash;
    } else if (parts[0] == "fail") {
      r.action = FaultRule::Action::Fail;
    } else if (parts[0] == "short") {
      r.action = FaultRule::Action::Short;
    } else {
      error = "unknown fault action `" + std::string(parts[0]) + "` (crash, fail, short)";
      return false;
    }
    r.what = std::string(parts[1]);
    // A misspelt call would make a rule that never fires, and a test that
    // tests nothing. (Crash rules name points, which are not listed here.)
    static constexpr std::string_view kCalls[] = {"open",      "pread",           "pwrite",    "fdatasync", "fsync",
                                                  "fallocate", "sync_file_range", "ftruncate", "rename",    "unlink"};
    if (r.action != FaultRule::Action::Crash &&
        std::find(std::begin(kCalls), std::end(kCalls), parts[1]) == std::end(kCalls)) {
      error = "unknown call `" + r.what +
              "` (open, pread, pwrite, fdatasync, fsync, fallocate, sync_file_range, ftruncate, rename, unlink)";
      return false;
    }
    if (r.action == FaultRule::Action::Short && r.what != "pwrite") {
      error = "only pwrite can be short";
      return false;
    }
    r.nth = std::strtoull(std::string(parts[2]).c_str(), nullptr, 10);
    if (r.nth == 0) {
      error = "a fault rule's N counts from 1";
      return false;
    }
    if (parts.size() > 3) {
      std::string e(parts[3]);
      r.err = e == "EIO"      ? EIO
              : e == "ENOSPC" ? ENOSPC
              : e == "EDQUOT" ? EDQUOT
              : e == "EROFS"  ? EROFS
                              : std::atoi(e.c_str());
      if (r.err <= 0) {
        error = "unknown errno `" + e + "`";
        return false;
      }
    }
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

// The store's system calls, behind one interface so tests can break them.
//
// Every file operation of storage/ goes through an Io: the store's files,
// its directory, the live mark's mapping (storage/live.h) and a backup's
// directories. SystemIo makes the real calls. FaultIo wraps it and,
// following a plan, makes the Nth call of a kind fail (EIO, ENOSPC, a short
// write) or stops the process right at a named point of a multi-step change
// (`_exit(kCrashExitCode)`, a simulated power cut: nothing after that point
// reaches the disk; docs/store-format.md lists the points). Tests check
// what the next open finds. A plan comes from a test, or from the
// environment variable AUP_FAULTS for whole-process crash tests:
//
//   AUP_FAULTS="crash:commit.after_write:3"   stop the 3rd time that point is reached
//   AUP_FAULTS="fail:fdatasync:2:EIO"         the 2nd fdatasync returns EIO
//   AUP_FAULTS="short:pwrite:1"               the 1st pwrite writes half and stops
//
// Several rules may be joined with commas. A fail rule names a call of Io
// (open, pread, pwrite, fdatasync, fsync, fallocate, sync_file_range,
// ftruncate, rename, unlink, mkdir, rmdir, list_dir, lock, flock,
// map_shared) and an errno (EIO, ENOSPC, EDQUOT, EROFS or a number); a
// short rule names pwrite. close, file_size and unmap are never failed: a
// failure there changes nothing a test could see. A plan from AUP_FAULTS
// says on stderr when a fail or short rule fires (`aup: fault plan: ...`),
// so a test can tell a fault that fired from one never reached. Rules count
// calls from every thread (the owner's and a checkpoint's) under one lock.
// Operating errors come back as negative errno values, never exceptions.
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace aup::storage {

// The exit status of a process a crash rule stopped.
inline constexpr int kCrashExitCode = 86;

class Io {
 public:
  virtual ~Io() = default;
  // Each returns >= 0 on success, -errno on failure.
  virtual int open(const std::string& path, int flags, int mode) = 0;
  virtual int close(int fd) = 0;
  virtual ssize_t pwrite(int fd, const void* data, size_t n, off_t at) = 0;
  virtual ssize_t pread(int fd, void* data, size_t n, off_t at) = 0;
  virtual int fdatasync(int fd) = 0;
  virtual int fsync(int fd) = 0;
  virtual int fallocate(int fd, off_t at, off_t n) = 0;
  virtual int sync_file_range(int fd, off_t at, off_t n) = 0;
  virtual int ftruncate(int fd, off_t n) = 0;
  virtual int rename(const std::string& from, const std::string& to) = 0;
  virtual int unlink(const std::string& path) = 0;
  // A directory: the store's (made by its first open) and a backup's.
  virtual int mkdir(const std::string& path, int mode) = 0;
  virtual int rmdir(const std::string& path) = 0;
  virtual int64_t file_size(int fd) = 0;
  // The first `bytes` of the open file `fd`, mapped shared (writable, or
  // read-only), in `out`; the mapping outlives the descriptor. The live
  // mark (storage/live.h): written by the server, read by readers in
  // other processes. The file must be at least `bytes` long (a mapping
  // past its end faults when touched).
  virtual int map_shared(int fd, size_t bytes, bool writable, void*& out) = 0;
  virtual int unmap(void* at, size_t bytes) = 0;
  // The names in a directory (without . and ..), in no particular order:
  // the log's segments, and whether a store without a schema file holds
  // data (storage/store.cpp).
  virtual int list_dir(const std::string& dir, std::vector<std::string>& names) = 0;
  // The store's lock on the file `path` (flock, never waiting). Exclusive:
  // a writer, which creates the file and writes its pid into it (for the
  // messages of those it keeps out). Shared: a reader, which only opens it
  // (-ENOENT when there is none). Returns the descriptor that holds the
  // lock until closed, or -errno: -EWOULDBLOCK when another process holds
  // it, with the pid written in the file (or "") in `holder`.
  virtual int lock(const std::string& path, bool exclusive, std::string& holder) = 0;
  // flock(2) on an open descriptor (LOCK_EX | LOCK_NB, LOCK_UN, ...): the
  // writer's hold on DIR/READERS (storage/live.h).
  virtual int flock(int fd, int operation) = 0;
  // The bytes free to this process on the volume holding `dir` (statvfs),
  // for a refusal's message (no space for a log segment). Never failed by
  // a fault plan: a simulated ENOSPC still reports the real free space.
  virtual int free_space(const std::string& dir, uint64_t& bytes) {
    (void)dir;
    (void)bytes;
    return -ENOSYS;  // an Io that cannot tell (a test's)
  }
  // A named step of a multi-step change (crash tests stop here).
  virtual void point(std::string_view name) { (void)name; }
};

class SystemIo : public Io {
 public:
  int open(const std::string& path, int flags, int mode) override;
  int close(int fd) override;
  ssize_t pwrite(int fd, const void* data, size_t n, off_t at) override;
  ssize_t pread(int fd, void* data, size_t n, off_t at) override;
  int fdatasync(int fd) override;
  int fsync(int fd) override;
  int fallocate(int fd, off_t at, off_t n) override;
  int sync_file_range(int fd, off_t at, off_t n) override;
  int ftruncate(int fd, off_t n) override;
  int rename(const std::string& from, const std::string& to) override;
  int unlink(const std::string& path) override;
  int mkdir(const std::string& path, int mode) override;
  int rmdir(const std::string& path) override;
  int64_t file_size(int fd) override;
  int map_shared(int fd, size_t bytes, bool writable, void*& out) override;
  int unmap(void* at, size_t bytes) override;
  int list_dir(const std::string& dir, std::vector<std::string>& names) override;
  int lock(const std::string& path, bool exclusive, std::string& holder) override;
  int flock(int fd, int operation) override;
  int free_space(const std::string& dir, uint64_t& bytes) override;
};

struct FaultRule {
  enum class Action : uint8_t { Crash, Fail, Short };
  Action action = Action::Fail;
  std::string what;  // a call kind ("pwrite", "fdatasync", ...) or a point name
  uint64_t nth = 1;  // the Nth occurrence (1-based)
  int err = 5;       // Fail: the errno (EIO)
  uint64_t seen = 0;
};

class FaultIo : public Io {
 public:
  // `announce`: say on stderr when a fail or short rule fires.
  FaultIo(std::unique_ptr<Io> inner, std::vector<FaultRule> rules, bool announce = false)
      : inner_(std::move(inner)), rules_(std::move(rules)), announce_(announce) {}

  int open(const std::string& path, int flags, int mode) override;
  int close(int fd) override { return inner_->close(fd); }
  ssize_t pwrite(int fd, const void* data, size_t n, off_t at) override;
  ssize_t pread(int fd, void* data, size_t n, off_t at) override;
  int fdatasync(int fd) override;
  int fsync(int fd) override;
  int fallocate(int fd, off_t at, off_t n) override;
  int sync_file_range(int fd, off_t at, off_t n) override;
  int ftruncate(int fd, off_t n) override;
  int rename(const std::string& from, const std::string& to) override;
  int unlink(const std::string& path) override;
  int mkdir(const std::string& path, int mode) override;
  int rmdir(const std::string& path) override;
  int64_t file_size(int fd) override { return inner_->file_size(fd); }
  int map_shared(int fd, size_t bytes, bool writable, void*& out) override;
  int unmap(void* at, size_t bytes) override { return inner_->unmap(at, bytes); }
  int list_dir(const std::string& dir, std::vector<std::string>& names) override;
  int lock(const std::string& path, bool exclusive, std::string& holder) override;
  int flock(int fd, int operation) override;
  int free_space(const std::string& dir, uint64_t& bytes) override { return inner_->free_space(dir, bytes); }
  void point(std::string_view name) override;

 private:
  // The rule that fires now for `what`, if any (crash rules exit here).
  FaultRule* hit(std::string_view what);
  std::unique_ptr<Io> inner_;
  std::mutex mu_;  // guards the rules' counts: a checkpoint's thread makes calls too
  std::vector<FaultRule> rules_;
  bool announce_;
};

// Parses a plan ("crash:POINT:N,fail:CALL:N:ERRNO,short:CALL:N"); false with
// a message on a malformed one.
bool parse_fault_plan(std::string_view spec, std::vector<FaultRule>& out, std::string& error);

// SystemIo, or a FaultIo following AUP_FAULTS when it is set. A malformed
// plan is reported in `error` (and SystemIo is not silently used instead).
std::unique_ptr<Io> io_from_environment(std::string& error);

}  // namespace aup::storage

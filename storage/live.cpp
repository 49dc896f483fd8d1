#include "storage/live.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cassert>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/core.h>

namespace aup::storage {

namespace {

// DIR/LIVE: eight 8-byte words in this machine's byte order (the file is
// read only by processes on the machine that wrote it). kWordChange is odd
// while the writer changes the save, segment and end (a sequence lock): a
// reader that saw it odd, or changed, reads again.
constexpr uint64_t kMagic = 0x6576696c2d707561;  // "aup-live" read as a little-endian word
constexpr uint64_t kVersion = 1;
enum Word : size_t {
  kWordMagic,
  kWordVersion,
  kWordPid,
  kWordState,
  kWordChange,
  kWordSeq,
  kWordSegment,
  kWordEnd,
  kWords
};
static_assert(kWords == 8);
constexpr size_t kMarkBytes = kWords * sizeof(uint64_t);

// How long a reader waits for the writer to let it in: the writer holds
// READERS only while it unlinks or renames a few files.
constexpr auto kAttachWait = std::chrono::seconds(10);

std::atomic_ref<uint64_t> word(uint64_t* words, Word w) { return std::atomic_ref<uint64_t>(words[w]); }

}  // namespace

// ---- the writer's gate ----------------------------------------------------------

ReadersGate::~ReadersGate() {
  if (fd_ >= 0) io_->close(fd_);
}

Status ReadersGate::open(Io& io, const std::string& dir) {
  io_ = &io;
  std::string path = dir + "/READERS";
  fd_ = io.open(path, O_RDWR | O_CREAT, 0644);
  if (fd_ < 0) return Status::error(fmt::format("cannot create {}: {}", path, std::strerror(-fd_)), -fd_);
  return Status::good();
}

bool ReadersGate::keep_out() { return fd_ < 0 || io_->flock(fd_, LOCK_EX | LOCK_NB) == 0; }

void ReadersGate::let_in() {
  if (fd_ >= 0) io_->flock(fd_, LOCK_UN);
}

// ---- the writer's mark ----------------------------------------------------------

LiveMarkWriter::~LiveMarkWriter() {
  if (!words_) return;
  word(words_, kWordState).store(static_cast<uint64_t>(LiveMark::State::Closed), std::memory_order_release);
  io_->unmap(words_, kMarkBytes);
}

Status LiveMarkWriter::open(Io& io, const std::string& dir) {
  io_ = &io;
  std::string path = dir + "/LIVE";
  int fd = io.open(path, O_RDWR | O_CREAT, 0644);
  if (fd < 0) return Status::error(fmt::format("cannot create {}: {}", path, std::strerror(-fd)), -fd);
  void* m = nullptr;
  const char* step = "create";
  int rc = io.ftruncate(fd, kMarkBytes);
  if (rc == 0) {
    step = "map";
    rc = io.map_shared(fd, kMarkBytes, /*writable=*/true, m);
  }
  io.close(fd);  // the mapping stays
  if (rc < 0) return Status::error(fmt::format("cannot {} {}: {}", step, path, std::strerror(-rc)), -rc);
  words_ = static_cast<uint64_t*>(m);
  // Opening first, so a reader never takes an earlier writer's mark for this one's.
  word(words_, kWordState).store(static_cast<uint64_t>(LiveMark::State::Opening), std::memory_order_release);
  word(words_, kWordMagic).store(kMagic, std::memory_order_relaxed);
  word(words_, kWordVersion).store(kVersion, std::memory_order_relaxed);
  word(words_, kWordPid).store(static_cast<uint64_t>(::getpid()), std::memory_order_release);
  return Status::good();
}

void LiveMarkWriter::publish(uint64_t seq, uint64_t segment, uint64_t end) {
  if (!words_) return;
  // Saves only become durable, and the log only grows (a segment gets a
  // higher number than every earlier one): a mark that moved back would
  // cut a reader (a backup) before saves already answered.
  assert(seq >= seq_ && (segment > segment_ || (segment == segment_ && end >= end_)));
  assert(seq > seq_ || (segment == segment_ && end == end_) || !serving_);
  seq_ = seq, segment_ = segment, end_ = end;
  auto change = word(words_, kWordChange);
  uint64_t c = change.load(std::memory_order_relaxed);
  assert(c % 2 == 0);  // one writer: no update is under way
  change.store(c + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  word(words_, kWordSeq).store(seq, std::memory_order_relaxed);
  word(words_, kWordSegment).store(segment, std::memory_order_relaxed);
  word(words_, kWordEnd).store(end, std::memory_order_relaxed);
  change.store(c + 2, std::memory_order_release);
  if (!serving_) {  // the first publish ends the open
    word(words_, kWordState).store(static_cast<uint64_t>(LiveMark::State::Serving), std::memory_order_release);
    serving_ = true;
  }
}

// ---- a reader -------------------------------------------------------------------

LiveReader::~LiveReader() {
  if (fd_ >= 0) io_->close(fd_);
}

Status LiveReader::attach(Io& io, const std::string& dir) {
  io_ = &io;
  dir_ = dir;
  std::string path = dir + "/READERS";
  auto give_up = std::chrono::steady_clock::now() + kAttachWait;
  for (;;) {
    std::string holder;
    fd_ = io.lock(path, /*exclusive=*/false, holder);
    if (fd_ >= 0) return Status::good();
    if (fd_ != -EWOULDBLOCK || std::chrono::steady_clock::now() > give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int e = -fd_;
  if (e == EWOULDBLOCK) {
    return Status::error(fmt::format("the running aup kept {} locked for over {} s", path, kAttachWait.count()), e);
  }
  return Status::error(fmt::format("cannot lock {}: {}", path, std::strerror(e)), e);
}

Status LiveReader::read_mark(LiveMark& out) const {
  std::string path = dir_ + "/LIVE";
  int fd = io_->open(path, O_RDONLY, 0);
  if (fd < 0) return Status::error(fmt::format("cannot open {}: {}", path, std::strerror(-fd)), -fd);
  // Mapped only when it is a mark's length: a page past a file's end
  // faults when touched.
  int64_t size = io_->file_size(fd);
  bool long_enough = size >= static_cast<int64_t>(kMarkBytes);
  void* m = nullptr;
  int rc = long_enough ? io_->map_shared(fd, kMarkBytes, /*writable=*/false, m) : 0;
  io_->close(fd);
  if (size < 0) {
    int e = static_cast<int>(-size);
    return Status::error(fmt::format("cannot read {}: {}", path, std::strerror(e)), e);
  }
  if (!long_enough) return Status::error(fmt::format("{} is not a live mark", path), EINVAL);
  if (rc < 0) return Status::error(fmt::format("cannot map {}: {}", path, std::strerror(-rc)), -rc);
  auto* words = static_cast<uint64_t*>(m);
  bool valid = word(words, kWordMagic).load(std::memory_order_acquire) == kMagic &&
               word(words, kWordVersion).load(std::memory_order_relaxed) == kVersion;
  if (!valid) {
    io_->unmap(m, kMarkBytes);
    return Status::error(fmt::format("{} is not a live mark", path), EINVAL);
  }
  out.state = static_cast<LiveMark::State>(word(words, kWordState).load(std::memory_order_acquire));
  out.pid = word(words, kWordPid).load(std::memory_order_acquire);
  auto change = word(words, kWordChange);
  // An update takes nanoseconds; one that never ends is a writer killed
  // inside it (its store is then no longer served: read it again).
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  bool settled = false;
  while (!settled && std::chrono::steady_clock::now() < give_up) {
    uint64_t before = change.load(std::memory_order_acquire);
    out.seq = word(words, kWordSeq).load(std::memory_order_relaxed);
    out.segment = word(words, kWordSegment).load(std::memory_order_relaxed);
    out.end = word(words, kWordEnd).load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    settled = before % 2 == 0 && change.load(std::memory_order_relaxed) == before;
    if (!settled) std::this_thread::yield();
  }
  io_->unmap(m, kMarkBytes);
  if (!settled) return Status::error(fmt::format("{} was left in the middle of an update", path), EAGAIN);
  return Status::good();
}

// ---- read access ------------------------------------------------------------------

ReadAccess::~ReadAccess() {
  if (fd_ >= 0) io_.close(fd_);
}

std::string ReadAccess::by() const { return holder_.empty() ? "" : fmt::format(" (pid {})", holder_); }

Status ReadAccess::take(const std::string& dir) {
  dir_ = dir;
  std::string path = dir + "/LOCK";
  fd_ = io_.lock(path, /*exclusive=*/false, holder_);
  if (fd_ >= 0 || fd_ == -ENOENT) return Status::good();
  if (fd_ != -EWOULDBLOCK) return Status::error(fmt::format("cannot lock {}: {}", path, std::strerror(-fd_)), -fd_);
  live_ = true;
  Status st = reader_.attach(io_, dir);
  if (st.err == ENOENT) {
    return Status::error(fmt::format("the store {} is in use by a running aup{} that does not let it be read "
                                     "while it serves; stop it first",
                                     dir, by()),
                         ENOENT);
  }
  return st;
}

Status ReadAccess::cut(LiveMark& m) {
  Status st = reader_.read_mark(m);
  if (!st.ok()) {
    return Status::error(fmt::format("the store {} is in use by a running aup{}: {}", dir_, by(), st.message),
                         st.err);
  }
  // A mark still Opening, or an earlier aup's (the one holding the lock
  // has not written its own yet): the store is being opened.
  if (m.state == LiveMark::State::Opening || std::to_string(m.pid) != holder_) {
    return Status::error(
        fmt::format("the running aup{} is still opening the store {}; try again once it serves", by(), dir_),
        EAGAIN);
  }
  return Status::good();
}

}  // namespace aup::storage

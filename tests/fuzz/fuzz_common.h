// What the fuzz targets (tests/fuzz/*_fuzz.cpp, libFuzzer) share: the
// project's modules compiled once at start, the store's files in memory
// (MemoryIo), checksum resealing (so mutations get past the checksums and
// reach the decoders behind them), and a failed oracle as a crash libFuzzer
// saves the input of.
//
// A saved input must reproduce alone (`./build-fuzz/tests/fuzz/log_fuzz
// crash-...`): what a target keeps from one input to the next is either
// made once at start and never changed by an input (the modules, their
// schemas), or put back to a known state before each input (MemoryIo's
// files; the request target's services, each given a fresh state), so no
// input's outcome depends on the inputs before it.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/codegen.h"
#include "compiler/compiler.h"
#include "storage/io.h"
#include "runtime/json.h"
#include "vm/module.h"

namespace aup::fuzz {

// A failed oracle: libFuzzer reports the abort and keeps the input.
[[noreturn]] inline void oracle_failed(std::string_view what) {
  std::fprintf(stderr, "fuzz oracle failed: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

// Every answer a Service wrote (docs/protocol.md): one line each, a JSON
// object whose first key is `id` or `ok`. Returns how many there were.
inline size_t check_answers(std::string_view out) {
  runtime::JsonDoc doc;
  std::string error;
  size_t count = 0;
  while (!out.empty()) {
    size_t nl = out.find('\n');
    if (nl == std::string_view::npos) oracle_failed("an answer without its newline");
    std::string_view line = out.substr(0, nl);
    out.remove_prefix(nl + 1);
    if (!doc.parse(line, error)) oracle_failed("an answer that is not JSON: " + error + ": " + std::string(line));
    const runtime::JsonNode& root = doc.node(doc.root());
    if (root.kind != runtime::JsonNode::Kind::Object || root.count == 0) oracle_failed("an answer that is not an object");
    std::string_view first = doc.node(doc.first_child(doc.root())).str;
    if (first != "id" && first != "ok") oracle_failed("an answer that starts with neither id nor ok");
    ++count;
  }
  return count;
}

// A module of the project (a path under the source root), compiled once at
// start; a module that does not compile is a broken build, not a finding.
inline std::unique_ptr<vm::Module> compile_project_file(const std::string& relative) {
  std::string path = std::string(AUP_SOURCE_DIR) + "/" + relative;
  std::string text, error;
  if (!read_source_file(path, text, error)) oracle_failed(error);
  auto checked = check_source(relative, std::move(text));
  if (!checked->ok()) oracle_failed(path + " does not check");
  Diagnostics d;
  auto m = generate(*checked, d);
  if (!m) oracle_failed(path + " does not compile");
  m->prepare();
  return m;
}

// The store's files in memory, behind the Io every file operation of
// storage/ goes through (storage/io.h): the log and image targets put an
// input's files here and the readers under test find them as on disk,
// without a system call per input (writing, listing and removing real
// files cost more than the readers). One directory, `dir()`, holds them
// all. It keeps POSIX's rules where a reader or writer could break them:
// access modes, O_CREAT/O_EXCL/O_TRUNC, a file that stays readable through
// its open descriptors after a rename or an unlink, the lowest free
// descriptor number. Syncs change no byte a reader sees, so they only check
// their descriptor. A file may be shorter in memory than its size: the rest
// reads as zeros (a segment allocated whole, mostly unwritten).
//
// reset() empties it before each input, so nothing carries over from the
// input before; open_descriptors() lets a target check that the code under
// test closed every file it opened.
class MemoryIo : public storage::Io {
 public:
  explicit MemoryIo(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  void reset() {
    files_.clear();
    fds_.clear();
  }
  // The file `name` in dir(): `bytes`, then zeros up to `size` (when larger).
  void put(const std::string& name, const uint8_t* bytes, size_t n, uint64_t size) {
    auto f = std::make_shared<File>();
    f->bytes.assign(bytes, bytes + n);
    f->size = std::max<uint64_t>(n, size);
    files_[dir_ + "/" + name] = std::move(f);
  }
  size_t open_descriptors() const {
    size_t n = 0;
    for (const Fd& d : fds_) n += d.open ? 1 : 0;
    return n;
  }

  int open(const std::string& path, int flags, int) override {
    int mode = flags & O_ACCMODE;
    Fd d{true, mode != O_WRONLY, mode != O_RDONLY, nullptr};
    if (path == dir_) {
      if (d.write) return -EISDIR;
      return add(d);  // a directory, opened to fsync it
    }
    if (flags & O_DIRECTORY) return files_.count(path) ? -ENOTDIR : -ENOENT;
    if (!in_dir(path)) return -ENOENT;
    auto it = files_.find(path);
    if (it == files_.end()) {
      if (!(flags & O_CREAT)) return -ENOENT;
      it = files_.emplace(path, std::make_shared<File>()).first;
    } else if ((flags & O_CREAT) && (flags & O_EXCL)) {
      return -EEXIST;
    } else if ((flags & O_TRUNC) && d.write) {
      it->second->bytes.clear();
      it->second->size = 0;
    }
    d.file = it->second;
    return add(d);
  }
  int close(int fd) override {
    Fd* d = get(fd);
    if (!d) return -EBADF;
    *d = Fd{};
    return 0;
  }
  ssize_t pwrite(int fd, const void* data, size_t n, off_t at) override {
    Fd* d = get(fd);
    if (!d || !d->write) return -EBADF;
    if (at < 0) return -EINVAL;
    File& f = *d->file;
    auto from = static_cast<uint64_t>(at);
    if (from + n > f.bytes.size()) f.bytes.resize(from + n, 0);
    if (n) std::memcpy(f.bytes.data() + from, data, n);
    f.size = std::max<uint64_t>(f.size, from + n);
    return static_cast<ssize_t>(n);
  }
  ssize_t pread(int fd, void* data, size_t n, off_t at) override {
    Fd* d = get(fd);
    if (!d || !d->read) return -EBADF;
    if (!d->file) return -EISDIR;
    if (at < 0) return -EINVAL;
    const File& f = *d->file;
    auto from = static_cast<uint64_t>(at);
    if (from >= f.size) return 0;
    size_t take = static_cast<size_t>(std::min<uint64_t>(n, f.size - from));
    size_t held = from < f.bytes.size() ? std::min<size_t>(take, f.bytes.size() - from) : 0;
    if (held) std::memcpy(data, f.bytes.data() + from, held);
    std::memset(static_cast<uint8_t*>(data) + held, 0, take - held);
    return static_cast<ssize_t>(take);
  }
  int fdatasync(int fd) override { return get(fd) ? 0 : -EBADF; }
  int fsync(int fd) override { return get(fd) ? 0 : -EBADF; }
  int sync_file_range(int fd, off_t, off_t) override {
    Fd* d = get(fd);
    return !d ? -EBADF : !d->file ? -ESPIPE : 0;
  }
  int fallocate(int fd, off_t at, off_t n) override {
    Fd* d = get(fd);
    if (!d || !d->write) return -EBADF;
    if (at < 0 || n <= 0) return -EINVAL;
    d->file->size = std::max(d->file->size, static_cast<uint64_t>(at) + static_cast<uint64_t>(n));
    return 0;
  }
  int ftruncate(int fd, off_t n) override {
    Fd* d = get(fd);
    if (!d) return -EBADF;
    if (!d->write || n < 0) return -EINVAL;
    auto size = static_cast<uint64_t>(n);
    if (d->file->bytes.size() > size) d->file->bytes.resize(size);
    d->file->size = size;
    return 0;
  }
  int rename(const std::string& from, const std::string& to) override {
    auto it = files_.find(from);
    if (it == files_.end() || !in_dir(to)) return -ENOENT;
    if (from == to) return 0;
    std::shared_ptr<File> f = it->second;
    files_.erase(it);
    files_[to] = std::move(f);
    return 0;
  }
  int unlink(const std::string& path) override {
    if (path == dir_) return -EISDIR;
    return files_.erase(path) ? 0 : -ENOENT;
  }
  int64_t file_size(int fd) override {
    Fd* d = get(fd);
    if (!d) return -EBADF;
    return d->file ? static_cast<int64_t>(d->file->size) : 0;
  }
  int list_dir(const std::string& dir, std::vector<std::string>& names) override {
    if (dir != dir_) return -ENOENT;
    for (const auto& [path, file] : files_) names.push_back(path.substr(dir_.size() + 1));
    return 0;
  }
  // One process, so no other holder: the lock is the descriptor.
  int lock(const std::string& path, bool exclusive, std::string&) override {
    return open(path, exclusive ? O_RDWR | O_CREAT : O_RDONLY, 0644);
  }
  int flock(int, int) override { return 0; }
  // One directory, which exists: the targets make no other.
  int mkdir(const std::string& path, int) override { return path == dir_ ? -EEXIST : -EPERM; }
  int rmdir(const std::string&) override { return -EPERM; }
  // Files in memory cannot be mapped; the targets never read a live mark.
  int map_shared(int, size_t, bool, void*&) override { return -ENODEV; }
  int unmap(void*, size_t) override { return -EINVAL; }

 private:
  struct File {
    std::vector<uint8_t> bytes;
    uint64_t size = 0;  // >= bytes.size(); past the bytes, zeros
  };
  struct Fd {
    bool open = false;
    bool read = false, write = false;
    std::shared_ptr<File> file;  // null: the directory
  };
  static constexpr int kFirstFd = 3;  // after stdin, stdout, stderr, as in a process

  bool in_dir(const std::string& path) const {
    return path.size() > dir_.size() + 1 && path.compare(0, dir_.size(), dir_) == 0 && path[dir_.size()] == '/' &&
           path.find('/', dir_.size() + 1) == std::string::npos;
  }
  int add(const Fd& d) {
    size_t i = 0;
    while (i < fds_.size() && fds_[i].open) ++i;
    if (i == fds_.size()) fds_.emplace_back();
    fds_[i] = d;
    return static_cast<int>(i) + kFirstFd;
  }
  Fd* get(int fd) {
    if (fd < kFirstFd || static_cast<size_t>(fd - kFirstFd) >= fds_.size()) return nullptr;
    Fd& d = fds_[static_cast<size_t>(fd - kFirstFd)];
    return d.open ? &d : nullptr;
  }

  std::string dir_;
  std::map<std::string, std::shared_ptr<File>> files_;  // by path
  std::vector<Fd> fds_;                                 // by descriptor - kFirstFd
};

inline uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{p[i]} << (8 * i);
  return v;
}
inline uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}
inline void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
// Writes the XXH3-64 of [from, from + n) at `at`.
inline void seal(uint8_t* base, size_t from, size_t n, size_t at) { put64(base + at, XXH3_64bits(base + from, n)); }

}  // namespace aup::fuzz

// The object cache (format and recovery policy in cache.h).
#include "vm/jit/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "vm/bytes.h"

namespace aup::vm::jit {

namespace {

constexpr char kMagic[8] = {'A', 'U', 'P', 'J', 'I', 'T', 'O', '1'};

// Little-endian, through the one byte codec (vm/bytes.h).
void put_u64(char* p, uint64_t v) { bytes::put_u64(reinterpret_cast<uint8_t*>(p), v); }
uint64_t get_u64(const char* p) { return bytes::get_u64(reinterpret_cast<const uint8_t*>(p)); }

std::string file_of(const std::string& dir, uint64_t key) { return fmt::format("{}/{:016x}.o", dir, key); }

// Reads the whole file, at most `limit` bytes; false if it is longer.
bool read_all(const std::string& path, uint64_t limit, std::vector<char>& out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) <= limit;
  if (ok) {
    out.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (ok && done < out.size()) {
      ssize_t n = read(fd, out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ok = false;
      else done += static_cast<size_t>(n);
    }
  }
  close(fd);
  return ok;
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// mkdir -p, bounded by the path's length (each round adds a component).
bool make_dirs(const std::string& dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at != dir.size() && dir[at] != '/') continue;
    std::string part = dir.substr(0, at);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  return true;
}

// Removes the oldest objects while the directory holds more than
// `max_bytes` of them, down to three quarters of it.
void trim(const std::string& dir, uint64_t max_bytes) {
  struct Entry {
    int64_t mtime_ns;
    uint64_t bytes;
    std::string path;
  };
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  std::vector<Entry> entries;
  uint64_t total = 0;
  while (dirent* e = readdir(d)) {
    if (entries.size() >= kMaxCacheScan) break;
    std::string_view name(e->d_name);
    if (name.size() != 18 || name.substr(16) != ".o") continue;  // KEY.o only
    std::string path = dir + "/" + e->d_name;
    struct stat st;
    if (stat(path.c_str(), &st) != 0) continue;
    entries.push_back({st.st_mtim.tv_sec * 1'000'000'000 + st.st_mtim.tv_nsec, static_cast<uint64_t>(st.st_size),
                       std::move(path)});
    total += static_cast<uint64_t>(st.st_size);
  }
  closedir(d);
  if (total <= max_bytes) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.mtime_ns < b.mtime_ns; });
  for (const Entry& e : entries) {
    if (total <= max_bytes / 4 * 3) break;
    if (unlink(e.path.c_str()) == 0) total -= e.bytes;
  }
}

}  // namespace

bool cache_read(const std::string& dir, uint64_t key, std::vector<char>& object) {
  std::vector<char> bytes;
  if (!read_all(file_of(dir, key), kCacheHeaderBytes + kMaxCachedObjectBytes, bytes)) return false;
  if (bytes.size() < kCacheHeaderBytes || std::memcmp(bytes.data(), kMagic, 8) != 0) return false;
  if (get_u64(bytes.data() + 8) != key) return false;
  uint64_t n = get_u64(bytes.data() + 16);
  if (n != bytes.size() - kCacheHeaderBytes || n == 0) return false;
  const char* body = bytes.data() + kCacheHeaderBytes;
  if (XXH3_64bits(body, n) != get_u64(bytes.data() + 24)) return false;
  object.assign(body, body + n);
  return true;
}

bool cache_write(const std::string& dir, uint64_t key, std::string_view object, uint64_t max_bytes) {
  if (dir.empty() || !make_dirs(dir)) return false;
  char header[kCacheHeaderBytes];
  std::memcpy(header, kMagic, 8);
  put_u64(header + 8, key);
  put_u64(header + 16, object.size());
  put_u64(header + 24, XXH3_64bits(object.data(), object.size()));
  // A name of this process's own, renamed over the key's when complete.
  std::string tmp = fmt::format("{}/.{:016x}.{}.tmp", dir, key, getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = write_all(fd, header, sizeof header) && write_all(fd, object.data(), object.size());
  ok = close(fd) == 0 && ok;
  if (ok) ok = rename(tmp.c_str(), file_of(dir, key).c_str()) == 0;
  if (!ok) unlink(tmp.c_str());
  if (ok) trim(dir, max_bytes);
  return ok;
}

uint64_t file_identity(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return 0;
  uint64_t fields[] = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                       static_cast<uint64_t>(st.st_size), static_cast<uint64_t>(st.st_mtim.tv_sec),
                       static_cast<uint64_t>(st.st_mtim.tv_nsec)};
  return XXH3_64bits(fields, sizeof fields);
}

}  // namespace aup::vm::jit

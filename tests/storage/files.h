// For the storage tests: a scratch directory, and the byte damage disks
// and crashes do to a store's files (flip a bit, zero a range, cut the
// file short).
#pragma once

#include <doctest/doctest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

namespace aup::storage::files {

struct TempDir {
  std::string path;
  explicit TempDir(const char* name = "aup-storage-test") {
    std::string tmpl = std::string("/tmp/") + name + "-XXXXXX";
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

inline void flip(const std::string& path, uint64_t at) {
  int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  uint8_t b;
  REQUIRE(::pread(fd, &b, 1, static_cast<off_t>(at)) == 1);
  b ^= 0x40;
  REQUIRE(::pwrite(fd, &b, 1, static_cast<off_t>(at)) == 1);
  ::close(fd);
}

inline void zero(const std::string& path, uint64_t at, uint64_t n) {
  int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  std::vector<uint8_t> z(n, 0);
  REQUIRE(::pwrite(fd, z.data(), n, static_cast<off_t>(at)) == static_cast<ssize_t>(n));
  ::close(fd);
}

inline void shrink(const std::string& path, uint64_t size) {
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(size)) == 0);
}

// Replaces a file's bytes (an older copy of it put back, say).
inline void write(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
  f.close();
  REQUIRE(f.good());
}

// A file's bytes, to show that reading it changed nothing.
inline std::string contents(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// The names in a directory, sorted: what a test expects to find there.
inline std::vector<std::string> names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace aup::storage::files

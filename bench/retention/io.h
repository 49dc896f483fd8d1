// File descriptors and whole reads/writes, with errno turned into messages.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <span>
#include <string>

#include "bench/retention/status.h"

namespace aup::retention {

// Owns one file descriptor; closes it once.
class File {
 public:
  static Result<File> open_read(const std::string& path);
  // Created or truncated, mode 0644.
  static Result<File> open_write(const std::string& path);

  File() = default;
  File(File&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  int fd() const { return fd_; }

 private:
  explicit File(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Reads until `dst` is full or the input ends; returns the bytes read, which
// is less than dst.size() only at the end of the input.
Result<size_t> read_full(int fd, std::span<std::byte> dst);
// Writes every byte of every piece or fails (a short write is retried).
Status write_all(int fd, std::span<iovec> pieces);
Status write_all(int fd, std::span<const std::byte> bytes);

// strerror(errno) without the thread-unsafe static buffer.
std::string errno_text(int err);

}  // namespace aup::retention

#include "bench/retention/io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace aup::retention {
namespace {

// A write that moves no byte and reports no error would loop forever; this
// many in a row means the descriptor is broken.
constexpr int kMaxZeroWrites = 16;

}  // namespace

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r returns the message, maybe not in buf.
  return strerror_r(err, buf, sizeof buf);
}

Result<File> File::open_read(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error("cannot open {}: {}", path, errno_text(errno));
  return File(fd);
}

Result<File> File::open_write(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return error("cannot open {} for writing: {}", path, errno_text(errno));
  return File(fd);
}

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

Result<size_t> read_full(int fd, std::span<std::byte> dst) {
  size_t done = 0;
  // Each turn reads at least one byte, or ends at EOF or an error.
  while (done < dst.size()) {
    ssize_t n = ::read(fd, dst.data() + done, dst.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return error("read failed: {}", errno_text(errno));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

Status write_all(int fd, std::span<iovec> pieces) {
  size_t first = 0;
  int zero_writes = 0;
  while (first < pieces.size()) {
    if (pieces[first].iov_len == 0) {
      ++first;
      continue;
    }
    ssize_t n = ::writev(fd, pieces.data() + first, static_cast<int>(pieces.size() - first));
    if (n < 0) {
      if (errno == EINTR) continue;
      return error("{}", errno_text(errno));
    }
    if (n == 0 && ++zero_writes > kMaxZeroWrites) return error("the output accepts no bytes");
    auto left = static_cast<size_t>(n);
    // Advance past what was written, leaving a partly written piece's rest.
    while (first < pieces.size() && left >= pieces[first].iov_len) {
      left -= pieces[first].iov_len;
      ++first;
    }
    if (left > 0) {
      pieces[first].iov_base = static_cast<char*>(pieces[first].iov_base) + left;
      pieces[first].iov_len -= left;
    }
  }
  return {};
}

Status write_all(int fd, std::span<const std::byte> bytes) {
  iovec piece{const_cast<std::byte*>(bytes.data()), bytes.size()};
  return write_all(fd, std::span(&piece, 1));
}

}  // namespace aup::retention

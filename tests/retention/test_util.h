// Helpers shared by the retention tests: in-memory files (memfd, so no test
// touches the disk), fixtures made in them, and byte-corruption helpers for
// the reader's recovery cases.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "bench/retention/fixture.h"
#include "bench/retention/io.h"
#include "bench/retention/record_format.h"

namespace aup::retention::test {

// An anonymous file descriptor, closed on destruction.
class MemFile {
 public:
  MemFile() : fd_(memfd_create("retention-test", MFD_CLOEXEC)) {}
  explicit MemFile(std::span<const std::byte> bytes) : MemFile() {
    Status s = write_all(fd_, bytes);
    (void)s;
    rewind();
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  ~MemFile() { ::close(fd_); }

  int fd() const { return fd_; }
  void rewind() const { ::lseek(fd_, 0, SEEK_SET); }
  std::vector<std::byte> contents() const {
    rewind();
    std::vector<std::byte> out;
    std::byte chunk[65536];
    for (;;) {
      ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n <= 0) break;
      out.insert(out.end(), chunk, chunk + n);
    }
    return out;
  }

 private:
  int fd_;
};

// A fixture and its expected output, both in memory.
struct TestFixture {
  std::vector<std::byte> input;
  std::vector<std::byte> expected;
  FixtureInfo info;
};

inline TestFixture make_fixture(Shape shape, uint32_t records, uint64_t seed = 7) {
  MemFile in;
  MemFile expect;
  auto info = write_fixture(FixtureSpec{shape, records, seed}, in.fd(), expect.fd());
  return TestFixture{in.contents(), expect.contents(), info.value()};
}

// Where record `seq`'s header starts in a fixture's bytes.
inline size_t record_offset(const std::vector<std::byte>& file, uint32_t seq) {
  size_t at = kFileHeaderBytes;
  for (uint32_t i = 0; i < seq; ++i) at += kRecordHeaderBytes + get_u32(file.data() + at + 4);
  return at;
}

inline void set_u32(std::vector<std::byte>& file, size_t at, uint32_t value) {
  put_u32(file.data() + at, value);
}

struct Frame {
  uint32_t seq;
  std::vector<std::byte> bytes;
};

// Splits an output into frames; stops at a cut frame (which tests treat as
// a failure by comparing the byte count).
inline std::vector<Frame> parse_frames(const std::vector<std::byte>& out, size_t* parsed_bytes = nullptr) {
  std::vector<Frame> frames;
  size_t at = 0;
  while (at + kFrameHeaderBytes <= out.size()) {
    uint32_t length = get_u32(out.data() + at + 4);
    if (at + kFrameHeaderBytes + length > out.size()) break;
    const std::byte* body = out.data() + at + kFrameHeaderBytes;
    frames.push_back(Frame{get_u32(out.data() + at), std::vector<std::byte>(body, body + length)});
    at += kFrameHeaderBytes + length;
  }
  if (parsed_bytes) *parsed_bytes = at;
  return frames;
}

}  // namespace aup::retention::test

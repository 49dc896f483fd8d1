// A Unix-socket connection with an input buffer, which waits for input in
// poll (bench/server/wait_input.h): what the three protocols (aup's JSON
// lines, RESP, IPROTO) have in common. Each sends whole requests and takes
// whole answers off the front of input(), calling fill() while the front
// holds only part of one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace aup::bench::peers {

class Stream {
 public:
  // Connects to the Unix socket `path`; throws std::runtime_error. With
  // `timeout_s` > 0, a fill() that waits longer than that throws: a server
  // that says nothing for so long has hung.
  explicit Stream(const std::string& path, int timeout_s = 30);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&&) = delete;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Whether something accepts connections on `path` now (a server that is
  // ready): a probe that never throws.
  static bool accepts(const std::string& path);

  // Writes all of `bytes`; throws when the server is gone.
  void send(std::string_view bytes);
  // Reads at least one more byte onto the end of input(); throws when the
  // server closed the connection, failed, or timed out.
  void fill();
  // The bytes read and not yet consumed.
  std::string_view input() const { return std::string_view(in_).substr(begin_); }
  void consume(size_t n);
  // Ends both directions, so that a thread blocked in fill() returns (it
  // throws: the connection is closed).
  void shut_down();

 private:
  int fd_ = -1;
  int timeout_ms_ = -1;  // a fill()'s longest wait; -1: none
  std::string in_;
  size_t begin_ = 0;  // input() starts here; compacted as it grows
};

}  // namespace aup::bench::peers

// What waits to be written to one connection (or to standard output):
// answers are appended whole, and send_to() writes as much as the
// descriptor takes with one system call.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>

namespace aup::runtime {

class Outbox {
 public:
  // `socket`: written with send(2) (no SIGPIPE); else write(2) (a pipe, a file).
  explicit Outbox(bool socket = true) : socket_(socket) {}
  ~Outbox() { count(-static_cast<int64_t>(waiting())); }
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  // Counts the bytes waiting here into `gauge` too (the stats request's
  // answer_bytes_waiting): a gauge of the one thread that uses this.
  void count_in(std::atomic<int64_t>* gauge) { gauge_ = gauge; }
  // Bytes written in place: `write(std::string&)` appends them.
  template <class Write>
  void append(Write&& write) {
    size_t before = buf_.size();
    write(buf_);
    assert(buf_.size() >= before);
    count(static_cast<int64_t>(buf_.size() - before));
  }
  // Bytes appended and not yet written.
  size_t waiting() const { return buf_.size() - at_; }
  enum class Sent : uint8_t { All, Some, Gone };
  // One send(2) or write(2). Gone: the peer cannot take answers any more
  // (error() says why).
  Sent send_to(int fd);
  int error() const { return error_; }
  void clear() {
    count(-static_cast<int64_t>(waiting()));
    buf_.clear();
    at_ = 0;
  }

 private:
  // A relaxed load and store: only this thread writes the gauge.
  void count(int64_t delta) {
    if (gauge_ && delta != 0) {
      gauge_->store(gauge_->load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
    }
  }
  bool socket_;
  std::string buf_;
  size_t at_ = 0;
  int error_ = 0;
  std::atomic<int64_t>* gauge_ = nullptr;
};

}  // namespace aup::runtime

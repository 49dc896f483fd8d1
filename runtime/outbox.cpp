#include "runtime/outbox.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace aup::runtime {

Outbox::Sent Outbox::send_to(int fd) {
  if (at_ == buf_.size()) return Sent::All;
  const char* from = buf_.data() + at_;
  size_t n_wanted = buf_.size() - at_;
  ssize_t n = socket_ ? ::send(fd, from, n_wanted, MSG_NOSIGNAL) : ::write(fd, from, n_wanted);
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return Sent::Some;
    error_ = errno;
    return Sent::Gone;
  }
  at_ += static_cast<size_t>(n);
  count(-static_cast<int64_t>(n));
  if (at_ == buf_.size()) {
    clear();
    return Sent::All;
  }
  if (at_ > (size_t{1} << 20)) {
    // A slow reader: drop what it took, so the buffer does not only grow.
    buf_.erase(0, at_);
    at_ = 0;
  }
  return Sent::Some;
}

}  // namespace aup::runtime

// SIGINT and SIGTERM as a descriptor a loop waits on (stdin's and the
// server's), and the clock an event's `now` comes from.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

namespace aup::runtime {

// The wall clock in milliseconds since the Unix epoch (an event's `now`).
inline double now_ms() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) * 1000.0 + static_cast<double>(ts.tv_nsec / 1000000);
}

// SIGINT and SIGTERM arrive on a file descriptor while this lives; the
// previous signal mask comes back when it ends. Threads started while it
// lives inherit the blocked mask, so the signals reach only the descriptor.
class SignalFd {
 public:
  SignalFd() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    fd_ = signalfd(-1, &set_, SFD_CLOEXEC);
  }
  ~SignalFd() {
    if (fd_ >= 0) close(fd_);
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;
  int fd() const { return fd_; }

 private:
  sigset_t set_;
  sigset_t old_;
  int fd_ = -1;
};

}  // namespace aup::runtime

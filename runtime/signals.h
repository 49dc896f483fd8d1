// SIGINT and SIGTERM as a descriptor a loop waits on (stdin's and the
// server's), and the clock an event's `now` comes from.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <thread>
#include <utility>

namespace aup::runtime {

// The wall clock in milliseconds since the Unix epoch (an event's `now`).
inline double now_ms() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) * 1000.0 + static_cast<double>(ts.tv_nsec / 1000000);
}

// A thread that never takes SIGINT or SIGTERM, started at any time (a
// replica's follower starts before the server's SignalFd exists): those
// are the server's, read from its descriptor, and a thread that took one
// would end the process where it stands instead.
template <class F>
std::thread quiet_thread(F&& f) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  std::thread t(std::forward<F>(f));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return t;
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

#include "bench/retention/signals.h"

#include <cassert>
#include <cerrno>
#include <ctime>

namespace aup::retention {

SignalWatch::SignalWatch(std::initializer_list<int> signals) {
  sigemptyset(&watched_);
  for (int s : signals) sigaddset(&watched_, s);
  [[maybe_unused]] int rc = sigprocmask(SIG_BLOCK, &watched_, &previous_);
  assert(rc == 0);
}

SignalWatch::~SignalWatch() { sigprocmask(SIG_SETMASK, &previous_, nullptr); }

int SignalWatch::take(int signo) {
  if ((signo == SIGTERM || signo == SIGINT) && stop_signal_ == 0) stop_signal_ = signo;
  return signo;
}

int SignalWatch::poll() { return wait_ns(0); }

int SignalWatch::wait_ns(int64_t ns) {
  assert(ns >= 0);
  timespec timeout{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  int signo = sigtimedwait(&watched_, nullptr, &timeout);
  if (signo > 0) return take(signo);
  // EAGAIN: the time passed; EINTR: an unwatched signal with a handler
  // (none is installed) — either way nothing watched arrived.
  assert(errno == EAGAIN || errno == EINTR);
  return 0;
}

}  // namespace aup::retention

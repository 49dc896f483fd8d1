// Stop signals without a handler or a global flag: the watched signals are
// blocked while a SignalWatch lives, and the program asks for them between
// steps (poll) or sleeps on them (wait_ns, via sigtimedwait), so a SIGTERM
// ends a sleep at once and is always seen at a step boundary, where every
// buffer is accounted for and no output frame is half written.
#pragma once

#include <signal.h>

#include <cstdint>
#include <initializer_list>

namespace aup::retention {

class SignalWatch {
 public:
  // SIGTERM and SIGINT stop; others in the list (SIGCHLD for the bench
  // driver) only wake wait_ns. One SignalWatch at a time per thread.
  explicit SignalWatch(std::initializer_list<int> signals);
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;
  // Restores the previous mask. A stop signal received has been consumed.
  ~SignalWatch();

  // Takes a pending watched signal, if any, without waiting. Returns it or 0.
  int poll();
  // Sleeps up to `ns` (>= 0) or until a watched signal arrives; returns it
  // or 0 on timeout.
  int wait_ns(int64_t ns);

  // The first stop signal (SIGTERM or SIGINT) seen, or 0.
  int stop_signal() const { return stop_signal_; }

 private:
  int take(int signo);

  sigset_t watched_{};
  sigset_t previous_{};
  int stop_signal_ = 0;
};

}  // namespace aup::retention

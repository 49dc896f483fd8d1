// A thread per client of a closed-loop load (bench/server, bench/peers):
// each runs drive(i, stop, tally) until `stop`; join() stops and joins them,
// and so does the destructor, so an exception on the way never leaves a
// thread running. A client whose drive throws keeps the message in its
// tally's `error`.
#pragma once

#include <sys/resource.h>

#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace aup::bench {

template <class Tally>
class ClientThreads {
 public:
  template <class Drive>
  ClientThreads(size_t clients, Drive drive) : tallies_(clients) {
    for (size_t i = 0; i < clients; ++i) {
      threads_.emplace_back([this, drive, i] {
        try {
          drive(i, stop_, tallies_[i]);
        } catch (const std::exception& e) {
          tallies_[i].error = e.what();
        }
      });
    }
  }
  ~ClientThreads() { join(); }
  ClientThreads(const ClientThreads&) = delete;
  ClientThreads& operator=(const ClientThreads&) = delete;

  void join() {
    stop_.store(true, std::memory_order_relaxed);
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  const std::vector<Tally>& tallies() const { return tallies_; }

 private:
  std::atomic<bool> stop_{false};
  std::vector<Tally> tallies_;
  std::vector<std::thread> threads_;
};

// This process's CPU time (user + system, every thread) in nanoseconds, to
// the microsecond (getrusage; /proc's figure is in 10 ms ticks).
inline double own_cpu_ns() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto ns = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) * 1e9 + static_cast<double>(tv.tv_usec) * 1e3; };
  return ns(ru.ru_utime) + ns(ru.ru_stime);
}

}  // namespace aup::bench

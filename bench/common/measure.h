// Timing and summarising repetitions, the same in every benchmark: a timed
// piece of work is read on two clocks, and figures are medians over
// repetitions (a shared machine's bad moments fall outside the middle).
#pragma once

#include <time.h>

#include <cstdint>
#include <vector>

namespace aup::bench {

// `clock` (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID, ...) in nanoseconds.
double now_ns(clockid_t clock);

struct Elapsed {
  double cpu_ns = 0;  // this thread's CPU time: excludes time other processes ran
  double wall_ns = 0;
};

// Runs `f` once on both clocks; `result` gets what it returns (a checksum,
// which the caller checks, so the work cannot be optimised away). A
// template, so that nothing but `f` itself lies between the clock reads.
template <class F>
Elapsed elapsed(const F& f, uint64_t& result) {
  double c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
  double w0 = now_ns(CLOCK_MONOTONIC);
  result = f();
  double w1 = now_ns(CLOCK_MONOTONIC);
  double c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
  return Elapsed{c1 - c0, w1 - w0};
}

// The middle value, or the mean of the two middle ones; 0 for none.
double median(std::vector<double> v);
// The median over repetitions of a[i] / b[i]: each ratio within one
// repetition, so drift between repetitions falls on both sides alike.
double ratio_median(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace aup::bench

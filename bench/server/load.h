// The timed load: C connections, each on its own thread, each keeping up
// to `window` transfers outstanding (closed loop: a new request goes out
// as an answer comes back), for a warm-up and then a timed phase. Every
// request's latency runs from just before the write that sent it to the
// read that brought its answer, matched by order (the server answers a
// connection's requests in order).
#pragma once

#include <cstdint>
#include <string>

#include "bench/server/server_process.h"

namespace aup::bench::server {

struct LoadSpec {
  std::string socket;
  uint32_t connections = 1;
  uint32_t window = 64;
  uint32_t accounts = 2;  // transfers go between accounts 1..accounts
  uint64_t seed = 0;
  double warmup_s = 1;
  double seconds = 5;
  uint16_t port = 0;  // not 0: connect to 127.0.0.1:port instead of `socket`
  bool http = false;  // and speak HTTP (POST /events/transfer)
};

struct LoadResult {
  double start_ns = 0, end_ns = 0;  // the timed phase, CLOCK_MONOTONIC
  uint64_t events = 0;              // answers read within the timed phase
  double p50_us = 0, p99_us = 0, max_us = 0;  // their latencies
  uint64_t ok_total = 0;            // every ok answer: warm-up and drain too
  uint64_t failed_total = 0;        // every other answer
  std::string first_failure;        // the first such answer
  CpuTimes server_before, server_after;  // around the timed phase
  double client_cpu_ns = 0;              // this process, over the timed phase
};

// Runs the load against `server` (listening on spec.socket); after the
// timed phase every connection stops sending, takes its outstanding
// answers and closes. Throws std::runtime_error when a connection fails
// (the server closed it, or stopped answering).
LoadResult run_load(const LoadSpec& spec, const ServerProcess& server);

}  // namespace aup::bench::server

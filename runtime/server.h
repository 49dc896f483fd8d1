// `aup run --listen`: the request protocol over many connections
// (docs/architecture.md, docs/protocol.md).
//
// Two ways to serve, chosen by --io-threads. With 0 (the default when the
// process may run on at most two CPUs) the owner thread serves the connections
// itself and runs each request to completion: owner_server.h. With N >= 1,
// as the rest of this comment says:
//   - the owner (the calling thread) applies every event, in the order the
//     I/O threads handed them over, commits them in batches (one log entry,
//     one fdatasync) and publishes a snapshot before any answer leaves;
//   - a fixed set of I/O threads, each with its own epoll, owns its
//     connections: reads and splits lines, answers bad requests and runs
//     queries itself (against the newest snapshot, never on the owner),
//     hands events to the owner, and writes answers in request order.
//
// Group commit: the owner takes every event waiting when it is free, up to
// --max-batch. It never waits on purpose to gather more: whatever arrives
// while it applies and syncs a batch is the next batch, so a slow disk
// makes batches large and a fast one (or --memory) never leaves the owner
// idle while work waits.
//
// A connection's requests are handled in order: an event is answered once
// its batch is durable; a query waits until the events before it on the
// same connection are answered, then reads a snapshot that holds them (and
// every event answered to anyone before it arrived); nothing after a
// waiting query is read until it has run. An event whose client has gone
// still commits; its answer is dropped.
//
// Every address of --listen is served by the same threads and pipeline;
// an `http://` one speaks HTTP (http.h), framed per connection (framer.h).
//
// Limits: connections (more are answered `unavailable` and closed), line
// size (bad_request, the line skipped), requests read but not yet answered
// per connection, and answer bytes waiting for a client: past either of
// the last two the connection is not read until it drains (back-pressure),
// so a client that never reads holds at most that much memory.
//
// SIGINT/SIGTERM: stop accepting and reading; the events already handed to
// the owner are committed and answered; answers are flushed (for at most a
// few seconds); exit 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "runtime/durability.h"
#include "runtime/http.h"
#include "runtime/listener.h"
#include "runtime/pipeline.h"
#include "runtime/service.h"

namespace aup::runtime {

struct ServerOptions {
  // "unix:PATH", "HOST:PORT", ":PORT" (the line protocol), "http://HOST:PORT"
  std::vector<std::string> listen;
  uint32_t http_timeout_seconds = kDefaultHttpTimeoutSeconds;  // an HTTP request to arrive whole
  uint32_t io_threads = 2;             // 0: the owner serves them (owner_server.h)
  uint32_t max_connections = 1024;
  uint32_t max_pending = 1024;         // per connection: read, not yet answered
  size_t max_output_bytes = size_t{16} << 20;  // per connection: answers not yet taken
  size_t max_line_bytes = kDefaultMaxLineBytes;
  uint32_t max_batch = 0;              // events per commit; 0: every one waiting
  std::optional<double> fixed_now;
  bool stats = false;                  // a line a second on `err`
  ServiceOptions service;
};

// --io-threads by default: 0 (the owner serves the connections itself,
// owner_server.h) when this process may run on at most two CPUs, else 2.
uint32_t default_io_threads();

// Serves until SIGINT/SIGTERM. `owner` applies events to `state`;
// `durability` commits them. Returns the exit code: 0 after a signal, 2
// when the address cannot be listened on (the reason on `err`).
int serve_socket(Service& owner, vm::State& state, Durability& durability, const ServerOptions& o,
                 std::FILE* err);

}  // namespace aup::runtime

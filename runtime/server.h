// `aup run --listen`: the request protocol over many connections, one
// server for every transport (Unix, TCP, HTTP) and every --io-threads
// (docs/architecture.md, docs/protocol.md).
//
//   bytes ─► Framer ─► Service::prepare ─► Committer::take ─► commit ─► Framer ─► Outbox ─► bytes
//           (lines or   (parse once: a      (apply, or run    (one log    (an answer  (one send
//            HTTP)       typed Request)      the query)        entry, its  line, or an  a turn)
//                                                              fate)       HTTP response)
//
// A Loop (loop.h) is one thread's epoll over its connections: each turn it
// reads once from every ready connection, takes their requests, ends the
// batch, and writes each connection's answers with one send. What it does
// with a request is its Dispatch's to say, and that is all that differs
// between the two ways to serve:
//   - --io-threads 0 (the default on at most two CPUs): the owner thread
//     runs the one Loop itself and takes every request into its Committer
//     (committer.h), on the live state: a query reads every earlier request
//     of the batch, and every answer leaves once the batch is durable.
//     Nothing crosses a thread on the request path: on one core, handing
//     requests and answers between threads cost more than applying them
//     (docs/benchmarks.md).
//   - --io-threads N: N Loops on threads of their own read, parse and
//     write; a query (or schema, stats) of a connection with nothing
//     unanswered runs there at once, on the newest published snapshot;
//     everything else, events and whatever follows them on the same
//     connection, goes to the owner thread, whose Committer runs it as
//     above and publishes a snapshot before any of the batch's answers
//     leave. Either way a connection's answers come in its request order,
//     and a query reads every earlier event of its connection.
//
// Group commit: a batch is everything taken while the owner was busy, up
// to --max-batch events. It never waits on purpose to gather more, so a
// slow disk makes batches large and a fast one (or --memory) never leaves
// the owner idle while work waits. An event whose client has gone still
// commits; its answer is dropped.
//
// Limits and back-pressure: connections (more are answered `unavailable`
// and closed), line size (bad_request, the line skipped), requests taken
// but not yet answered per connection (--max-pending), and answer bytes
// waiting for a client (--max-output): past either of the last two the
// connection is not read (nor its buffered requests taken) until that
// clears, so a client that never reads holds at most that much memory.
//
// SIGINT/SIGTERM: stop accepting and reading; what was taken is committed
// and answered; answers are flushed for at most a few seconds; exit 0.
#pragma once

#include <cstdio>

#include "runtime/durability.h"
#include "runtime/listener.h"
#include "runtime/server_options.h"
#include "runtime/service.h"
#include "vm/state.h"

namespace aup::runtime {

// Serves the sockets of `bound` (--listen's addresses, bound before the
// store was opened) until SIGINT/SIGTERM, then closes them. `owner`
// applies events to `state`; `durability` commits them. Returns the exit
// code: 0 after a signal, 2 when serving cannot start (the reason on
// `err`).
int serve_socket(Service& owner, vm::State& state, Durability& durability, const ServerOptions& o,
                 BoundListeners& bound, std::FILE* err);

}  // namespace aup::runtime

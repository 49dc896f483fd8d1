// `aup run --listen` run to completion: the owner thread serves the
// connections itself (`--io-threads 0`, the default when the process may
// run on at most two CPUs).
//
// One thread, one epoll. Each turn the owner reads once from every ready
// connection, frames and decodes each request line once, applies the events
// of all connections as one batch, commits it (one log entry, one
// fdatasync), runs the queries that waited for that commit, and writes
// every connection's answers with one send. Nothing crosses a thread on
// the request path: on one core, handing requests and answers between
// threads cost more than applying them (two wake-ups and about nine system
// calls per request, docs/benchmarks.md).
//
// Queries read the live state, which between batches is exactly the
// committed state, so no snapshot is ever published (checkpoints take
// their own). A query that arrives while the batch holds events is set
// aside until the batch is committed, and its connection reads nothing
// after it meanwhile; so a query reads every earlier event of its
// connection, never an event that might still be undone, and nothing
// that came after it.
//
// Limits and back-pressure as with I/O threads (server.h): a connection
// whose answers waiting exceed --max-output, or whose requests in the
// batch reach --max-pending, is not read (and its buffered lines not
// taken) until that clears; more connections than --max-connections are
// answered `unavailable` and closed. SIGINT/SIGTERM: stop accepting and
// reading, commit and answer what was taken, flush answers for at most a
// few seconds, exit 0.
#pragma once

#include <cstdio>
#include <string>

#include "durability.h"
#include "server.h"
#include "service.h"

namespace aup::runtime {

// Serves on `listen_fd` (listening, non-blocking) until SIGINT/SIGTERM
// arrive on `signal_fd` (a signalfd, or -1 for none); returns the exit
// code. `state` is the one `owner` applies events to.
int serve_on_owner(Service& owner, vm::State& state, Durability& durability, const ServerOptions& o, int listen_fd,
                   int signal_fd, std::FILE* err);

}  // namespace aup::runtime

// `aup run --listen` run to completion: the owner thread serves the
// connections itself (`--io-threads 0`, the default when the process may
// run on at most two CPUs).
//
// One thread, one epoll. Each turn the owner reads once from every ready
// connection, frames and decodes each request line once, applies the events
// and runs the queries of all connections as one batch, commits it (one
// log entry, one fdatasync), and writes every connection's answers with one
// send. Nothing crosses a thread on
// the request path: on one core, handing requests and answers between
// threads cost more than applying them (two wake-ups and about nine system
// calls per request, docs/benchmarks.md).
//
// Queries run in their place in the batch, on the live state, so no
// snapshot is ever published (checkpoints take their own): a query reads
// every earlier event of its connection and nothing after it, and its
// answer leaves with the batch's, once what it read is durable (the
// Committer runs it again if the commit fails, pipeline.h).
//
// Each listener's connections speak the line protocol or HTTP (framer.h);
// the loop is the same for both.
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
#include <vector>

#include "runtime/durability.h"
#include "runtime/listener.h"
#include "runtime/server.h"
#include "runtime/service.h"

namespace aup::runtime {

// Serves on `listeners` (listening, non-blocking) until SIGINT/SIGTERM
// arrive on `signal_fd` (a signalfd, or -1 for none); returns the exit
// code. `state` is the one `owner` applies events to.
int serve_on_owner(Service& owner, vm::State& state, Durability& durability, const ServerOptions& o,
                   const std::vector<Listener>& listeners, int signal_fd, std::FILE* err);

}  // namespace aup::runtime

// `aup run` over standard input and output: requests a line at a time,
// responses in request order.
//
// Reading: bytes are read into one reused buffer; every complete line in it
// is handled, then the responses are written out together, before the next
// read blocks (so a client that pipelines sees its answers promptly and a
// batch costs one write).
//
// The same pieces as the server's (runtime/server.h), down to the answer
// writer: a line Framer, the Service's prepare, the Committer, an Outbox.
// The requests of one read (up to `max_batch` events) form a batch: applied
// one after another, made durable together (one log entry, one fdatasync),
// and only then answered. A query in the batch reads the events before it;
// its answer, too, waits for their commit (and it runs again should that
// fail). A batch whose commit fails is rolled back and its events are
// answered `unavailable`. A line longer than the limit is answered with
// bad_request and skipped up to its newline. Blank lines are ignored; a
// trailing `\r` is dropped. End of input: the last line (even without a
// newline) is handled, answered, and the loop ends (exit 0; 1 when any
// event was answered `unavailable`, which a script must not take for
// done). With `bail`, the first request that fails is the last one run:
// the requests read with it are committed and answered up to it, nothing
// after it is run or read, exit 1. SIGINT or SIGTERM (taken through a
// signalfd, not a handler): reading stops, the lines already read are
// handled and answered, exit 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>

#include "runtime/durability.h"
#include "runtime/framer.h"
#include "runtime/service.h"

namespace aup::runtime {

struct StdioOptions {
  size_t max_line_bytes = kDefaultMaxLineBytes;
  std::optional<double> fixed_now;  // ms since the epoch for every event (tests)
  uint32_t max_batch = 0;           // events per commit; 0: all those read together
  bool bail = false;                // stop at the first request that fails
};

// Returns the exit code: 0 at end of input or on a signal, 1 when an event
// was answered `unavailable` or (`bail`) a request failed, 2 when output
// or input fails (the reason goes to `err`).
int serve_stdio(Service& service, Durability& durability, const StdioOptions& o, int in_fd, int out_fd,
                std::FILE* err);

}  // namespace aup::runtime

// What `aup run --listen` is told (docs/protocol.md, "Limits";
// docs/operations.md): where to listen, how many threads serve, and the
// limits each connection is held to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/framer.h"
#include "runtime/http.h"
#include "runtime/service.h"

namespace aup::runtime {

class Shipper;
class OwnerTasks;

// Where it listens is not among them: the sockets are bound before the
// store opens (runtime/listener.h, BoundListeners).
struct ServerOptions {
  uint32_t http_timeout_seconds = kDefaultHttpTimeoutSeconds;  // an HTTP request to arrive whole
  // 0: the owner thread serves the connections itself; N: N I/O threads
  // serve them, run queries on snapshots and hand events to the owner.
  uint32_t io_threads = 0;
  uint32_t max_connections = 1024;
  uint32_t max_pending = 1024;                 // per connection: taken, not yet answered
  size_t max_output_bytes = size_t{16} << 20;  // per connection: answers not yet taken
  size_t max_line_bytes = kDefaultMaxLineBytes;
  uint32_t max_batch = 0;  // events per commit; 0: every one waiting
  std::optional<double> fixed_now;
  bool stats = false;  // a line a second on `err`
  ServiceOptions service;
  // A server with a store serves replicas (runtime/shipper.h); a replica
  // takes the entries its follower hands over (runtime/owner_tasks.h).
  // Null: neither. Both must outlive the server.
  Shipper* shipper = nullptr;
  OwnerTasks* tasks = nullptr;
};

// --io-threads by default: 0 (the owner serves the connections itself)
// when this process may run on at most two CPUs, else 2.
uint32_t default_io_threads();

}  // namespace aup::runtime

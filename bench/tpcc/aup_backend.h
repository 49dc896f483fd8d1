// aup as the system under test: `aup run tpcc.aup --listen unix:PATH --data
// DIR/store [--engine E]` started as a child process (pinned with taskset
// when asked; --engine only when config.engine is set),
// one connection per terminal, each sending a transaction's request line and
// waiting for its answer, or with config.connections the terminals sharing
// that many pipelined connections (aup_pipeline.h); load events pipelined on one connection; the
// consistency and sizes queries; the rows read back with `aup replay --dump`
// once the server has stopped.
#pragma once

#include <memory>

#include "bench/tpcc/backend.h"

namespace aup::tpcc {

// config.kind is "aup"; the store is config.dir/store (created by load(),
// opened when present).
std::unique_ptr<Backend> make_aup_backend(const BackendConfig& config);

}  // namespace aup::tpcc

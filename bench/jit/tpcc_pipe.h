// The tpcc-pipe case ("TPC-C, owner path"): TPC-C's transactions on the
// stdin of `aup run examples/tpcc/tpcc.aup --memory --fixed-time 1`, with
// no socket and no I/O thread, so that what it measures is what the engine
// changes: the module's code and the runtime calls it makes. The work
// input is aup-tpcc-gen's load followed by its transactions, the baseline
// the load alone: their difference is the transactions' CPU, the
// baseline's CPU the load's (and start-up's, and the JIT's compilation).
// measure_events (cases.h) runs it like the event cases.
#pragma once

#include <string>

#include "bench/jit/cases.h"
#include "bench/jit/options.h"

namespace aup::bench::jit {

// The answer of a New-Order that aup-tpcc-gen makes roll back (1% of them,
// an unused item), the same on both sides.
inline constexpr const char* kRollbackError = "item number is not valid";

// Generates the two inputs into `dir` with o.tpcc_gen, once per bench run:
// W = o.warehouses, o.pipe_transactions transactions from o.terminals
// terminals taking turns, o.seed for both. Throws std::runtime_error when
// aup-tpcc-gen fails or a file cannot be written.
EventCase make_tpcc_pipe(const std::string& dir, const Options& o);

}  // namespace aup::bench::jit

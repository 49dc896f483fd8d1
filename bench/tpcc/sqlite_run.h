// Running a transaction on one connection: BEGIN, the statements, COMMIT,
// and what to do when SQLite answers SQLITE_BUSY.
//
// Busy: every connection waits for a lock through busy_timeout (SQLite's
// own handler, which sleeps 1 ms growing to 100 ms between tries). When
// even that runs out, the transaction is rolled back and tried again from
// its start, with a fresh clock reading; the statements are a function of
// the rows they read, so a retry does what the first try would have done.
// After kMaxBusyAttempts the database counts as stuck and the error goes
// to the caller.
#pragma once

#include "bench/tpcc/backend.h"
#include "bench/tpcc/sqlite_db.h"

namespace aup::tpcc {

// How long one statement waits for another connection's lock. A write
// transaction holds the lock for well under a millisecond (plus the WAL
// fsync), so ten seconds is only reached by starvation among hundreds of
// terminals or by a stuck process.
constexpr int kBusyTimeoutMs = 10'000;
// Tries of one transaction that keeps meeting SQLITE_BUSY: 10 x 10 s of
// waiting before a run is declared broken.
constexpr int kMaxBusyAttempts = 10;

// Runs `tx` alone in a transaction of its own: BEGIN IMMEDIATE for a
// write (so it takes the write lock before reading, and never fails
// halfway for want of it), a plain BEGIN for a read (one snapshot for all
// its statements; in WAL mode it never waits for a writer). A rolled-back
// New-Order ends in ROLLBACK, anything else in COMMIT.
TxResult run_alone(Db& db, const Transaction& tx);

// BEGIN IMMEDIATE, tried again while busy (the grouped writer's begin).
void begin_write(Db& db);

}  // namespace aup::tpcc

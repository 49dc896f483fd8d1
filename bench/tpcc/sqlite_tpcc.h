// TPC-C in SQL, mirroring examples/tpcc/tpcc.aup statement by statement:
// the schema, the loader, the five transactions' bodies, the consistency
// checks and the read-back of every row. No transaction control here: the
// callers (sqlite_backend.cpp, sqlite_writer.cpp) decide where transactions
// begin and end, which is what tells the three configurations apart.
//
// Schema: the spec's nine tables, WITHOUT ROWID, keyed by their composite
// keys as tpcc.aup's tables are, holding exactly the module's record fields
// (money in cents, rates in ten-thousandths, carrier 0 for none,
// order_line.delivery 0 for not yet), and the two indexes the standard's
// queries need: customer (w, d, last, first) for a customer by name and
// orders (w, d, customer, o) for a customer's latest order. history keeps
// the module's sequence number as its key.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/tpcc/backend.h"
#include "bench/tpcc/generator.h"
#include "bench/tpcc/sqlite_db.h"
#include "bench/tpcc/state.h"

namespace aup::tpcc {

// Transaction control, through the connection's cached statements. The
// savepoint is one name ("tx"): the grouped writer nests one at a time.
enum class Control : uint8_t { begin_deferred, begin_immediate, commit, rollback, savepoint, release, rollback_to };
void control(Db& db, Control c);

// Creates the nine tables in an empty database.
void create_schema(Db& db);

// Whether the database holds any table (a load happened).
bool has_schema(Db& db);

// Inserts generate_load(config)'s rows with cached statements, committing
// every so many rows (the caller has begun nothing; journal and sync
// settings are the caller's).
void insert_population(Db& db, const LoadConfig& config, const std::function<void(uint64_t rows)>& progress);

// The current time as the module's `now`: milliseconds since the epoch.
int64_t now_ms();

// Runs one transaction's statements inside a transaction or savepoint the
// caller opened; `now` stamps order entry, history date and delivery. A
// New-Order that meets an unknown item stops and answers rolled_back,
// leaving the undo to the caller; a missing row or an invalid input the
// module would refuse throws std::runtime_error.
TxResult run_statements(Db& db, const Transaction& tx, int64_t now);

// Throws unless a New-Order's outcome is the one its input asks for and
// every other transaction committed (backend.h, Terminal::execute).
void check_outcome(const Db& db, const Transaction& tx, const TxResult& result);

// Whether a transaction only reads (Order-Status, Stock-Level).
bool is_read_only(const Transaction& tx);

// Clause 3.3.2.1 to 3.3.2.4 as tpcc.aup's `consistency` query checks them,
// for warehouses 1..warehouses, inside one read transaction of its own.
std::vector<std::string> check_consistency(Db& db, int64_t warehouses);

// Every row of every table in table_specs() shape, ascending by key,
// inside one read transaction of its own.
State read_state(Db& db);

// count(*) of each table, indexed as table_specs().
TableCounts count_rows(Db& db);

}  // namespace aup::tpcc

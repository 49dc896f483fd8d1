// SQLite as the system under test, in this process through libsqlite3, a
// connection per terminal, the spec's tables as WITHOUT ROWID tables with
// composite primary keys holding tpcc.aup's columns. Three configurations
// (docs/benchmarks.md, "TPC-C"):
//   sqlite          WAL, synchronous=FULL, BEGIN IMMEDIATE per write transaction
//   sqlite-tuned    and mmap 1 GiB, cache 64 MiB per connection, temp_store=MEMORY,
//                   a WAL checkpoint every 40 MB, 1 KiB pages on disk
//   sqlite-grouped  tuned, and the write transactions handed to one writer
//                   thread that runs everything waiting in one transaction,
//                   a SAVEPOINT per transaction, one COMMIT, then answers each
#pragma once

#include <memory>

#include "bench/tpcc/backend.h"

namespace aup::tpcc {

// config.kind is one of the three names above; the database is
// config.dir/tpcc.db (created by load(), opened when present).
std::unique_ptr<Backend> make_sqlite_backend(const BackendConfig& config);

}  // namespace aup::tpcc

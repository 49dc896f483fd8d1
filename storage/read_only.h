// A store served read-only (`aup run --read-only`): recovered through the
// one reader (storage/recovery.h) into the module's tables, and never
// written. Nothing is created, cut, removed or renamed: no LOCK file, no
// torn tail cut, no first images or migration, no `.new` leftovers removed,
// no term history rewritten. So a store on a read-only volume, or in files
// this process may not write, can be served for queries.
//
// How it holds the store against a writer (docs/store-format.md, "Serving
// a store read-only"): DIR/LOCK is taken shared, as `aup replay` takes it,
// for as long as the ReadOnlyStore lives. Readers (`aup replay`, `aup
// backup`, other read-only servers) read beside it. `aup run` without
// --read-only waits for readers a moment and is then refused ("being
// read"): it never starts, so it loses nothing, and what the read-only
// server answers stays the store's state. A store a running aup holds is
// refused here: its queries belong to that server. A store without a LOCK
// file (never opened by `aup run`: a backup, say) cannot be held: a writer
// that starts later makes the file and takes the store, and the read-only
// server answers from the state it read (nothing is lost either way).
//
// Work a writable open would finish first, and that changes which state
// the store holds (a copy received from a primary, a cut of the log under
// way: storage/copy.h, storage/cut.h), is refused: read without it, the
// store would be answered from a state it no longer holds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "storage/io.h"
#include "storage/records.h"
#include "storage/schema.h"
#include "storage/status.h"

namespace aup::storage {

struct ReadOnlyReport {
  uint64_t last_seq = 0;
  bool keeps_keys = false;  // the store has its key tables (read, and never added to)
  // The module's additions the store lacks (a writable open would migrate
  // them): served as their defaults, not written.
  std::vector<std::string> not_migrated;
  bool torn = false;  // the log ends in a torn write (left as it is)
  std::string torn_where;
  bool held = false;  // DIR/LOCK held shared (false: the store has none)
};

class ReadOnlyStore {
 public:
  // `schema`: the module's (the key tables are added when the store has
  // them); `tables` in that layout. Refuses a missing store (no schema
  // file: nothing is created), one a running aup holds, one the module
  // cannot migrate to, damage (as a writable open does), and work under
  // way (above).
  static Status open(Io& io, const std::string& dir, const Schema& schema, Tables& tables,
                     std::unique_ptr<ReadOnlyStore>& out, ReadOnlyReport& report);
  ~ReadOnlyStore();
  ReadOnlyStore(const ReadOnlyStore&) = delete;
  ReadOnlyStore& operator=(const ReadOnlyStore&) = delete;

  // The store's schema as the tables hold it (the module's, and the key
  // tables when the store has them).
  const Schema& schema() const { return schema_; }
  uint64_t last_seq() const { return last_seq_; }

 private:
  ReadOnlyStore(Io& io, std::string dir, const Schema& schema) : io_(io), dir_(std::move(dir)), schema_(schema) {}
  Status hold();
  Status refuse_work_under_way();
  Status read(Tables& tables, ReadOnlyReport& report);

  Io& io_;
  std::string dir_;
  Schema schema_;
  int lock_fd_ = -1;
  uint64_t last_seq_ = 0;
};

}  // namespace aup::storage

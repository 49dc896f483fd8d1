// DIR/replica-of: present while a store is a replica (docs/replication.md),
// holding its primary's address and a newline. `aup run --replica-of`
// writes it when it opens the store; `aup promote` removes it after the
// store has begun a new term. `aup run` without --replica-of refuses a
// store that has it: taking events there without a new term would make a
// second writer of the primary's term, whose entries no replica could tell
// from the primary's.
#pragma once

#include <string>

#include "storage/io.h"
#include "storage/status.h"

namespace aup::storage {

// The primary's address; err ENOENT (and "") when the store is no replica.
Status read_replica_of(Io& io, const std::string& dir, std::string& primary);
// Written durably (storage/file_io.h).
Status write_replica_of(Io& io, const std::string& dir, const std::string& primary);
// Removed, and the directory synced; no file is no error.
Status remove_replica_of(Io& io, const std::string& dir);

}  // namespace aup::storage

// `aup backup --data DIR --to DEST`: a copy of a store as of one save,
// made while the store may be served (docs/operations.md, "Backing up").
//
// The copy is a store's copy as storage/copy.h makes one (the schema
// file, the term history, the images, the log's chain up to the cut),
// read as `aup replay` reads it, so the server never waits and changes no
// file the copy reads.
//
// Everything is written into DEST.partial, each file synced, the directory
// synced, then renamed to DEST and its parent synced: a backup stopped at
// any step leaves DEST absent (and DEST.partial, recognisably incomplete)
// or complete; one refused for an error (a failed write or sync, the
// parent's after the rename included) leaves neither. The source is only read. The copy is then verified by
// recovery (every digest, the chain) and must hold the save it was cut at.
// A copy opens as a store: restoring is opening it.
//
// Not incremental: an image's save number is moved up in place when its
// table has not changed (storage/store.h), so a hard link shared between
// two backups, or a backup and its source, could be changed through the
// other. Every backup copies every byte.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "storage/io.h"
#include "storage/status.h"

namespace aup::storage {

struct BackupReport {
  bool live = false;    // the source was being served
  std::string holder;   // then, the serving aup's pid
  uint64_t seq = 0;     // the save the copy holds
  uint64_t files = 0;   // copied
  uint64_t bytes = 0;   // copied (a segment's zero rest not counted)
  uint64_t rows = 0;    // in the copy's tables, as verified
};

// Bytes copied so far, for a progress line.
using BackupProgress = std::function<void(uint64_t bytes)>;

// Copies the store `dir` to `to`, which must not exist (nor `to`.partial).
// err 0 on a refusal that is the source's damage (found verifying the
// copy); an errno for the environment (ENOENT for no store, EEXIST for an
// existing destination, the errno of a failed read or write).
Status backup(Io& io, const std::string& dir, const std::string& to, BackupReport& report,
              const BackupProgress& progress);

}  // namespace aup::storage

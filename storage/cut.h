// Cutting a store's log back to a save (docs/replication.md, "A deposed
// primary"): a node that follows a new primary may hold entries after the
// last one it shares with it (entries the old primary wrote that never
// reached the new one). Those entries are taken off its log and kept
// beside it, and the store then opens as of the save it keeps.
//
//   DIR/cut-FIRST-LAST  the entries cut off (saves FIRST to LAST), kept for
//                       whoever wants to look: an 8-byte magic "aupcut1\0",
//                       then each entry as a 32-byte header (u32 payload
//                       length, u32 term, u64 save, u64 previous save, u64
//                       XXH3-64 of the payload), its payload, and zeros to
//                       a multiple of 8; little-endian
//   DIR/cut             while the cut is under way: `after SAVE`, then a
//                       line `log-N FROM TO` for each byte range of a log
//                       segment that held the entries
//
// Two steps. prepare_cut, on a store open and quiet (no checkpoint
// running, no entry being written), writes the side file, then the marker,
// each durably; the store is then restarted. finish_cut, at the start of
// every writable open, zeroes each range the marker names, syncs each
// segment, and removes the marker. A crash at any point leaves no marker
// (nothing was cut), or the marker (the next open zeroes again: zeroing is
// the same whatever part of it was done), or the cut done. Only bytes
// after the kept save's entry are zeroed, so the log reads as ending
// there, with nothing valid after its end: recovery's rules hold as for
// any log.
#pragma once

#include <cstdint>
#include <string>

#include "storage/io.h"
#include "storage/status.h"

namespace aup::storage {

struct CutPrepared {
  uint64_t first = 0, last = 0;  // the saves cut off (none: first == 0)
  std::string side_file;         // DIR/cut-FIRST-LAST
};

// Reads the log of `dir` (read only) and writes the side file and the
// marker for cutting every entry after save `after`. Nothing is written
// when no entry follows it.
Status prepare_cut(Io& io, const std::string& dir, uint64_t after, CutPrepared& out);

// At a writable open, before anything reads the log: finishes a cut that
// a marker names. `after` is the save it kept (UINT64_MAX: no cut).
Status finish_cut(Io& io, const std::string& dir, uint64_t& after);

}  // namespace aup::storage

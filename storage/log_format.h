// The log's byte layout. A log is a chain of segment files `log-N` in the
// store directory (N counting up); the grammar and the recovery rules are
// in docs/store-format.md.
//
// Segment header, 64 bytes at offset 0:
//
//   0   8  magic "AUPLOG\0\1"
//   8   4  format version (1), little-endian
//   12  4  header size (64)
//   16  8  segment number N (must match the file name)
//   24  8  generation: random, nonzero, new each time the file is (re)used
//   32  8  predecessor: the generation of the segment this one continues
//          (0 for the first segment of a store)
//   40  8  segment size in bytes (allocated whole when created)
//   48  8  reserved (0)
//   56  8  XXH3-64 of bytes 0..55
//
// Entries follow at offset 64, each starting at a multiple of 8:
//
//   0   4  payload length L; 0 (with the rest of the header 0) marks the end
//   4   4  term: the primary's term that wrote it (docs/replication.md);
//          never lower than the entry before it's; 0 on a store that has
//          never been part of a cluster (and in logs from before terms,
//          where these bytes were reserved and zero)
//   8   8  save number (increasing, may skip)
//   16  8  the previous entry's save number (0 before the first)
//   24  8  the previous entry's digest (0 before the first)
//   32  8  digest: XXH3-64 of the payload, seeded with the XXH3-64 of
//          bytes 0..31 seeded with the segment's generation (so stale bytes
//          of a reused segment never pass for entries of the live log)
//   40  L  payload, then zeros up to a multiple of 8
//
// Numbers are little-endian. Entries chain by digest, not by number. A
// writer reserves the 40 header bytes (zero), encodes the payload right
// after them in the same buffer, then fills the header in
// (Log::begin_entry, Log::append_entry): the payload is never copied.
#pragma once

#include <cstdint>

namespace aup::storage::log_format {

inline constexpr char kMagic[8] = {'A', 'U', 'P', 'L', 'O', 'G', '\0', '\1'};
inline constexpr uint32_t kVersion = 1;
inline constexpr uint32_t kHeaderBytes = 64;
inline constexpr uint32_t kEntryHeaderBytes = 40;
inline constexpr uint32_t kAlign = 8;
// Preallocated so an append neither grows the file nor allocates blocks,
// and fdatasync writes only data.
inline constexpr uint64_t kDefaultSegmentBytes = uint64_t{64} << 20;
// Largest payload of one entry (one batch's changes).
inline constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 31;
// Terms count failovers and promotions: a store refuses to start a term
// past this one.
inline constexpr uint32_t kMaxTerm = UINT32_MAX;

inline uint64_t entry_bytes(uint64_t payload) {
  return (kEntryHeaderBytes + payload + kAlign - 1) / kAlign * kAlign;
}

}  // namespace aup::storage::log_format

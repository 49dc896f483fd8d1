// The replication stream between a primary and a replica
// (docs/replication.md). A replica connects to a line-protocol address the
// primary listens on and sends one request line:
//
//   {"replicate": {"save": S, "covered": C, "terms": [[T, F], ...],
//                  "schema": "HEX", "copy": false, "node": "ID"}}
//
// its last save, the greatest save its images cover (it cannot cut its log
// back past that), its term history (storage/terms.h: each term and its
// first save), its store's schema (the schema file's body,
// storage/schema_codec.h, in hex), and whether it asks for a copy of the
// primary's store outright; in a cluster, also its node's name (the
// primary counts the acknowledgements of the replicas it names as
// synchronous: runtime/cluster.h). The primary answers one line:
//
//   {"code":"ok","result":{"save":P,"term":T}}
//                                       entry frames follow, from save S+1
//                                       (a replica of a later term than T
//                                       follows another primary)
//   {"code":"cut","result":{"save":K}}  the replica holds entries after
//                                       save K that the primary does not:
//                                       it cuts its log back to K
//                                       (storage/cut.h) and connects again
//   {"code":"copy"}                     file frames follow: a copy of the
//                                       primary's store (storage/copy.h),
//                                       then the end of the copy
//   {"code":CODE,"message":M}           refused (`bad_request`: a module that
//                                       differs, saying what differs;
//                                       `not_primary` from a replica)
//
// After `ok` or `copy` the connection carries frames, each a 40-byte
// header and a payload:
//
//   0   1  kind: 'E' entry, 'B' beat, 'F' a file of the copy, 'D' its
//          bytes, 'C' the copy's end (primary to replica); 'A' ack (back)
//   1   3  zero
//   4   4  E: the entry's term; B: the primary's term
//   8   4  payload length L (at most the log's largest payload; 0 for B,
//          A and C; a file's name for F; at most kCopyChunkBytes for D)
//   12  4  zero
//   16  8  E: save number; B: the primary's last durable save; F: the
//          file's bytes; C: the save the copy holds; A: the replica's last
//          durable save
//   24  8  E: the save before it (the replica's last, or the entry does
//          not follow); F: the bytes allocated (a log segment's whole
//          size; 0 for another file); A: the replica's last applied save
//   32  8  XXH3-64 of the payload (0 without one)
//   40  L  the payload: an entry's is the log entry's, byte for byte
//
// Numbers are little-endian. The payload digest is the payload's alone
// (not seeded with a segment's generation as the log's is), so a replica
// checks what it received before writing it into a store of its own.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/json.h"
#include "storage/terms.h"

namespace aup::runtime::stream {

inline constexpr size_t kFrameHeaderBytes = 40;

enum class Kind : uint8_t { Entry = 'E', Beat = 'B', File = 'F', Data = 'D', CopyEnd = 'C', Ack = 'A' };

// A copy's bytes travel in pieces of at most this.
inline constexpr size_t kCopyChunkBytes = size_t{1} << 20;

struct Frame {
  Kind kind = Kind::Entry;
  uint32_t term = 0;
  uint64_t save = 0;
  uint64_t prev = 0;  // Entry: the save before; File: its allocation; Ack: the applied save
  uint64_t digest = 0;
  std::span<const uint8_t> payload;
};

// Appends `f`'s header and payload to `out` (the digest is computed here).
void put_frame(std::vector<uint8_t>& out, const Frame& f);

// Reads one frame from bytes [at, size) of `in`: true with `f` (its
// payload viewing `in`) and `at` moved past it; false when the frame is
// not all there yet (`why` empty) or is not a frame (`why` says how).
bool take_frame(const std::vector<uint8_t>& in, size_t& at, Frame& f, std::string& why);

// What a replica says of its store in its handshake.
struct Hello {
  uint64_t save = 0;
  uint64_t covered = 0;
  storage::TermHistory terms;
  std::vector<uint8_t> schema;  // a schema file's bytes
  bool copy = false;
  std::string node;  // a cluster's replica: its node's name ("": none)
};
// The handshake line a replica sends (without its newline).
std::string handshake_line(const Hello& h);
// The handshake read back from the request's `replicate` object; false
// with why it is not one.
bool read_hello(const JsonDoc& doc, uint32_t object, Hello& out, std::string& why);

std::string to_hex(std::span<const uint8_t> bytes);
bool from_hex(std::string_view hex, std::vector<uint8_t>& out);

}  // namespace aup::runtime::stream

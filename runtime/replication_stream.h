// The replication stream between a primary and a replica
// (docs/replication.md, "The stream"). A replica connects to any address
// the primary listens on (lines or HTTP's port alike is not needed: a
// line-protocol address) and sends one request line:
//
//   {"replicate": {"save": S, "term": T, "schema": "HEX"}}
//
// its last save, that entry's term, and its store's schema (the schema
// file's body, storage/schema_codec.h, in hex). The primary answers one
// line, `{"code":"ok","result":{"term":T,"save":P}}` (its term and last
// durable save), or a refusal (`bad_request` for a module that differs,
// saying what differs; `not_primary` from a replica, naming its primary),
// and after `ok` the connection carries frames, each a 40-byte header and
// a payload:
//
//   0   1  kind: 'E' entry, 'B' beat (primary to replica), 'A' ack (back)
//   1   3  zero
//   4   4  E: the entry's term
//   8   4  E: payload length L (at most the log's largest payload)
//   12  4  zero
//   16  8  E: save number; B: the primary's last durable save; A: the
//          replica's last durable save
//   24  8  E: the save before it (the replica's last, or the entry does
//          not follow); A: the replica's last applied save
//   32  8  E: XXH3-64 of the payload
//   40  L  the payload: the log entry's, byte for byte
//
// Numbers are little-endian. The payload digest is the payload's alone
// (not seeded with a segment's generation as the log's is), so a replica
// checks what it received before writing it into a log of its own.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace aup::runtime::stream {

inline constexpr size_t kFrameHeaderBytes = 40;

enum class Kind : uint8_t { Entry = 'E', Beat = 'B', Ack = 'A' };

struct Frame {
  Kind kind = Kind::Entry;
  uint32_t term = 0;
  uint64_t save = 0;
  uint64_t prev = 0;  // Entry: the save before; Ack: the applied save
  uint64_t digest = 0;
  std::span<const uint8_t> payload;
};

// Appends `f`'s header and payload to `out` (the digest is computed here
// for an entry).
void put_frame(std::vector<uint8_t>& out, const Frame& f);

// Reads one frame from bytes [at, size) of `in`: true with `f` (its
// payload viewing `in`) and `at` moved past it; false when the frame is
// not all there yet (`why` empty) or is not a frame (`why` says how).
bool take_frame(const std::vector<uint8_t>& in, size_t& at, Frame& f, std::string& why);

// The handshake line a replica sends (without its newline).
std::string handshake_line(uint64_t save, uint32_t term, std::span<const uint8_t> schema_body);

std::string to_hex(std::span<const uint8_t> bytes);
bool from_hex(std::string_view hex, std::vector<uint8_t>& out);

}  // namespace aup::runtime::stream

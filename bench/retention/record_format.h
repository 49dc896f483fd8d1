// The fixture file and output frame layouts, next to the code that reads
// and writes them. Little-endian throughout.
//
//   file header, kFileHeaderBytes = 24
//     0  magic          8 bytes  "AUPRET1\n"
//     8  record_count   u32      records that follow, 1..kMaxRecords
//    12  reserved       u32      0
//    16  seed           u64      generator seed (provenance only)
//   then record_count records, each:
//   record header, kRecordHeaderBytes = 16
//     0  magic          u32      kRecordMagic ("REC1")
//     4  body_length    u32      1..kMaxBodyBytes
//     8  select_offset  u32      the selection is body[select_offset,
//    12  select_length  u32        select_offset + select_length)
//   body, body_length bytes
//
// A file that ends before record_count records, or has bytes after them, is
// truncated or corrupt: the count is in the header so that a cut at a record
// boundary is not mistaken for a clean end.
//
// Output, one frame per record in input order:
//   frame header, kFrameHeaderBytes = 8
//     0  seq            u32      the record's position in the input, from 0
//     4  length         u32      select_length
//   the selected bytes
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace aup::retention {

inline constexpr std::array<char, 8> kFileMagic = {'A', 'U', 'P', 'R', 'E', 'T', '1', '\n'};
inline constexpr size_t kFileHeaderBytes = 24;
inline constexpr uint32_t kRecordMagic = 0x31434552;  // "REC1" read little-endian
inline constexpr size_t kRecordHeaderBytes = 16;
inline constexpr size_t kFrameHeaderBytes = 8;

// One record is at most one request line of the runtime (aup's
// 16 MiB limit), which is also the largest buffer capacity class.
inline constexpr uint32_t kMaxBodyBytes = 16u << 20;
// Bounds the reader's loop and the per-record latency samples (8 MiB).
inline constexpr uint32_t kMaxRecords = 1u << 20;

struct FileHeader {
  uint32_t record_count = 0;
  uint64_t seed = 0;
};

struct RecordHeader {
  uint32_t body_length = 0;
  uint32_t select_offset = 0;
  uint32_t select_length = 0;
};

inline void put_u32(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
}
inline void put_u64(std::byte* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
}
inline uint32_t get_u32(const std::byte* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint32_t>(p[i]);
  return v;
}
inline uint64_t get_u64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint64_t>(p[i]);
  return v;
}

inline void encode_file_header(const FileHeader& h, std::byte* out) {
  for (size_t i = 0; i < kFileMagic.size(); ++i) out[i] = static_cast<std::byte>(kFileMagic[i]);
  put_u32(out + 8, h.record_count);
  put_u32(out + 12, 0);
  put_u64(out + 16, h.seed);
}

inline void encode_record_header(const RecordHeader& h, std::byte* out) {
  put_u32(out, kRecordMagic);
  put_u32(out + 4, h.body_length);
  put_u32(out + 8, h.select_offset);
  put_u32(out + 12, h.select_length);
}

inline void encode_frame_header(uint32_t seq, uint32_t length, std::byte* out) {
  put_u32(out, seq);
  put_u32(out + 4, length);
}

}  // namespace aup::retention

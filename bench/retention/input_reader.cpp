#include "bench/retention/input_reader.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>

#include "bench/retention/io.h"

namespace aup::retention {

Status validate_record_header(const RecordHeader& h, uint32_t seq) {
  if (h.body_length == 0 || h.body_length > kMaxBodyBytes) {
    return error("record {}: invalid body length {} (must be 1..{})", seq, h.body_length, kMaxBodyBytes);
  }
  // 64-bit sum: offset + length may wrap in 32 bits.
  if (uint64_t{h.select_offset} + h.select_length > h.body_length) {
    return error("record {}: invalid range: selection [{}, {}) lies outside the {}-byte body", seq,
                 h.select_offset, uint64_t{h.select_offset} + h.select_length, h.body_length);
  }
  return {};
}

Status InputReader::read_exact(std::span<std::byte> dst, const char* what) {
  uint64_t at = bytes_read_;
  auto got = read_full(fd_, dst);
  if (!got.ok()) return error("input: {} at byte {}: {}", what, at, got.message());
  bytes_read_ += got.value();
  if (got.value() < dst.size()) {
    return error("truncated input: {} ends at byte {} after {} of {} bytes", what, bytes_read_, got.value(),
                 dst.size());
  }
  return {};
}

Result<FileHeader> InputReader::read_file_header() {
  assert(!header_read_);
  std::array<std::byte, kFileHeaderBytes> raw{};
  if (Status s = read_exact(raw, "the file header"); !s.ok()) return s.take_error();
  if (std::memcmp(raw.data(), kFileMagic.data(), kFileMagic.size()) != 0) {
    return error("input is not a retention fixture (bad magic)");
  }
  FileHeader h{get_u32(raw.data() + 8), get_u64(raw.data() + 16)};
  if (h.record_count == 0 || h.record_count > kMaxRecords) {
    return error("input: record count {} is outside 1..{}", h.record_count, kMaxRecords);
  }
  record_count_ = h.record_count;
  header_read_ = true;
  return h;
}

Result<std::optional<RecordHeader>> InputReader::next_header() {
  assert(header_read_ && "read_file_header first");
  assert(body_left_ == 0 && "the previous body must be consumed first");
  if (next_seq_ == record_count_) {
    std::byte extra{};
    auto got = read_full(fd_, std::span(&extra, 1));
    if (!got.ok()) return error("input: after the last record: {}", got.message());
    if (got.value() != 0) {
      return error("input: unexpected bytes after the last record (at byte {})", bytes_read_);
    }
    return std::optional<RecordHeader>{};
  }
  uint32_t seq = next_seq_;
  std::array<std::byte, kRecordHeaderBytes> raw{};
  auto got = read_full(fd_, raw);
  if (!got.ok()) return error("input: record {} header at byte {}: {}", seq, bytes_read_, got.message());
  uint64_t at = bytes_read_;
  bytes_read_ += got.value();
  if (got.value() == 0) {
    return error("truncated input: {} of {} records, the file ends at byte {}", seq, record_count_, at);
  }
  if (got.value() < raw.size()) {
    return error("truncated input: record {} header at byte {} has {} of {} bytes", seq, at, got.value(),
                 raw.size());
  }
  if (get_u32(raw.data()) != kRecordMagic)
    return error("input: record {} at byte {}: bad record magic", seq, at);
  RecordHeader h{get_u32(raw.data() + 4), get_u32(raw.data() + 8), get_u32(raw.data() + 12)};
  if (Status s = validate_record_header(h, seq); !s.ok()) return s.take_error();
  ++next_seq_;
  body_left_ = h.body_length;
  return std::optional<RecordHeader>{h};
}

Status InputReader::read_body(std::span<std::byte> dst) {
  assert(dst.size() <= body_left_ && "reading past the record's body");
  body_left_ -= dst.size();
  Status s = read_exact(dst, "a record body");
  if (!s.ok()) return error("record {}: {}", current_seq(), s.message());
  return {};
}

Status InputReader::discard_body(uint64_t bytes, std::span<std::byte> scratch) {
  assert(!scratch.empty());
  // Bounded: each turn consumes min(left, scratch) > 0 bytes.
  while (bytes > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(bytes, scratch.size()));
    if (Status s = read_body(scratch.first(n)); !s.ok()) return s;
    bytes -= n;
  }
  return {};
}

}  // namespace aup::retention

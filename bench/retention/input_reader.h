// The one input reader every policy shares: file header, then per record a
// validated header and the body, read with read(2) straight into the
// caller's buffer. Every input byte is read (skipped bytes go through a
// scratch buffer, never lseek), so all policies pay the same input cost.
//
// Recovery policy, case by case; each is an Error with
// the record number and byte offset, and each has a named test:
//   - a file shorter than its header, or with the wrong magic;
//   - a record count of 0 or above kMaxRecords;
//   - a cut inside a record header or body (truncated input);
//   - the end of the file before record_count records (truncated input);
//   - bytes after the last record;
//   - a record with the wrong magic, an empty or oversized body, or a
//     selection that does not lie inside the body (invalid range).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "bench/retention/record_format.h"
#include "bench/retention/status.h"

namespace aup::retention {

class InputReader {
 public:
  // `fd` must outlive the reader; the reader does not close it.
  explicit InputReader(int fd) : fd_(fd) {}
  InputReader(const InputReader&) = delete;
  InputReader& operator=(const InputReader&) = delete;

  Result<FileHeader> read_file_header();

  // The next record's header, or nullopt after the last record. The
  // previous record's body must have been consumed.
  Result<std::optional<RecordHeader>> next_header();

  // Reads the next dst.size() bytes of the current body into dst.
  Status read_body(std::span<std::byte> dst);
  // Reads and drops the next `bytes` of the current body through scratch.
  Status discard_body(uint64_t bytes, std::span<std::byte> scratch);

  // The record whose header was read last, from 0.
  uint32_t current_seq() const { return next_seq_ - 1; }
  uint64_t body_left() const { return body_left_; }
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  Status read_exact(std::span<std::byte> dst, const char* what);

  int fd_;
  uint32_t record_count_ = 0;
  uint32_t next_seq_ = 0;
  uint64_t body_left_ = 0;
  uint64_t bytes_read_ = 0;
  bool header_read_ = false;
};

// A header's own consistency, apart from where it was read.
Status validate_record_header(const RecordHeader& h, uint32_t seq);

}  // namespace aup::retention

// A 64-bit hash to show that files are byte-for-byte equal (fixtures, and the
// outputs of every policy against the generator's expected output). Not
// cryptographic: the files are our own, nobody is forging them. It eats a
// word at a time so that hashing a 128 MiB fixture costs tens of
// milliseconds, always outside the timed region.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "bench/retention/status.h"

namespace aup::retention {

class Hasher {
 public:
  // Feeding the same bytes in any split gives the same hash.
  void update(std::span<const std::byte> bytes);
  uint64_t finish() const;

 private:
  void mix(uint64_t word);

  uint64_t state_ = 0x243F6A8885A308D3ull;  // pi's digits: any fixed non-zero start
  uint64_t length_ = 0;
  std::array<std::byte, 8> tail_{};
  size_t tail_size_ = 0;
};

uint64_t hash_bytes(std::span<const std::byte> bytes);
// The whole file's hash, read in fixed chunks.
Result<uint64_t> hash_file(const std::string& path);
// 16 lower-case hex digits.
std::string hex64(uint64_t value);

}  // namespace aup::retention

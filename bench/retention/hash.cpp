#include "bench/retention/hash.h"

#include <bit>
#include <cstring>
#include <vector>

#include "bench/retention/io.h"

namespace aup::retention {
namespace {

static_assert(std::endian::native == std::endian::little,
              "hash words are loaded in host order; the fixture hashes recorded assume little-endian");

constexpr uint64_t kMul1 = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kMul2 = 0xC2B2AE3D27D4EB4Full;
// Large enough that the read syscalls do not dominate, small enough to stay
// out of the way of the memory being measured elsewhere.
constexpr size_t kHashChunkBytes = 1u << 20;

uint64_t load_word(const std::byte* p) {
  uint64_t w = 0;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// MurmurHash3's finaliser: every input bit reaches every output bit.
uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

}  // namespace

// Each step is a bijection of the state for a fixed word and of the word for
// a fixed state, so two inputs of equal length that differ in one word always
// end in different states.
void Hasher::mix(uint64_t word) { state_ = std::rotl(state_ ^ (word * kMul1), 31) * kMul2; }

void Hasher::update(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;  // its data() may be null, which memcpy must not see
  length_ += bytes.size();
  size_t i = 0;
  if (tail_size_ > 0) {
    size_t take = std::min(tail_.size() - tail_size_, bytes.size());
    std::memcpy(tail_.data() + tail_size_, bytes.data(), take);
    tail_size_ += take;
    i = take;
    if (tail_size_ < tail_.size()) return;
    mix(load_word(tail_.data()));
    tail_size_ = 0;
  }
  for (; i + 8 <= bytes.size(); i += 8) mix(load_word(bytes.data() + i));
  tail_size_ = bytes.size() - i;
  std::memcpy(tail_.data(), bytes.data() + i, tail_size_);
}

uint64_t Hasher::finish() const {
  uint64_t s = state_;
  if (tail_size_ > 0) {
    std::array<std::byte, 8> padded{};
    std::memcpy(padded.data(), tail_.data(), tail_size_);
    s = std::rotl(s ^ (load_word(padded.data()) * kMul1), 31) * kMul2;
  }
  return fmix64(s ^ length_);
}

uint64_t hash_bytes(std::span<const std::byte> bytes) {
  Hasher h;
  h.update(bytes);
  return h.finish();
}

Result<uint64_t> hash_file(const std::string& path) {
  auto file = File::open_read(path);
  if (!file.ok()) return file.take_error();
  std::vector<std::byte> chunk(kHashChunkBytes);
  Hasher h;
  // Bounded by the file size: each turn consumes at least one byte or ends.
  for (;;) {
    auto got = read_full(file.value().fd(), chunk);
    if (!got.ok()) return error("{}: {}", path, got.message());
    h.update(std::span(chunk).first(got.value()));
    if (got.value() < chunk.size()) break;
  }
  return h.finish();
}

std::string hex64(uint64_t value) { return fmt::format("{:016x}", value); }

}  // namespace aup::retention

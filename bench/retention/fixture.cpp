#include "bench/retention/fixture.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <vector>

#include "bench/retention/hash.h"
#include "bench/retention/io.h"

namespace aup::retention {
namespace {

constexpr uint32_t kKiB = 1024;
constexpr uint32_t kSmallBodyBytes = 64 * kKiB;
constexpr uint32_t kSmallSelectBytes = 64;
constexpr uint32_t kLargeSelectBytes = 48 * kKiB;
// Mixed bodies: one octave of six between 4 KiB (2^12) and 256 KiB (2^18),
// uniform inside it, so every capacity class from 4 KiB to 256 KiB is about
// equally common (log-uniform sizes).
constexpr uint32_t kMixedLowestOctave = 12;
constexpr uint32_t kMixedOctaves = 6;

}  // namespace

std::string_view shape_name(Shape shape) {
  switch (shape) {
    case Shape::small_selection: return "small";
    case Shape::large_selection: return "large";
    case Shape::mixed: return "mixed";
  }
  assert(false && "unknown shape");
  return "?";
}

std::optional<Shape> parse_shape(std::string_view name) {
  for (Shape s : {Shape::small_selection, Shape::large_selection, Shape::mixed}) {
    if (shape_name(s) == name) return s;
  }
  return std::nullopt;
}

RecordHeader draw_record(Shape shape, SplitMix64& rng) {
  RecordHeader h;
  switch (shape) {
    case Shape::small_selection:
      h.body_length = kSmallBodyBytes;
      h.select_length = kSmallSelectBytes;
      break;
    case Shape::large_selection:
      h.body_length = kSmallBodyBytes;
      h.select_length = kLargeSelectBytes;
      break;
    case Shape::mixed: {
      uint32_t octave = kMixedLowestOctave + rng.below(kMixedOctaves);
      uint32_t low = 1u << octave;
      h.body_length = low + rng.below(low);
      // Selection fraction u^2 for u uniform in [0, 1): small selections are
      // the common case, whole-body ones still occur (mean fraction 1/3).
      uint64_t u = rng.next() >> 32;
      uint64_t fraction = (u * u) >> 32;  // u^2 in 32-bit fixed point
      auto select = static_cast<uint32_t>((h.body_length * fraction) >> 32);
      h.select_length = select == 0 ? 1 : select;
      break;
    }
  }
  h.select_offset = rng.below(h.body_length - h.select_length + 1);
  assert(uint64_t{h.select_offset} + h.select_length <= h.body_length);
  return h;
}

Result<FixtureInfo> write_fixture(const FixtureSpec& spec, int fd, int expect_fd) {
  assert(spec.records >= 1 && spec.records <= kMaxRecords);
  SplitMix64 rng(spec.seed);
  FixtureInfo info;
  info.records = spec.records;
  Hasher file_hash;
  Hasher output_hash;

  std::array<std::byte, kFileHeaderBytes> file_header{};
  encode_file_header(FileHeader{spec.records, spec.seed}, file_header.data());
  if (Status s = write_all(fd, file_header); !s.ok()) return error("writing the fixture: {}", s.message());
  file_hash.update(file_header);
  info.file_bytes += file_header.size();

  std::vector<std::byte> record;
  for (uint32_t seq = 0; seq < spec.records; ++seq) {
    RecordHeader h = draw_record(spec.shape, rng);
    record.resize(kRecordHeaderBytes + h.body_length);
    encode_record_header(h, record.data());
    // Random body words, so that a policy that outputs the wrong bytes (a
    // stale buffer, a wrong offset) cannot match the expected hash by luck.
    std::byte* body = record.data() + kRecordHeaderBytes;
    for (uint32_t i = 0; i < h.body_length; i += 8) {
      uint64_t w = rng.next();
      std::memcpy(body + i, &w, std::min<uint32_t>(8, h.body_length - i));
    }
    if (Status s = write_all(fd, record); !s.ok()) return error("writing the fixture: {}", s.message());
    file_hash.update(record);
    info.file_bytes += record.size();
    info.body_bytes += h.body_length;
    info.selected_bytes += h.select_length;

    std::array<std::byte, kFrameHeaderBytes> frame{};
    encode_frame_header(seq, h.select_length, frame.data());
    auto selection = std::span<const std::byte>(body + h.select_offset, h.select_length);
    output_hash.update(frame);
    output_hash.update(selection);
    info.output_bytes += frame.size() + selection.size();
    if (expect_fd >= 0) {
      std::array<iovec, 2> pieces{iovec{frame.data(), frame.size()},
                                  iovec{const_cast<std::byte*>(selection.data()), selection.size()}};
      if (Status s = write_all(expect_fd, pieces); !s.ok()) {
        return error("writing the expected output: {}", s.message());
      }
    }
  }
  info.file_hash = file_hash.finish();
  info.output_hash = output_hash.finish();
  return info;
}

}  // namespace aup::retention

#include "bench/retention/fixture.h"

#include <doctest/doctest.h>

#include "bench/retention/hash.h"
#include "tests/retention/test_util.h"

namespace aup::retention {
namespace {

using test::make_fixture;
using test::record_offset;

TEST_SUITE("fixture") {
  TEST_CASE("shape names round-trip") {
    for (Shape s : {Shape::small_selection, Shape::large_selection, Shape::mixed}) {
      CHECK(parse_shape(shape_name(s)) == s);
    }
    CHECK_FALSE(parse_shape("huge").has_value());
  }

  TEST_CASE("the shapes: 64 KiB with 64 B or 48 KiB, mixed 4..256 KiB") {
    SplitMix64 rng(20260922);
    for (int i = 0; i < 2000; ++i) {
      RecordHeader small = draw_record(Shape::small_selection, rng);
      CHECK(small.body_length == 65536);
      CHECK(small.select_length == 64);
      CHECK(small.select_offset + small.select_length <= small.body_length);
      RecordHeader large = draw_record(Shape::large_selection, rng);
      CHECK(large.body_length == 65536);
      CHECK(large.select_length == 48 * 1024);
      CHECK(large.select_offset + large.select_length <= large.body_length);
      RecordHeader mixed = draw_record(Shape::mixed, rng);
      CHECK(mixed.body_length >= 4096);
      CHECK(mixed.body_length < 256 * 1024);
      CHECK(mixed.select_length >= 1);
      CHECK(uint64_t{mixed.select_offset} + mixed.select_length <= mixed.body_length);
    }
  }

  TEST_CASE("the same seed gives the same bytes; another seed other bytes") {
    auto a = make_fixture(Shape::mixed, 20, 1);
    auto b = make_fixture(Shape::mixed, 20, 1);
    auto c = make_fixture(Shape::mixed, 20, 2);
    CHECK(a.input == b.input);
    CHECK(a.info.file_hash == b.info.file_hash);
    CHECK(a.info.output_hash == b.info.output_hash);
    CHECK(a.info.file_hash != c.info.file_hash);
  }

  TEST_CASE("recorded sizes and hashes describe the bytes written") {
    auto f = make_fixture(Shape::small_selection, 5);
    CHECK(f.info.records == 5);
    CHECK(f.info.file_bytes == f.input.size());
    CHECK(f.info.file_bytes == kFileHeaderBytes + 5 * (kRecordHeaderBytes + 65536));
    CHECK(f.info.file_hash == hash_bytes(f.input));
    CHECK(f.info.output_bytes == f.expected.size());
    CHECK(f.info.output_hash == hash_bytes(f.expected));
    CHECK(f.info.selected_bytes == 5 * 64);
  }

  TEST_CASE("the expected output is each record's selection, framed, in order") {
    auto f = make_fixture(Shape::mixed, 12);
    auto frames = test::parse_frames(f.expected);
    REQUIRE(frames.size() == 12);
    for (uint32_t seq = 0; seq < 12; ++seq) {
      size_t at = record_offset(f.input, seq);
      uint32_t offset = get_u32(f.input.data() + at + 8);
      uint32_t length = get_u32(f.input.data() + at + 12);
      const std::byte* body = f.input.data() + at + kRecordHeaderBytes;
      CHECK(frames[seq].seq == seq);
      CHECK(frames[seq].bytes == std::vector<std::byte>(body + offset, body + offset + length));
    }
  }
}

}  // namespace
}  // namespace aup::retention

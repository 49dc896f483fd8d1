// The reader's recovery policy (input_reader.h), one named case each.
#include "bench/retention/input_reader.h"

#include <doctest/doctest.h>

#include <string>

#include "tests/retention/test_util.h"

namespace aup::retention {
namespace {

using test::make_fixture;
using test::MemFile;
using test::record_offset;
using test::set_u32;

// Reads the whole input as a policy would; the first error, or "" at a clean end.
std::string read_everything(const std::vector<std::byte>& input, uint64_t* bytes_read = nullptr) {
  MemFile f(input);
  InputReader r(f.fd());
  auto header = r.read_file_header();
  if (!header.ok()) return header.message();
  std::vector<std::byte> body(kMaxBodyBytes / 64);
  for (uint32_t guard = 0; guard <= kMaxRecords; ++guard) {
    auto h = r.next_header();
    if (!h.ok()) return h.message();
    if (!h.value()) break;
    if (h.value()->body_length > body.size()) body.resize(h.value()->body_length);
    Status s = r.read_body(std::span(body).first(h.value()->body_length));
    if (!s.ok()) return s.message();
  }
  if (bytes_read) *bytes_read = r.bytes_read();
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_SUITE("input_reader") {
  TEST_CASE("WholeFileReadsCleanlyAndCountsEveryByte") {
    auto f = make_fixture(Shape::mixed, 9);
    uint64_t read = 0;
    CHECK(read_everything(f.input, &read) == "");
    CHECK(read == f.input.size());
  }

  TEST_CASE("ProjectionReadsTheSelectionAndDiscardsTheRestThroughScratch") {
    auto f = make_fixture(Shape::small_selection, 3);
    MemFile file(f.input);
    InputReader r(file.fd());
    REQUIRE(r.read_file_header().ok());
    auto frames = test::parse_frames(f.expected);
    std::vector<std::byte> scratch(1000);  // not a divisor of anything here
    for (uint32_t seq = 0; seq < 3; ++seq) {
      auto h = r.next_header();
      REQUIRE(h.ok());
      REQUIRE(h.value());
      RecordHeader rh = *h.value();
      std::vector<std::byte> selection(rh.select_length);
      REQUIRE(r.discard_body(rh.select_offset, scratch).ok());
      REQUIRE(r.read_body(selection).ok());
      REQUIRE(r.discard_body(r.body_left(), scratch).ok());
      CHECK(selection == frames[seq].bytes);
      CHECK(r.current_seq() == seq);
    }
    auto end = r.next_header();
    REQUIRE(end.ok());
    CHECK_FALSE(end.value().has_value());
    CHECK(r.bytes_read() == f.input.size());
  }

  TEST_CASE("FileShorterThanItsHeaderIsTruncated") {
    auto f = make_fixture(Shape::small_selection, 1);
    f.input.resize(10);
    auto m = read_everything(f.input);
    CHECK(contains(m, "truncated input: the file header"));
  }

  TEST_CASE("WrongFileMagicIsNotAFixture") {
    auto f = make_fixture(Shape::small_selection, 1);
    f.input[0] = std::byte{'X'};
    CHECK(contains(read_everything(f.input), "not a retention fixture"));
  }

  TEST_CASE("RecordCountOutsideItsBoundIsRejected") {
    auto f = make_fixture(Shape::small_selection, 1);
    set_u32(f.input, 8, 0);
    CHECK(contains(read_everything(f.input), "record count 0"));
    set_u32(f.input, 8, kMaxRecords + 1);
    CHECK(contains(read_everything(f.input), "outside 1.."));
  }

  TEST_CASE("CutInsideARecordHeaderIsTruncatedInput") {
    auto f = make_fixture(Shape::small_selection, 3);
    f.input.resize(record_offset(f.input, 2) + 5);
    auto m = read_everything(f.input);
    CHECK(contains(m, "truncated input: record 2 header"));
    CHECK(contains(m, "5 of 16 bytes"));
  }

  TEST_CASE("CutInsideABodyIsTruncatedInput") {
    auto f = make_fixture(Shape::small_selection, 3);
    f.input.resize(record_offset(f.input, 1) + kRecordHeaderBytes + 1000);
    auto m = read_everything(f.input);
    CHECK(contains(m, "record 1: truncated input"));
    CHECK(contains(m, "1000 of 65536 bytes"));
  }

  TEST_CASE("CutAtARecordBoundaryBeforeTheCountIsTruncatedInput") {
    auto f = make_fixture(Shape::small_selection, 3);
    f.input.resize(record_offset(f.input, 2));
    CHECK(contains(read_everything(f.input), "truncated input: 2 of 3 records"));
  }

  TEST_CASE("BytesAfterTheLastRecordAreReported") {
    auto f = make_fixture(Shape::small_selection, 2);
    f.input.push_back(std::byte{0});
    CHECK(contains(read_everything(f.input), "unexpected bytes after the last record"));
  }

  TEST_CASE("WrongRecordMagicIsReported") {
    auto f = make_fixture(Shape::small_selection, 2);
    set_u32(f.input, record_offset(f.input, 1), 0xdeadbeef);
    CHECK(contains(read_everything(f.input), "record 1 at byte"));
  }

  TEST_CASE("SelectionOutsideTheBodyIsAnInvalidRange") {
    auto f = make_fixture(Shape::small_selection, 2);
    size_t at = record_offset(f.input, 1);
    set_u32(f.input, at + 8, 65500);  // offset 65500 + 64 bytes > 65536
    auto m = read_everything(f.input);
    CHECK(contains(m, "record 1: invalid range: selection [65500, 65564)"));
  }

  TEST_CASE("RangeWhoseEndWrapsIn32BitsIsAnInvalidRange") {
    auto f = make_fixture(Shape::small_selection, 1);
    size_t at = record_offset(f.input, 0);
    set_u32(f.input, at + 8, 0xFFFFFFF0u);
    set_u32(f.input, at + 12, 0x20);
    CHECK(contains(read_everything(f.input), "invalid range"));
  }

  TEST_CASE("EmptyOrOversizedBodyIsRejected") {
    auto f = make_fixture(Shape::small_selection, 1);
    size_t at = record_offset(f.input, 0);
    set_u32(f.input, at + 4, 0);
    CHECK(contains(read_everything(f.input), "invalid body length 0"));
    set_u32(f.input, at + 4, kMaxBodyBytes + 1);
    CHECK(contains(read_everything(f.input), "invalid body length"));
  }

  TEST_CASE("validate_record_header accepts an empty selection at the end") {
    CHECK(validate_record_header(RecordHeader{10, 10, 0}, 0).ok());
    CHECK(validate_record_header(RecordHeader{10, 0, 10}, 0).ok());
    CHECK_FALSE(validate_record_header(RecordHeader{10, 1, 10}, 0).ok());
  }
}

}  // namespace
}  // namespace aup::retention

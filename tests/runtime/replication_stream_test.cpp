// The replication stream's frames (runtime/replication_stream.h): each
// kind written and read back, a frame not yet whole, and each way bytes
// are refused as a frame.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runtime/replication_stream.h"

namespace aup::runtime::stream {
namespace {

std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

TEST_SUITE("replication_stream") {
  TEST_CASE("FramesOfEachKindReadBackAsWritten") {
    std::vector<uint8_t> payload = bytes_of("the changes of one batch");
    std::vector<uint8_t> out;
    put_frame(out, Frame{Kind::Entry, 3, 17, 16, 0, payload});
    put_frame(out, Frame{Kind::Beat, 3, 17, 0, 0, {}});
    put_frame(out, Frame{Kind::Ack, 0, 17, 15, 0, {}});
    CHECK(out.size() == 3 * kFrameHeaderBytes + payload.size());
    size_t at = 0;
    Frame f;
    std::string why;
    REQUIRE(take_frame(out, at, f, why));
    CHECK(f.kind == Kind::Entry);
    CHECK(f.term == 3);
    CHECK(f.save == 17);
    CHECK(f.prev == 16);
    CHECK(std::vector<uint8_t>(f.payload.begin(), f.payload.end()) == payload);
    REQUIRE(take_frame(out, at, f, why));
    CHECK((f.kind == Kind::Beat && f.save == 17 && f.payload.empty()));
    REQUIRE(take_frame(out, at, f, why));
    CHECK((f.kind == Kind::Ack && f.save == 17 && f.prev == 15));
    CHECK(at == out.size());
    CHECK_FALSE(take_frame(out, at, f, why));
    CHECK(why.empty());
  }

  TEST_CASE("AFrameNotYetWholeIsWaitedFor") {
    std::vector<uint8_t> out;
    put_frame(out, Frame{Kind::Entry, 0, 1, 0, 0, bytes_of("payload")});
    for (size_t n = 0; n < out.size(); ++n) {
      std::vector<uint8_t> part(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
      size_t at = 0;
      Frame f;
      std::string why;
      CHECK_FALSE(take_frame(part, at, f, why));
      CHECK(why.empty());
      CHECK(at == 0);
    }
  }

  TEST_CASE("AnEntryWhosePayloadDoesNotMatchItsDigestIsRefused") {
    std::vector<uint8_t> out;
    put_frame(out, Frame{Kind::Entry, 0, 9, 8, 0, bytes_of("payload")});
    out.back() ^= 1;
    size_t at = 0;
    Frame f;
    std::string why;
    CHECK_FALSE(take_frame(out, at, f, why));
    CHECK(why == "entry 9's payload does not match its digest");
  }

  TEST_CASE("UnknownKindsAndImpossibleLengthsAreRefused") {
    std::vector<uint8_t> out;
    put_frame(out, Frame{Kind::Beat, 0, 1, 0, 0, {}});
    out[0] = 'Z';
    size_t at = 0;
    Frame f;
    std::string why;
    CHECK_FALSE(take_frame(out, at, f, why));
    CHECK(why == "a frame of unknown kind 90");
    out[0] = 'A';
    out[8] = 5;  // an ack with a payload
    CHECK_FALSE(take_frame(out, at, f, why));
    CHECK(why == "a frame whose payload length 5 cannot be");
  }

  TEST_CASE("HexReadsBackAndRefusesWhatIsNotHex") {
    std::vector<uint8_t> b = {0, 1, 0xab, 0xff}, back;
    CHECK(to_hex(b) == "0001abff");
    CHECK(from_hex("0001abff", back));
    CHECK(back == b);
    CHECK_FALSE(from_hex("abc", back));
    CHECK_FALSE(from_hex("zz", back));
    CHECK_FALSE(from_hex("AB", back));  // written lower case, read so
  }
}

}  // namespace
}  // namespace aup::runtime::stream

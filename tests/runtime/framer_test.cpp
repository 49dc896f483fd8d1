// The line framer (runtime/framer.h) over what a connection sends in
// arbitrary pieces; the framer that holds either protocol is the HTTP
// suite's and the servers' to exercise.
#include "runtime/framer.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace aup::runtime {
namespace {

// What the framer gives for `chunks` written one after another (each read
// takes one chunk), then the end of input: lines as they are, a line over
// the limit as "<too long>".
std::vector<std::string> frame(const std::vector<std::string>& chunks, size_t max_line) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  LineFramer in(max_line, 16);
  std::vector<std::string> out;
  auto drain = [&] {
    std::string_view line;
    for (LineFramer::Piece p; (p = in.next(line)) != LineFramer::Piece::None;) {
      out.push_back(p == LineFramer::Piece::TooLong ? "<too long>" : std::string(line));
    }
  };
  for (const std::string& c : chunks) {
    REQUIRE(::write(fds[1], c.data(), c.size()) == static_cast<ssize_t>(c.size()));
    REQUIRE(in.read_from(fds[0]) == static_cast<ssize_t>(c.size()));
    drain();
  }
  ::close(fds[1]);
  CHECK(in.read_from(fds[0]) == 0);
  CHECK(in.eof());
  drain();
  CHECK(!in.ready());
  ::close(fds[0]);
  return out;
}

TEST_SUITE("framer") {
  TEST_CASE("lines come whole whatever pieces they arrive in; blank lines are skipped, \\r dropped") {
    std::vector<std::string> want{"one", "two", "three"};
    CHECK(frame({"one\ntwo\nthree\n"}, 100) == want);
    CHECK(frame({"o", "ne\ntw", "o\r\n", "\n  \t\r\n", "three\n"}, 100) == want);
    CHECK(frame({"one\n", "two\n", "three"}, 100) == want);  // the last line needs no newline
  }

  TEST_CASE("a line over the limit is answered once and skipped to its newline, whole or in pieces") {
    std::string big(40, 'x');
    CHECK(frame({"a\n" + big + "\nb\n"}, 32) == std::vector<std::string>{"a", "<too long>", "b"});
    // Arriving in pieces: refused as soon as it is past the limit, its
    // later pieces dropped without growing the buffer.
    CHECK(frame({"a\n" + big, big, big + "\nb\n"}, 32) == std::vector<std::string>{"a", "<too long>", "b"});
    // At the limit it is a line.
    std::string at(32, 'y');
    CHECK(frame({at + "\n"}, 32) == std::vector<std::string>{at});
    // Unfinished at the end of input: refused, not taken as a last line.
    CHECK(frame({"a\n" + big}, 32) == std::vector<std::string>{"a", "<too long>"});
  }

  TEST_CASE("a line over the limit comes as the framer's own answer, in its place") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    Framer in(Protocol::Lines, 8, std::chrono::seconds(10));
    Outbox out(false);
    std::string bytes = "{\"a\":1}\n0123456789\n{}\n";
    REQUIRE(::write(fds[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    REQUIRE(in.read_from(fds[0], out) == static_cast<ssize_t>(bytes.size()));
    RequestText text;
    Answer refusal;
    REQUIRE(in.next(text, refusal) == Framer::Piece::Request);
    CHECK(text.line == "{\"a\":1}");
    REQUIRE(in.next(text, refusal) == Framer::Piece::Answer);
    CHECK(refusal.code == Code::BadRequest);
    CHECK(refusal.text == "line longer than 8 bytes");
    REQUIRE(in.next(text, refusal) == Framer::Piece::Request);
    CHECK(text.line == "{}");
    CHECK(in.next(text, refusal) == Framer::Piece::None);
    in.deliver(refusal, out);
    CHECK(out.waiting() == std::string_view(R"({"ok":false,"error":{"code":"bad_request","message":"line longer than 8 bytes"}})").size() + 1);
    ::close(fds[0]);
    ::close(fds[1]);
  }
}

}  // namespace
}  // namespace aup::runtime

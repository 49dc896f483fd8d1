// Tests of bench/tpcc/aup_pipeline.cpp: answer ids, first-in-first-out
// matching, and a SharedConnection against a fake server on a Unix socket
// that answers in order, answers out of order, or hangs up.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/server/client.h"
#include "bench/server/temp_dir.h"
#include "bench/tpcc/aup_pipeline.h"

namespace aup::tpcc {
namespace {

using bench::server::TempDir;

// ---- a fake server -------------------------------------------------------------

// Reads request lines from an accepted connection.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  // The next line without its newline; false at end of input.
  bool next(std::string& line) {
    for (;;) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return true;
      }
      char chunk[4096];
      ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n <= 0) return false;
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buf_;
};

// On the server's thread, where a failed assertion could not stop the
// case: a write that fails leaves the rest unwritten, and the client sees
// the connection close.
void write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// The answer the fake server gives a request line (with newline): its id
// echoed, or id 0 (no request's) when it has none.
std::string answer_to(const std::string& request) {
  size_t at = request.find("\"id\":");
  uint64_t id = at == std::string::npos ? 0 : std::strtoull(request.c_str() + at + 5, nullptr, 10);
  return fmt::format("{{\"id\":{0},\"ok\":true,\"result\":{{\"n\":{0}}}}}\n", id);
}

// Listens on a socket in a temporary directory; `serve` gets the one
// connection accepted, on a thread of its own, and the connection is
// closed when it returns.
class FakeServer {
 public:
  explicit FakeServer(std::function<void(int)> serve) : serve_(std::move(serve)) {
    path_ = dir_.path() + "/fake.sock";
    listen_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(listen_ >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    REQUIRE(::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listen_, 4) == 0);
    thread_ = std::thread([this] {
      int fd = ::accept(listen_, nullptr, nullptr);
      if (fd < 0) return;
      serve_(fd);
      ::close(fd);
    });
  }
  ~FakeServer() {
    join();
    ::close(listen_);
  }
  // Waits for `serve` to return (the client has to have hung up, or it
  // has to stop of itself).
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;
  const std::string& path() const { return path_; }

 private:
  TempDir dir_{"/tmp", "aup-pipeline-test"};
  std::string path_;
  int listen_ = -1;
  std::function<void(int)> serve_;
  std::thread thread_;
};

std::string request_line(uint64_t id) { return fmt::format("{{\"query\":\"q\",\"id\":{}}}\n", id); }

// Asks once from each of `threads` threads at the same time; returns what
// each one's ask threw ("" when it got its answer).
std::vector<std::string> ask_from_threads(SharedConnection& c, uint32_t threads) {
  std::vector<std::string> errors(threads);
  std::vector<std::thread> ts;
  for (uint32_t t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      Waiter w;
      uint64_t id = c.next_id();
      try {
        c.ask(w, id, request_line(id), "q");
      } catch (const std::runtime_error& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& th : ts) th.join();
  return errors;
}

// ---- cases ---------------------------------------------------------------------

TEST_SUITE("aup pipeline") {
  TEST_CASE("answer_id reads the id the server writes first, and nothing else") {
    CHECK(answer_id(R"({"id":7,"ok":true,"result":{}})") == 7);
    CHECK(answer_id(R"({"id":18446744073709551615,"ok":true})") == UINT64_MAX);
    CHECK_FALSE(answer_id(R"({"id":18446744073709551616,"ok":true})"));  // past uint64
    CHECK_FALSE(answer_id(R"({"ok":true})"));                            // a request without an id
    CHECK_FALSE(answer_id(R"({"id":"7","ok":true})"));                   // not the backend's whole-number id
    CHECK_FALSE(answer_id(R"({"id":7})"));                               // cut short
    CHECK_FALSE(answer_id(R"({"id":,"ok":true})"));
    CHECK_FALSE(answer_id(""));
  }

  TEST_CASE("InFlight gives answers to requests in the order they were sent, and refuses any other") {
    InFlight f;
    Waiter a, b;
    a.id = 3;
    b.id = 9;
    f.push(&a);
    f.push(&b);
    CHECK(f.oldest() == &a);
    CHECK(f.oldest_other_than(nullptr) == &a);
    CHECK(f.oldest_other_than(&a) == &b);  // a is sending: b reads
    CHECK(f.oldest_other_than(&b) == &a);
    CHECK(f.match(R"({"id":3,"ok":true})") == &a);
    // 9 is next: an answer to 3 again, or to 4, is not its answer.
    CHECK_THROWS_WITH_AS(f.match(R"({"id":4,"ok":true})"),
                         doctest::Contains("expected the answer to request 9 (answers come in request order)"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(f.match(R"({"ok":false,"error":{}})"), doctest::Contains("request 9"), std::runtime_error);
    CHECK(f.match(R"({"id":9,"ok":true})") == &b);
    CHECK(f.empty());
    CHECK(f.oldest_other_than(&a) == nullptr);
    CHECK_THROWS_WITH_AS(f.match(R"({"id":10,"ok":true})"), doctest::Contains("an answer to no request"),
                         std::runtime_error);
    f.push(&a);
    CHECK(f.oldest_other_than(&a) == nullptr);  // the sender's own request alone: it reads after sending
    f.push(&b);
    CHECK(f.take_all().size() == 2);
    CHECK(f.empty());
  }

  TEST_CASE("eight threads on one connection each get their own answer") {
    uint64_t served = 0;
    FakeServer server([&](int fd) {
      LineReader r(fd);
      for (std::string line; r.next(line); ++served) write_all(fd, answer_to(line));
    });
    constexpr uint32_t kThreads = 8;
    constexpr uint64_t kAsks = 300;
    std::vector<uint64_t> wrong(kThreads);
    {
      SharedConnection c(bench::server::Connection(server.path()), kThreads);
      std::vector<std::thread> ts;
      for (uint32_t t = 0; t < kThreads; ++t) {
        ts.emplace_back([&, t] {
          Waiter w;
          for (uint64_t i = 0; i < kAsks; ++i) {
            uint64_t id = c.next_id();
            c.ask(w, id, request_line(id), "q");
            std::string expected = answer_to(request_line(id));
            expected.pop_back();  // the newline
            if (w.answer != expected) ++wrong[t];
          }
        });
      }
      for (std::thread& th : ts) th.join();
    }  // closes the connection: the server's loop ends
    server.join();  // and `served` is its last count
    for (uint32_t t = 0; t < kThreads; ++t) CHECK(wrong[t] == 0);
    CHECK(served == kThreads * kAsks);
  }

  TEST_CASE("answers out of order break the connection for every waiter, naming aup") {
    FakeServer server([](int fd) {
      LineReader r(fd);
      std::string first, second;
      if (!r.next(first) || !r.next(second)) return;
      write_all(fd, answer_to(second) + answer_to(first));  // swapped
      while (r.next(first)) {
      }
    });
    SharedConnection c(bench::server::Connection(server.path()), 2);
    for (const std::string& e : ask_from_threads(c, 2)) {
      CHECK(e.find("aup: q: on a connection shared by 2 terminals, expected the answer to request") == 0);
    }
    // Broken for good: the next request fails at once, for the same reason.
    Waiter w;
    CHECK_THROWS_WITH_AS(c.ask(w, c.next_id(), request_line(99), "q"),
                         doctest::Contains("answers come in request order"), std::runtime_error);
  }

  TEST_CASE("a server that hangs up wakes every waiter with the reason") {
    constexpr uint32_t kThreads = 3;
    FakeServer server([](int fd) {
      LineReader r(fd);
      std::string line;
      for (uint32_t i = 0; i < kThreads && r.next(line); ++i) {
      }
    });  // closes with all three unanswered
    SharedConnection c(bench::server::Connection(server.path()), kThreads);
    for (const std::string& e : ask_from_threads(c, kThreads)) {
      CHECK(e == "aup: q: the server closed the connection with requests unanswered");
    }
    Waiter w;
    CHECK_THROWS_WITH_AS(c.ask(w, c.next_id(), request_line(99), "q"), doctest::Contains("closed the connection"),
                         std::runtime_error);
  }
}

}  // namespace
}  // namespace aup::tpcc

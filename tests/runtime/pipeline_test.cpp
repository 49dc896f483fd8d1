// The request pipeline's pieces (runtime/pipeline.h), each on its own: the
// line framer over what a connection sends in arbitrary pieces, the
// committer settling a batch's answers by its fate, and the outbox over a
// socket that takes only part of what waits.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/runtime/harness.h"
#include "runtime/pipeline.h"

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

TEST_SUITE("pipeline") {
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

  const char* kBank = R"(
record Account { id: num, balance: num }
table accounts: Account key id
event open { id: num }
on open { accounts.add(Account { id: open.id, balance: 0 }) }
event touch { id: num }
on touch { return { balance: accounts[touch.id].balance } }
query balance(id: num) { return accounts[id].balance }
)";

  // A Durability whose next commit fails (or not), counting commits.
  class FakeDurability : public Durability {
   public:
    explicit FakeDurability(vm::State& s) : state_(s) {}
    bool commit_batch(std::string& error) override {
      ++commits;
      if (fail_next) {
        fail_next = false;
        state_.rollback(0);
        error = "not written: the disk said no";
        return false;
      }
      state_.commit();
      return true;
    }
    const std::string* refusing() const override { return nullptr; }
    int commits = 0;
    bool fail_next = false;

   private:
    vm::State& state_;
  };

  struct Answers {
    std::vector<std::pair<uint64_t, std::string>> got;
    void operator()(uint64_t to, std::string& answer) { got.emplace_back(to, answer); }
  };

  TEST_CASE("a batch's answers come in order, each event's formed once its commit succeeded") {
    testing::Running run(kBank);
    FakeDurability d(run.state());
    Service service(run.module(), run.state(), ServiceOptions{});
    Committer batch(service, d, 0);
    service.prepare(R"({"event":"open","args":{"id":1},"id":"a"})");
    batch.take(7, 0);
    batch.add(8, too_long_answer(10));
    service.prepare(R"({"event":"open","args":{"id":1},"id":"b"})");  // a duplicate: fails, answered now
    batch.take(7, 0);
    service.prepare(R"({"event":"touch","args":{"id":1},"id":"c"})");
    batch.take(9, 0);
    CHECK(batch.events() == 2);
    Answers a;
    CHECK(batch.commit(a));
    CHECK(d.commits == 1);
    REQUIRE(a.got.size() == 4);
    CHECK(a.got[0] == std::pair<uint64_t, std::string>{7, "{\"id\":\"a\",\"ok\":true}\n"});
    CHECK(a.got[1].first == 8);
    CHECK(a.got[1].second.find("line longer than 10 bytes") != std::string::npos);
    CHECK(a.got[2].first == 7);
    CHECK(a.got[2].second.find("{\"id\":\"b\",\"ok\":false,\"error\":{\"code\":\"duplicate\"") == 0);
    CHECK(a.got[3] == std::pair<uint64_t, std::string>{9, "{\"id\":\"c\",\"ok\":true,\"result\":{\"balance\":0}}\n"});
    CHECK(batch.empty());
    CHECK(batch.events() == 0);
  }

  TEST_CASE("a failed commit answers every event of its batch unavailable with the reason, and undoes them") {
    testing::Running run(kBank);
    FakeDurability d(run.state());
    Service service(run.module(), run.state(), ServiceOptions{});
    Committer batch(service, d, 0);
    service.prepare(R"({"event":"open","args":{"id":1},"id":1})");
    batch.take(1, 0);
    service.prepare(R"({"event":"open","args":{"id":2}})");
    batch.take(2, 0);
    d.fail_next = true;
    Answers a;
    CHECK(!batch.commit(a));
    REQUIRE(a.got.size() == 2);
    CHECK(a.got[0].second ==
          "{\"id\":1,\"ok\":false,\"error\":{\"code\":\"unavailable\",\"message\":\"not written: the disk said no\"}}\n");
    CHECK(a.got[1].second ==
          "{\"ok\":false,\"error\":{\"code\":\"unavailable\",\"message\":\"not written: the disk said no\"}}\n");
    // Undone: a query after it reads the state before the batch.
    service.prepare(R"({"query":"balance","args":{"id":1}})");
    batch.take(3, 0);
    Answers q;
    CHECK(!batch.commit(q));  // nothing to commit: the state did not change
    CHECK(d.commits == 1);
    REQUIRE(q.got.size() == 1);
    CHECK(q.got[0].second.find("\"code\":\"not_found\"") != std::string::npos);
  }

  // Takes one request line into the batch, as a transport does.
  void take(Service& service, Committer& batch, uint64_t to, const std::string& line) {
    service.prepare(line);
    batch.take(to, 0, line);
  }

  TEST_CASE("a query inside a batch reads the events before it, and its answer waits for their commit") {
    testing::Running run(kBank);
    FakeDurability d(run.state());
    Service service(run.module(), run.state(), ServiceOptions{});
    Committer batch(service, d, 0);
    take(service, batch, 1, R"({"query":"balance","args":{"id":1},"id":"before"})");
    take(service, batch, 1, R"({"event":"open","args":{"id":1}})");
    take(service, batch, 2, R"({"query":"balance","args":{"id":1},"id":"after"})");
    Answers a;
    CHECK(batch.commit(a));
    CHECK(d.commits == 1);
    REQUIRE(a.got.size() == 3);
    CHECK(a.got[0].second.find("\"id\":\"before\",\"ok\":false,\"error\":{\"code\":\"not_found\"") != std::string::npos);
    CHECK(a.got[1].second == "{\"ok\":true}\n");
    CHECK(a.got[2] == std::pair<uint64_t, std::string>{2, "{\"id\":\"after\",\"ok\":true,\"result\":0}\n"});
  }

  TEST_CASE("when the commit fails, a query that read the batch's events runs again on the state before them") {
    testing::Running run(kBank);
    FakeDurability d(run.state());
    Service service(run.module(), run.state(), ServiceOptions{});
    Committer batch(service, d, 0);
    take(service, batch, 1, R"({"event":"open","args":{"id":1}})");
    take(service, batch, 2, R"({"query":"balance","args":{"id":1},"id":"q1"})");
    take(service, batch, 1, R"({"event":"touch","args":{"id":1}})");
    take(service, batch, 3, R"({"query":"balance","args":{"id":1},"id":"q2"})");
    d.fail_next = true;
    Answers a;
    CHECK(!batch.commit(a));
    REQUIRE(a.got.size() == 4);
    CHECK(a.got[0].second.find("\"code\":\"unavailable\"") != std::string::npos);
    CHECK(a.got[2].second.find("\"code\":\"unavailable\"") != std::string::npos);
    // Both queries had found account 1; run again, neither does.
    for (size_t i : {size_t{1}, size_t{3}}) {
      INFO(a.got[i].second);
      CHECK(a.got[i].second.find("\"code\":\"not_found\"") != std::string::npos);
    }
    CHECK(a.got[1].first == 2);
    CHECK(a.got[3].first == 3);
    CHECK(a.got[3].second.find("\"id\":\"q2\"") == 1);
  }

  TEST_CASE("entries reused from a batch that held a query carry nothing of it into a failed batch") {
    // Entries keep their strings across batches; everything else of an
    // entry is reset when it is reused. A second batch that puts events
    // where the first had a query that read its events must answer each of
    // them with its own fate, not run the old query again in its place.
    testing::Running run(kBank);
    FakeDurability d(run.state());
    Service service(run.module(), run.state(), ServiceOptions{});
    Committer batch(service, d, 0);
    take(service, batch, 1, R"({"event":"open","args":{"id":1}})");
    take(service, batch, 2, R"({"query":"balance","args":{"id":1},"id":"q"})");  // reads the open: rerun mark
    Answers first;
    CHECK(batch.commit(first));
    REQUIRE(first.got.size() == 2);
    take(service, batch, 1, R"({"event":"open","args":{"id":2},"id":"e1"})");
    take(service, batch, 2, R"({"event":"open","args":{"id":3},"id":"e2"})");  // the query's entry
    d.fail_next = true;
    Answers a;
    CHECK(!batch.commit(a));
    REQUIRE(a.got.size() == 2);
    for (const auto& [to, answer] : a.got) {
      INFO(answer);
      CHECK(answer.find("\"code\":\"unavailable\",\"message\":\"not written: the disk said no\"") !=
            std::string::npos);
    }
    CHECK(a.got[1].second.find("\"id\":\"e2\"") == 1);
  }

  TEST_CASE("a batch is full at its event limit; failed events do not count") {
    testing::Running run(kBank);
    FakeDurability d(run.state());
    Service service(run.module(), run.state(), ServiceOptions{});
    Committer batch(service, d, 2);
    service.prepare(R"({"event":"open","args":{"id":1}})");
    batch.take(0, 0);
    service.prepare(R"({"event":"touch","args":{"id":5}})");  // not_found: rolled back
    batch.take(0, 0);
    CHECK(!batch.full());
    service.prepare(R"({"event":"open","args":{"id":2}})");
    batch.take(0, 0);
    CHECK(batch.full());
    Answers a;
    CHECK(batch.commit(a));
    CHECK(a.got.size() == 3);
    CHECK(!batch.full());
  }

  TEST_CASE("the outbox writes what the socket takes and keeps the rest; a gone peer is reported") {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
    Outbox out;
    CHECK(out.send_to(sv[0]) == Outbox::Sent::All);  // nothing waits
    out.append("hello\n");
    CHECK(out.send_to(sv[0]) == Outbox::Sent::All);
    CHECK(out.waiting() == 0);
    char buf[16];
    CHECK(::read(sv[1], buf, sizeof buf) == 6);
    // More than the socket holds: part goes, the rest waits in order.
    std::string big(8 << 20, 'z');
    big.back() = '\n';
    out.append(big);
    CHECK(out.send_to(sv[0]) == Outbox::Sent::Some);
    size_t left = out.waiting();
    CHECK(left > 0);
    CHECK(left < big.size());
    ::close(sv[1]);
    CHECK(out.send_to(sv[0]) == Outbox::Sent::Gone);
    ::close(sv[0]);
  }
}

}  // namespace
}  // namespace aup::runtime

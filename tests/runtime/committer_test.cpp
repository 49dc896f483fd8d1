// The Committer (runtime/committer.h): a batch's answers in request order,
// each event's settled by the batch's one commit, queries that read the
// batch run again when it fails.
#include "runtime/committer.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runtime/durability.h"
#include "runtime/framer.h"
#include "tests/runtime/harness.h"

namespace aup::runtime {
namespace {

TEST_SUITE("committer") {
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
    bool commit_batch(storage::Fate& fate, std::string& why) override {
      ++commits;
      if (fail_next) {
        fail_next = false;
        state_.rollback(0);
        fate = storage::Fate::NotWritten;
        why = "the disk said no";
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

  // What each destination was given, as the line protocol writes it.
  struct Answers {
    std::vector<std::pair<uint64_t, std::string>> got;
    void operator()(uint64_t to, Answer& answer) {
      std::string line;
      append_answer_line(line, answer);
      got.emplace_back(to, line);
    }
  };

  // Takes one request line into the batch, as a transport does.
  void take(Service& service, Committer& batch, uint64_t to, std::string_view line) {
    RequestText text = RequestText::of_line(line);
    JsonDoc doc;
    batch.take(to, service.prepare(text, doc), text, 0);
  }

  TEST_CASE("a batch's answers come in order, each event's formed once its commit succeeded") {
    testing::Running run(kBank);
    FakeDurability d(run.state());
    Service service(run.module(), run.state(), ServiceOptions{});
    Committer batch(service, d, 0);
    take(service, batch, 7, R"({"event":"open","args":{"id":1},"id":"a"})");
    too_long(10, batch.add(8));
    take(service, batch, 7, R"({"event":"open","args":{"id":1},"id":"b"})");  // a duplicate: fails, answered now
    take(service, batch, 9, R"({"event":"touch","args":{"id":1},"id":"c"})");
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

  TEST_CASE("a read-only store's durability refuses every event not_primary, naming no primary; queries run") {
    testing::Running run(kBank);
    run.call(R"({"event":"open","args":{"id":1}})");
    ReadOnlyDurability d(run.state(), "DIR", 4);
    Service service(run.module(), run.state(), ServiceOptions{});
    Committer batch(service, d, 0);
    take(service, batch, 1, R"({"event":"open","args":{"id":2},"id":"e"})");
    take(service, batch, 1, R"({"query":"balance","args":{"id":1},"id":"q"})");
    CHECK(batch.events() == 0);  // refused before it ran: nothing to commit
    Answers a;
    batch.commit(a);
    REQUIRE(a.got.size() == 2);
    CHECK(a.got[0].second ==
          "{\"id\":\"e\",\"ok\":false,\"error\":{\"code\":\"not_primary\",\"message\":\"the store DIR is served "
          "read-only (aup run --read-only): it takes no events, only queries; send events to a server that writes "
          "it\"}}\n");
    CHECK(a.got[1].second == "{\"id\":\"q\",\"ok\":true,\"result\":0}\n");
    CHECK(d.applied_save() == 4);
    CHECK(run.state().table(0).size() == 1);  // account 2 was never opened
  }

  TEST_CASE("the answer of the request taken last tells a failure at once (what --bail stops at)") {
    testing::Running run(kBank);
    FakeDurability d(run.state());
    Service service(run.module(), run.state(), ServiceOptions{});
    Committer batch(service, d, 0);
    CHECK(batch.last_answer() == nullptr);
    take(service, batch, 1, R"({"event":"open","args":{"id":1}})");
    REQUIRE(batch.last_answer() != nullptr);
    CHECK(batch.last_answer()->ok());
    take(service, batch, 1, R"({"event":"open","args":{"id":1}})");  // a duplicate
    REQUIRE(batch.last_answer() != nullptr);
    CHECK(batch.last_answer()->code == Code::Duplicate);
    take(service, batch, 1, R"({"query":"balance","args":{"id":1}})");
    REQUIRE(batch.last_answer() != nullptr);
    CHECK(batch.last_answer()->ok());
    Answers a;
    CHECK(batch.commit(a));
    CHECK(a.got.size() == 3);
  }

  TEST_CASE("a failed commit answers every event of its batch unavailable with the reason, and undoes them") {
    testing::Running run(kBank);
    FakeDurability d(run.state());
    Service service(run.module(), run.state(), ServiceOptions{});
    Committer batch(service, d, 0);
    take(service, batch, 1, R"({"event":"open","args":{"id":1},"id":1})");
    take(service, batch, 2, R"({"event":"open","args":{"id":2}})");
    d.fail_next = true;
    Answers a;
    CHECK(!batch.commit(a));
    REQUIRE(a.got.size() == 2);
    CHECK(a.got[0].second ==
          "{\"id\":1,\"ok\":false,\"error\":{\"code\":\"unavailable\",\"message\":\"not written: the disk said no\"}}\n");
    CHECK(a.got[1].second ==
          "{\"ok\":false,\"error\":{\"code\":\"unavailable\",\"message\":\"not written: the disk said no\"}}\n");
    // Undone: a query after it reads the state before the batch.
    take(service, batch, 3, R"({"query":"balance","args":{"id":1}})");
    Answers q;
    CHECK(!batch.commit(q));  // nothing to commit: the state did not change
    CHECK(d.commits == 1);
    REQUIRE(q.got.size() == 1);
    CHECK(q.got[0].second.find("\"code\":\"not_found\"") != std::string::npos);
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
    take(service, batch, 0, R"({"event":"open","args":{"id":1}})");
    take(service, batch, 0, R"({"event":"touch","args":{"id":5}})");  // not_found: rolled back
    CHECK(!batch.full());
    take(service, batch, 0, R"({"event":"open","args":{"id":2}})");
    CHECK(batch.full());
    Answers a;
    CHECK(batch.commit(a));
    CHECK(a.got.size() == 3);
    CHECK(!batch.full());
  }
}

}  // namespace
}  // namespace aup::runtime

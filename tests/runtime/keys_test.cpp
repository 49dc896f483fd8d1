// Idempotency keys (runtime/keys.h): a keyed event applies at most once, a
// retry is answered the first answer, anything else under the key is
// refused, the window bounds what is kept, and the key rows go and come
// with their event's transaction.
#include "runtime/keys.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <memory>
#include <string>

#include "compiler/codegen.h"
#include "compiler/compiler.h"
#include "runtime/service.h"
#include "storage/key_tables.h"
#include "storage/key_values.h"
#include "tests/runtime/harness.h"
#include "vm/state.h"

namespace aup::runtime {
namespace {

const char* kKeysModule = R"(
record Account { id: num, balance: num }
table accounts: Account key id
var deposits: num = 0
event open { id: num }
on open { accounts.add(Account { id: open.id, balance: 0 }) }
event deposit { id: num, amount: num }
on deposit {
  if deposit.amount <= 0 { fail "amount must be positive" }
  let a = accounts[deposit.id]
  a.balance = a.balance + deposit.amount
  deposits = deposits + 1
  return { balance: a.balance }
}
event touch { id: num }
on touch { deposits = deposits + 0 }
query balance(id: num) { return accounts[id].balance }
event long { bytes: num }
on long {
  deposits = deposits + 1
  let piece = "a"
  let out = ""
  let left = long.bytes
  while left > 0 {
    if left % 2 == 1 { out = out + piece }
    piece = piece + piece
    left = (left - left % 2) / 2
  }
  return out
}
)";

// The module, its state (which has the key tables after the module's),
// and the owner's Service.
class Keyed {
 public:
  explicit Keyed(KeyWindow w, bool keys = true) {
    auto checked = check_source("keys.aup", kKeysModule);
    REQUIRE(checked->ok());
    Diagnostics d;
    module_ = generate(*checked, d);
    REQUIRE(module_);
    module_->prepare();
    state_ = std::make_unique<vm::State>(*module_);
    service_ = std::make_unique<Service>(*module_, *state_, ServiceOptions{});
    if (keys) {
      keys_ = std::make_unique<KeyTable>(*state_, w);
      service_->set_keys(keys_.get());
    }
    call(R"({"event":"open","args":{"id":1}})");
  }
  // One request, committed at once (as --memory does); the answer line.
  std::string call(const std::string& line, double now = 1.7e12) {
    std::string out = apply(line, now);
    state_->commit();
    return out;
  }
  // Applied but not committed: a batch whose commit is still to come.
  std::string apply(const std::string& line, double now = 1.7e12) {
    std::string out;
    testing::apply_line(*service_, line, now, &out);
    REQUIRE(!out.empty());
    out.pop_back();
    return out;
  }
  double deposits() const { return std::bit_cast<double>(state_->var(0)); }
  size_t kept() const { return keys_->size(); }
  vm::State& state() { return *state_; }
  Service& service() { return *service_; }
  const vm::Module& module() const { return *module_; }

 private:
  std::unique_ptr<vm::Module> module_;
  std::unique_ptr<vm::State> state_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<KeyTable> keys_;
};

std::string deposit(const std::string& key, int amount, const char* id = "") {
  return fmt::format(R"({{"event":"deposit","args":{{"id":1,"amount":{}}},"key":"{}"{}}})", amount, key, id);
}

}  // namespace

TEST_SUITE("keys") {
  TEST_CASE("a retry with its key is answered the first answer and applies nothing") {
    Keyed k(KeyWindow{100, 0});
    CHECK(k.call(deposit("a", 5)) == R"({"ok":true,"result":{"balance":5}})");
    CHECK(k.call(deposit("a", 5, R"(,"id":7)")) == R"({"id":7,"ok":true,"result":{"balance":5}})");
    CHECK(k.deposits() == 1);
    CHECK(k.service().counters().events_replayed.get() == 1);
    // Another key is another event.
    CHECK(k.call(deposit("b", 5)) == R"({"ok":true,"result":{"balance":10}})");
    CHECK(k.deposits() == 2);
    // An event that returns nothing is answered again without a result.
    CHECK(k.call(R"({"event":"touch","args":{"id":1},"key":"t"})") == R"({"ok":true})");
    CHECK(k.call(R"({"event":"touch","args":{"id":1},"key":"t"})") == R"({"ok":true})");
  }

  TEST_CASE("the same key with other args or another event is refused duplicate") {
    Keyed k(KeyWindow{100, 0});
    k.call(deposit("a", 5));
    std::string other = k.call(deposit("a", 6));
    CHECK(other.find(R"("code":"duplicate")") != std::string::npos);
    CHECK(other.find("key \\\"a\\\" was used by another request") != std::string::npos);
    CHECK(k.call(R"({"event":"touch","args":{"id":1},"key":"a"})").find("duplicate") != std::string::npos);
    CHECK(k.deposits() == 1);
    // Spacing, escapes and the way a number is written are not the args.
    CHECK(k.call(R"({ "key" : "a", "event" : "deposit", "args" : { "id" : 1.0, "amount" : 5e0 } })") ==
          R"({"ok":true,"result":{"balance":5}})");
    CHECK(k.call(R"({"event":"deposit","args":{"id":1,"amount":5},"key":"\u0061"})") ==
          R"({"ok":true,"result":{"balance":5}})");
    CHECK(k.deposits() == 1);
  }

  TEST_CASE("a failed event keeps no key: sent again it runs again") {
    Keyed k(KeyWindow{100, 0});
    CHECK(k.call(deposit("a", 0)).find("amount must be positive") != std::string::npos);
    CHECK(k.kept() == 0);
    CHECK(k.call(R"({"event":"deposit","args":{"id":2,"amount":1},"key":"b"})").find("not_found") !=
          std::string::npos);
    CHECK(k.kept() == 0);
  }

  TEST_CASE("a batch rolled back takes its keys with it") {
    Keyed k(KeyWindow{100, 0});
    k.apply(deposit("a", 5));
    CHECK(k.kept() == 1);
    // A retry inside the same batch is answered from the key (its answer
    // too waits for the batch's fate).
    CHECK(k.apply(deposit("a", 5)) == R"({"ok":true,"result":{"balance":5}})");
    k.state().rollback(0);  // the commit failed
    CHECK(k.kept() == 0);
    CHECK(k.deposits() == 0);
    CHECK(k.call(deposit("a", 5)) == R"({"ok":true,"result":{"balance":5}})");
    CHECK(k.deposits() == 1);
  }

  TEST_CASE("the window: at most its count kept, the oldest first to go") {
    Keyed k(KeyWindow{3, 0});
    for (int i = 0; i < 5; ++i) k.call(deposit(fmt::format("k{}", i), 1));
    CHECK(k.kept() == 3);
    CHECK(k.deposits() == 5);
    // k0 and k1 have gone: sent again they apply again; k4 is kept.
    k.call(deposit("k0", 1));
    CHECK(k.deposits() == 6);
    k.call(deposit("k4", 1));
    CHECK(k.deposits() == 6);
  }

  TEST_CASE("the window's age: a key older than it goes at the next keyed event") {
    Keyed k(KeyWindow{100, 60});
    k.call(deposit("old", 1), 1.7e12);
    k.call(deposit("new", 1), 1.7e12 + 30'000);
    CHECK(k.kept() == 2);
    k.call(deposit("later", 1), 1.7e12 + 61'000);  // `old` is 61 s old now
    CHECK(k.kept() == 2);
    k.call(deposit("old", 1), 1.7e12 + 61'000);
    CHECK(k.deposits() == 4);  // applied again: it was forgotten
  }

  TEST_CASE("a smaller window shrinks by at most kMaxKeysDroppedPerEvent a keyed event") {
    std::unique_ptr<Keyed> k = std::make_unique<Keyed>(KeyWindow{100, 0});
    for (int i = 0; i < 20; ++i) k->call(deposit(fmt::format("k{}", i), 1));
    // The same state under a window of 5 (as after a restart with --keys 5).
    KeyTable small(k->state(), KeyWindow{5, 0});
    k->service().set_keys(&small);
    k->call(deposit("x", 1));
    CHECK(small.size() == 20 - kMaxKeysDroppedPerEvent + 1);
    k->call(deposit("y", 1));
    CHECK(small.size() == 20 - 2 * kMaxKeysDroppedPerEvent + 2);
    k->call(deposit("z", 1));
    CHECK(small.size() == 5);
  }

  TEST_CASE("a key: a text of 1 to kMaxIdempotencyKeyBytes bytes, on an event, where keys are kept") {
    Keyed k(KeyWindow{100, 0});
    std::string at_limit(kMaxIdempotencyKeyBytes, 'k');
    CHECK(k.call(deposit(at_limit, 1)).find(R"("ok":true)") != std::string::npos);
    std::string past = k.call(deposit(at_limit + "k", 1));
    CHECK(past.find(R"("code":"bad_request")") != std::string::npos);
    CHECK(past.find(fmt::format("`key` is {} bytes; at most {}", kMaxIdempotencyKeyBytes + 1,
                                kMaxIdempotencyKeyBytes)) != std::string::npos);
    CHECK(k.call(deposit("", 1)).find("`key` must not be empty") != std::string::npos);
    CHECK(k.call(R"({"event":"touch","args":{"id":1},"key":7})").find("`key` must be a string") !=
          std::string::npos);
    CHECK(k.call(R"({"query":"balance","args":{"id":1},"key":"q"})").find("`key` is for events") !=
          std::string::npos);
    CHECK(k.call(R"({"schema":{},"key":"q"})").find("bad_request") != std::string::npos);
    CHECK(k.deposits() == 1);
    Keyed none(KeyWindow{}, false);
    CHECK(none.call(deposit("a", 1)).find("this store keeps no idempotency keys") != std::string::npos);
    CHECK(none.deposits() == 0);
  }

  TEST_CASE("a keyed event's answer: at most kMaxKeptAnswerBytes, a longer one fails budget and is undone") {
    Keyed k(KeyWindow{100, 0});
    // A text's answer is its bytes in quotes.
    auto long_text = [](size_t answer_bytes, const char* key) {
      return fmt::format(R"({{"event":"long","args":{{"bytes":{}}},"key":"{}"}})", answer_bytes - 2, key);
    };
    std::string at = k.call(long_text(kMaxKeptAnswerBytes, "at"));
    CHECK(at.size() == kMaxKeptAnswerBytes + std::string_view(R"({"ok":true,"result":})").size());
    CHECK(k.deposits() == 1);
    CHECK(k.kept() == 1);
    std::string past = k.call(long_text(kMaxKeptAnswerBytes + 1, "past"));
    CHECK(past.find(R"("code":"budget")") != std::string::npos);
    CHECK(past.find(fmt::format("the answer is {} bytes of JSON, and a keyed event's answer, kept with its key, "
                                "is at most {} (keys.aup:",
                                kMaxKeptAnswerBytes + 1, kMaxKeptAnswerBytes)) != std::string::npos);
    CHECK(k.deposits() == 1);  // undone
    CHECK(k.kept() == 1);
    // Without a key the same event answers in full.
    std::string unkeyed = k.call(R"({"event":"long","args":{"bytes":16777215}})");
    CHECK(unkeyed.find(R"({"ok":true,"result":"aaa)") == 0);
    CHECK(unkeyed.size() == kMaxKeptAnswerBytes + 1 + std::string_view(R"({"ok":true,"result":})").size());
    CHECK(k.deposits() == 2);
  }

  TEST_CASE("the key tables are the state's own, after the module's tables: the module has none") {
    Keyed k(KeyWindow{100, 0});
    CHECK(k.module().tables.size() == 1);
    CHECK(k.state().table_count() == 3);
    uint32_t keys = k.state().system_table(storage::kKeysTable);
    uint32_t order = k.state().system_table(storage::kKeyOrderTable);
    CHECK(keys == 1);
    CHECK(order == 2);
    k.call(deposit("a", 5));
    CHECK(k.state().table(keys).size() == 1);
    CHECK(k.state().table(order).size() == 1);
    std::string schema = k.call(R"({"schema":{}})");
    CHECK(schema.find("accounts") != std::string::npos);
    CHECK(schema.find("$") == std::string::npos);  // neither the tables nor their records
  }

  TEST_CASE("the state's key tables have the rows storage defines for them (storage/key_tables.h)") {
    Keyed k(KeyWindow{100, 0});
    for (uint32_t t = 0; t < storage::kKeyTableCount; ++t) {
      CAPTURE(t);
      vm::RowLayout want = storage::row_layout(storage::key_table_schema(static_cast<storage::KeyTableNumber>(t)));
      const vm::RowLayout& got = k.state().table(k.state().system_table(t)).layout();
      CHECK(got.slots == want.slots);
      CHECK(got.text_slots == want.text_slots);
      CHECK(got.key.fields == want.key.fields);
      CHECK(got.key.text_mask == want.key.text_mask);
      CHECK(got.encoded_key == want.encoded_key);
    }
  }
}

}  // namespace aup::runtime

// The read request (runtime/read.h): rows by key and by range, in key or
// index order, paged by `limit`, `next` and the byte limit; each refusal.
#include <doctest/doctest.h>

#include <string>

#include "runtime/metrics.h"
#include "runtime/read.h"
#include "runtime/snapshots.h"
#include "tests/runtime/harness.h"

namespace aup::runtime {
namespace {

const char* kReadModule = R"(
record Account { id: num, owner: text, balance: num = 0 }
record Line { w: num, o: text, qty: num }
record Note { k: text, body: text }
table accounts: Account key id
table lines: Line key (w, o)
table notes: Note key k
index by_owner on accounts (owner)
event open { id: num, owner: text }
on open { accounts.add(Account { id: open.id, owner: open.owner, balance: 0 }) }
event line { w: num, o: text, qty: num }
on line { lines.add(Line { w: line.w, o: line.o, qty: line.qty }) }
event note { k: text, body: text }
on note { notes.add(Note { k: note.k, body: note.body }) }
)";

// A module's state with accounts 1..5 (owners ann, bo, ann, cy, bo) and
// lines (1,"a") (1,"b") (2,"a") (3,"c").
struct Filled {
  testing::Running r;
  explicit Filled(Metrics* metrics = nullptr) : r(kReadModule, vm::kDefaultStepBudget, metrics) {
    const char* owners[] = {"ann", "bo", "ann", "cy", "bo"};
    for (int i = 1; i <= 5; ++i) {
      r.call(R"({"event":"open","args":{"id":)" + std::to_string(i) + R"(,"owner":")" + owners[i - 1] + "\"}}");
    }
    for (const char* l : {R"("w":1,"o":"a","qty":5)", R"("w":1,"o":"b","qty":6)", R"("w":2,"o":"a","qty":7)",
                          R"("w":3,"o":"c","qty":8)"}) {
      r.call(std::string(R"({"event":"line","args":{)") + l + "}}");
    }
  }
  std::string read(const std::string& body) { return r.call(R"({"read":)" + body + R"(,"id":1})"); }
};

std::string row(int id, const char* owner) {
  return R"({"id":)" + std::to_string(id) + R"(,"owner":")" + owner + R"(","balance":0})";
}

std::string refusal(const char* code, const std::string& message) {
  return std::string(R"({"id":1,"ok":false,"error":{"code":")") + code + R"(","message":")" + message + "\"}}";
}

TEST_SUITE("read") {
  TEST_CASE("a get answers the row with the whole key, or no row") {
    Filled f;
    CHECK(f.read(R"({"table":"accounts","key":[3]})") == R"({"id":1,"ok":true,"result":{"rows":[)" + row(3, "ann") +
                                                             "]}}");
    CHECK(f.read(R"({"table":"accounts","key":[9]})") == R"({"id":1,"ok":true,"result":{"rows":[]}})");
    CHECK(f.read(R"({"table":"lines","key":[1,"b"]})") ==
          R"({"id":1,"ok":true,"result":{"rows":[{"w":1,"o":"b","qty":6}]}})");
    CHECK(f.read(R"({"table":"lines","key":[1,"c"]})") == R"({"id":1,"ok":true,"result":{"rows":[]}})");
    // -0 is the key 0, as for the tables themselves.
    CHECK(f.read(R"({"table":"accounts","key":[-0]})") == R"({"id":1,"ok":true,"result":{"rows":[]}})");
  }

  TEST_CASE("a scan: from and to are inclusive; a prefix of a composite key bounds its first fields") {
    Filled f;
    CHECK(f.read(R"({"table":"accounts","from":[2],"to":[4]})") ==
          R"({"id":1,"ok":true,"result":{"rows":[)" + row(2, "bo") + "," + row(3, "ann") + "," + row(4, "cy") + "]}}");
    CHECK(f.read(R"({"table":"accounts","from":[4]})") ==
          R"({"id":1,"ok":true,"result":{"rows":[)" + row(4, "cy") + "," + row(5, "bo") + "]}}");
    CHECK(f.read(R"({"table":"accounts","to":[1]})") == R"({"id":1,"ok":true,"result":{"rows":[)" + row(1, "ann") +
                                                            "]}}");
    CHECK(f.read(R"({"table":"accounts","from":[4],"to":[2]})") == R"({"id":1,"ok":true,"result":{"rows":[]}})");
    CHECK(f.read(R"({"table":"lines","from":[1],"to":[1]})") ==
          R"({"id":1,"ok":true,"result":{"rows":[{"w":1,"o":"a","qty":5},{"w":1,"o":"b","qty":6}]}})");
    CHECK(f.read(R"({"table":"lines","from":[1,"b"],"to":[2]})") ==
          R"({"id":1,"ok":true,"result":{"rows":[{"w":1,"o":"b","qty":6},{"w":2,"o":"a","qty":7}]}})");
    CHECK(f.read(R"({"table":"lines","from":[],"to":[]})").find(R"("qty":8}]}})") != std::string::npos);
  }

  TEST_CASE("limit and next: the next page starts where the last stopped") {
    Filled f;
    CHECK(f.read(R"({"table":"accounts","limit":2})") ==
          R"({"id":1,"ok":true,"result":{"rows":[)" + row(1, "ann") + "," + row(2, "bo") + R"(],"next":[3]}})");
    CHECK(f.read(R"({"table":"accounts","from":[3],"limit":2})") ==
          R"({"id":1,"ok":true,"result":{"rows":[)" + row(3, "ann") + "," + row(4, "cy") + R"(],"next":[5]}})");
    // Exactly the rows left: no next.
    CHECK(f.read(R"({"table":"accounts","from":[5],"limit":1})") ==
          R"({"id":1,"ok":true,"result":{"rows":[)" + row(5, "bo") + "]}}");
    CHECK(f.read(R"({"table":"lines","limit":1})") ==
          R"({"id":1,"ok":true,"result":{"rows":[{"w":1,"o":"a","qty":5}],"next":[1,"b"]}})");
  }

  TEST_CASE("an index is read in its order, equal values by the key; its next holds the key too") {
    Filled f;
    CHECK(f.read(R"({"table":"accounts","index":"by_owner","limit":3})") ==
          R"({"id":1,"ok":true,"result":{"rows":[)" + row(1, "ann") + "," + row(3, "ann") + "," + row(2, "bo") +
              R"(],"next":["bo",5]}})");
    CHECK(f.read(R"({"table":"accounts","index":"by_owner","from":["bo",5]})") ==
          R"({"id":1,"ok":true,"result":{"rows":[)" + row(5, "bo") + "," + row(4, "cy") + "]}}");
    CHECK(f.read(R"({"table":"accounts","index":"by_owner","from":["bo"],"to":["bo"]})") ==
          R"({"id":1,"ok":true,"result":{"rows":[)" + row(2, "bo") + "," + row(5, "bo") + "]}}");
  }

  TEST_CASE("limit: the default, the most, and past it") {
    Filled f;
    for (uint32_t i = 6; i <= kReadRowsDefault + 10; ++i) {
      f.r.call(R"({"event":"open","args":{"id":)" + std::to_string(i) + R"(,"owner":"x"}})");
    }
    std::string page = f.read(R"({"table":"accounts"})");
    CHECK(page.find(R"("next":[)" + std::to_string(kReadRowsDefault + 1) + "]") != std::string::npos);
    CHECK(f.read(R"({"table":"accounts","limit":10000})").find("\"next\"") == std::string::npos);
    CHECK(f.read(R"({"table":"accounts","limit":10001})") ==
          refusal("bad_request", "`limit` 10001 is over 10000, the most rows one read answers: page on with `next`"));
    for (const char* bad : {"0", "1.5", "-1", "\"5\""}) {
      CHECK(f.read(std::string(R"({"table":"accounts","limit":)") + bad + "}") ==
            refusal("bad_request", "`limit` must be a whole number of rows, 1 to 10000"));
    }
  }

  TEST_CASE("the byte limit: rows up to it in one answer, the row past it left for next; a first row goes whole") {
    Filled f;
    // Each row's JSON is {"k":"a","body":"..."}: 20 bytes and the body.
    std::string half(kReadBytesDefault / 2 - 20, 'x');
    for (const char* k : {"a", "b", "c"}) {
      f.r.call(std::string(R"({"event":"note","args":{"k":")") + k + R"(","body":")" + half + "\"}}");
    }
    std::string at = f.read(R"({"table":"notes"})");
    CHECK(at.size() > kReadBytesDefault);
    CHECK(at.find(R"("next":["c"])") != std::string::npos);  // a and b are exactly kReadBytesDefault
    f.r.call(R"({"event":"note","args":{"k":"big","body":")" + std::string(kReadBytesDefault + 1, 'y') + "\"}}");
    std::string whole = f.read(R"({"table":"notes","from":["big"]})");
    CHECK(whole.find(R"("next":["c"])") != std::string::npos);  // big is over it alone, and sent
    CHECK(whole.find(std::string(kReadBytesDefault + 1, 'y')) != std::string::npos);
    // Up to the most a request may ask for, all four at once.
    std::string most = f.read(R"({"table":"notes","bytes":16777216})");
    CHECK(most.find("\"next\"") == std::string::npos);
    CHECK(most.size() > 2 * kReadBytesDefault);
  }

  TEST_CASE("bytes: a request's own byte limit, at it and past it; the most, and past it") {
    Filled f;
    size_t two = row(1, "ann").size() + row(2, "bo").size();
    CHECK(f.read(R"({"table":"accounts","bytes":)" + std::to_string(two) + "}") ==
          R"({"id":1,"ok":true,"result":{"rows":[)" + row(1, "ann") + "," + row(2, "bo") + R"(],"next":[3]}})");
    CHECK(f.read(R"({"table":"accounts","bytes":)" + std::to_string(two - 1) + "}") ==
          R"({"id":1,"ok":true,"result":{"rows":[)" + row(1, "ann") + R"(],"next":[2]}})");
    CHECK(f.read(R"({"table":"accounts","bytes":1})") ==
          R"({"id":1,"ok":true,"result":{"rows":[)" + row(1, "ann") + R"(],"next":[2]}})");
    CHECK(f.read(R"({"table":"accounts","bytes":16777216})").find(R"("ok":true)") != std::string::npos);
    CHECK(f.read(R"({"table":"accounts","bytes":16777217})") ==
          refusal("bad_request",
                  "`bytes` 16777217 is over 16777216, the most bytes of rows one read answers: page on with `next`"));
    for (const char* bad : {"0", "2.5", "1e300", "true"}) {
      CHECK(f.read(std::string(R"({"table":"accounts","bytes":)") + bad + "}") ==
            refusal("bad_request", "`bytes` must be a whole number of bytes of rows, 1 to 16777216"));
    }
  }

  TEST_CASE("each refusal says what is wrong, with its code") {
    Filled f;
    CHECK(f.read(R"({"table":"acounts","key":[1]})") ==
          refusal("bad_request", "no table `acounts`; did you mean `accounts`?"));
    CHECK(f.read(R"({"table":"zz"})") == refusal("bad_request", "no table `zz`; tables: accounts, lines, notes"));
    CHECK(f.read(R"({"key":[1]})") == refusal("bad_request", "`read` needs `table`: the name of the table to read"));
    CHECK(f.read(R"({"table":"accounts","kye":[1]})") ==
          refusal("bad_request", "unknown member `kye` of `read`; did you mean `key`?"));
    CHECK(f.read(R"({"table":"accounts","rows":1})") ==
          refusal("bad_request", "unknown member `rows` of `read`; it has `table`, and `key`, or `from`, `to`, "
                                 "`index`, `limit` and `bytes`"));
    CHECK(f.read(R"({"table":"accounts","key":[1,2]})") ==
          refusal("bad_request", "`key` has 2 values; the key of `accounts` is (id): one value each"));
    CHECK(f.read(R"({"table":"lines","key":[1]})") ==
          refusal("bad_request", "`key` has 1 value; the key of `lines` is (w, o): one value each"));
    CHECK(f.read(R"({"table":"lines","from":[1,"a",3]})") ==
          refusal("bad_request", "`from` has 3 values; `lines` is read in the order of (w, o): at most 2"));
    CHECK(f.read(R"({"table":"accounts","key":3})") ==
          refusal("bad_request", "`key` must be an array of values of (id), in that order: [the whole key]"));
    CHECK(f.read(R"({"table":"accounts","key":["3"]})") ==
          refusal("bad_args", "key[0] (`id` of `accounts`): expected number, got string"));
    CHECK(f.read(R"({"table":"lines","from":[1,2]})") ==
          refusal("bad_args", "from[1] (`o` of `lines`): expected string, got number"));
    CHECK(f.read(R"({"table":"accounts","key":[9007199254740993]})").find(R"("code":"bad_number")") !=
          std::string::npos);
    CHECK(f.read(R"({"table":"accounts","index":"by_ownr"})") ==
          refusal("bad_request", "`accounts` has no index `by_ownr`; did you mean `by_owner`?"));
    CHECK(f.read(R"({"table":"accounts","index":"zzz"})") ==
          refusal("bad_request", "`accounts` has no index `zzz`; its indexes: by_owner"));
    CHECK(f.read(R"({"table":"lines","index":"by_w"})") ==
          refusal("bad_request", "`lines` has no index `by_w`: it has no indexes"));
    CHECK(f.read(R"({"table":"accounts","key":[1],"limit":1})") ==
          refusal("bad_request",
                  "`key` reads the one row with that key: no `from`, `to`, `index`, `limit` or `bytes` beside it"));
    CHECK(f.read(R"("accounts")").find("`read` must be an object") != std::string::npos);
    CHECK(f.r.call(R"({"read":{"table":"accounts"},"args":{},"id":1})") ==
          refusal("bad_request", "a `read` request has `read`, and perhaps `id` and `after`: no `event`, `query`, "
                                 "`args`, `key`, `schema` or `stats`"));
    CHECK(f.r.call(R"({"read":{"table":"accounts","key":[1]},"after":0,"id":1})").find("\"ok\":true") !=
          std::string::npos);
  }

  TEST_CASE("a read from a snapshot sees the rows as they were published, in key and index order") {
    Filled f;
    Snapshots snaps(f.r.state());
    snaps.publish();
    Snapshot* held = snaps.lease();
    Service reader(f.r.module(), *held->view, ServiceOptions{});
    auto read = [&](const std::string& body) {
      std::string out;
      testing::apply_line(reader, R"({"read":)" + body + "}", 0, &out);
      return out;
    };
    std::string before = read(R"({"table":"accounts","index":"by_owner"})");
    for (int i = 6; i <= 40; ++i) f.r.call(R"({"event":"open","args":{"id":)" + std::to_string(i) + R"(,"owner":"a"}})");
    snaps.publish();
    CHECK(read(R"({"table":"accounts","index":"by_owner"})") == before);
    CHECK(read(R"({"table":"accounts","key":[6]})") == "{\"ok\":true,\"result\":{\"rows\":[]}}\n");
    Snapshot* newest = snaps.lease();
    reader.rebind(*newest->view);
    CHECK(read(R"({"table":"accounts","key":[6]})") ==
          R"({"ok":true,"result":{"rows":[{"id":6,"owner":"a","balance":0}]}})" "\n");
    Snapshots::give_back(newest);
    Snapshots::give_back(held);
    snaps.reclaim();
  }

  TEST_CASE("reads are counted as reads; refused ones as invalid requests") {
    Metrics metrics;
    Filled f(&metrics);
    f.read(R"({"table":"accounts","key":[1]})");
    f.read(R"({"table":"accounts"})");
    f.read(R"({"table":"nope"})");
    f.read(R"({"table":"accounts","key":["x"]})");
    std::string stats = f.r.call(R"({"stats":{}})");
    CHECK(stats.find(R"("queries":0,"schema_requests":0,"reads":2,"requests_invalid":2,)") != std::string::npos);
  }
}

}  // namespace
}  // namespace aup::runtime

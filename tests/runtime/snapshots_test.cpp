// Snapshots for queries on other threads: a held snapshot reads the same
// values while the owner changes those rows thousands of times, leases
// hold back reclaiming, and reclaimed nodes are reused by later copies.
// (Under ASan/LSan the same runs catch a node or text freed too early or
// never.)
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>

#include "tests/runtime/harness.h"
#include "runtime/snapshots.h"

namespace aup::runtime {
namespace {

const char* kModule = R"(
record Item { id: num, qty: num, tag: text }
table items: Item key id
var last: text = "none"
event put { id: num, qty: num }
on put {
  items.put(Item { id: put.id, qty: put.qty, tag: "t" + text(put.qty) })
  last = "put " + text(put.id)
}
event del { id: num }
on del { items.remove(del.id) }
query dump() {
  let out: [text] = []
  for i in items { out.push(text(i.id) + "=" + text(i.qty) + i.tag) }
  out.push(last)
  return out
}
)";

std::string put(int id, int qty) {
  return R"({"event":"put","args":{"id":)" + std::to_string(id) + R"(,"qty":)" + std::to_string(qty) + "}}";
}

// A query answered from a snapshot, as an I/O thread does it.
std::string dump(Service& reader, Snapshot* s) {
  reader.rebind(*s->view);
  std::string out;
  testing::apply_line(reader, R"({"query":"dump"})", 0, &out);
  return out;
}

// The same rows with indexes on the fields the owner changes.
const char* kIndexed = R"(
record Item { id: num, qty: num, tag: text }
table items: Item key id
index by_qty on items (qty)
unique index by_tag on items (tag)
event put { id: num, qty: num }
on put { items.put(Item { id: put.id, qty: put.qty, tag: "t" + text(put.id) + "/" + text(put.qty) }) }
event del { id: num }
on del { items.remove(del.id) }
query dump() {
  let out: [text] = []
  for i in items.by_qty desc { out.push(text(i.id) + "=" + text(i.qty)) }
  out.push(text(items.by_tag.count) + " " + text(items.by_qty[0 .. 150].count))
  if items.count > 3 { out.push(items.by_qty.at(3).tag) }
  return out
}
)";

TEST_SUITE("snapshots") {
  TEST_CASE("a held snapshot's index views read the same while the owner moves the indexed fields") {
    testing::Running run(kIndexed);
    for (int i = 0; i < 200; ++i) run.call(put(i, i));
    Snapshots snaps(run.state());
    snaps.publish();
    Snapshot* held = snaps.lease();
    Service reader(run.module(), *held->view, ServiceOptions{});
    std::string before = dump(reader, held);
    REQUIRE(before.find("\"199=199\"") != std::string::npos);
    for (int round = 0; round < 10; ++round) {
      for (int i = 0; i < 200; ++i) run.call(put(i, 1000 - 7 * i + round));
      for (int i = round; i < 200; i += 11) run.call(R"({"event":"del","args":{"id":)" + std::to_string(i) + "}}");
      snaps.publish();
      CHECK(dump(reader, held) == before);
    }
    Snapshot* newest = snaps.lease();
    CHECK(dump(reader, newest) != before);
    Snapshots::give_back(newest);
    Snapshots::give_back(held);
    snaps.reclaim();
    CHECK(snaps.held_back() == 0);
  }

  TEST_CASE("a held snapshot reads the same values while the owner changes those rows thousands of times") {
    testing::Running run(kModule);
    for (int i = 0; i < 300; ++i) run.call(put(i, i));
    Snapshots snaps(run.state());
    snaps.publish();
    Snapshot* held = snaps.lease();
    Service reader(run.module(), *held->view, ServiceOptions{});
    std::string before = dump(reader, held);
    REQUIRE(before.find("\"0=0t0\"") != std::string::npos);
    for (int round = 0; round < 20; ++round) {
      for (int i = 0; i < 300; ++i) run.call(put(i, 1000 * round + i));
      for (int i = 0; i < 300; i += 7) run.call(R"({"event":"del","args":{"id":)" + std::to_string(i) + "}}");
      snaps.publish();
      CHECK(snaps.held_back() == 1);  // the held one; the others went back at once
      CHECK(dump(reader, held) == before);
    }
    Snapshot* newest = snaps.lease();
    CHECK(dump(reader, newest) != before);
    Snapshots::give_back(newest);
    Snapshots::give_back(held);
    snaps.reclaim();
    CHECK(snaps.held_back() == 0);
  }

  TEST_CASE("queries on another thread read consistent snapshots while the owner publishes") {
    testing::Running run(kModule);
    for (int i = 0; i < 100; ++i) run.call(put(i, 0));
    Snapshots snaps(run.state());
    std::atomic<bool> done{false};
    std::atomic<int> checked{0};
    std::string problem;
    // Every event writes the same qty to all 100 rows before a publish, so
    // a snapshot must show one qty everywhere: a mix would be a torn read.
    std::thread reader_thread([&] {
      Service reader(run.module(), run.state(), ServiceOptions{});
      while (!done.load()) {
        Snapshot* s = snaps.lease();
        std::string out = dump(reader, s);
        Snapshots::give_back(s);
        size_t eq = out.find('=');
        std::string first = out.substr(eq + 1, out.find('t', eq) - eq - 1);
        for (size_t at = out.find('=', eq + 1); at != std::string::npos; at = out.find('=', at + 1)) {
          std::string q = out.substr(at + 1, out.find('t', at) - at - 1);
          if (q != first && problem.empty()) problem = out.substr(0, 200);
        }
        checked.fetch_add(1);
      }
    });
    for (int round = 1; round <= 400; ++round) {
      for (int i = 0; i < 100; ++i) run.call(put(i, round));
      snaps.publish();
    }
    while (checked.load() < 50) std::this_thread::yield();
    done.store(true);
    reader_thread.join();
    CHECK(problem.empty());
    snaps.reclaim();
    CHECK(snaps.held_back() == 0);
  }

  TEST_CASE("nodes a snapshot gave back are reused by the next copies") {
    testing::Running run(kModule);
    for (int i = 0; i < 2000; ++i) run.call(put(i, i));
    Snapshots snaps(run.state());
    vm::BTree& items = run.state().table(0);
    uint64_t recycled = items.nodes_recycled();
    uint64_t copied = items.nodes_copied();
    for (int round = 0; round < 50; ++round) {
      for (int i = 0; i < 2000; i += 97) run.call(put(i, round));
      snaps.publish();
    }
    CHECK(items.nodes_copied() > copied);
    // Almost every copy after the first rounds took a node a released
    // snapshot gave back instead of a fresh allocation.
    CHECK(items.nodes_recycled() - recycled > (items.nodes_copied() - copied) / 2);
  }
}

}  // namespace
}  // namespace aup::runtime

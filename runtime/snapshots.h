// Read-only snapshots of the state, for queries on other threads
// (docs/architecture.md, "Threads of `aup run`").
//
// After each commit the owner publishes the state as it is: per table a
// root reference (BTree::share, so the owner's next change to any node of
// it copies that node first) and the vars' values. Query threads lease the
// newest snapshot, run against a read-only vm::State over it, and give the
// lease back. Node and text reference counts are not atomic, so a snapshot
// is given back to the tables (its roots dropped, its texts released) only
// by the owner, in reclaim(), once no lease holds it; nodes it was the last
// to hold go to the tables' spares and are reused by the next copies.
//
// A lease is taken under a mutex held for a pointer copy and an increment;
// it is given back with one atomic decrement. A reader never waits for the
// owner, and the owner never waits for a reader.
#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "vm/state.h"

namespace aup::runtime {

struct Snapshot {
  uint64_t number = 0;                  // publications so far, this one included
  std::vector<vm::Node*> roots;          // per tree (tables, then indexes), from share()
  std::vector<vm::Value> vars;           // texts retained
  std::unique_ptr<vm::State> view;       // queries read this
  std::atomic<uint32_t> leases{0};
  // Given back to the tables (owner thread): its nodes may be reused by
  // the owner's next copies, so nothing may read it again.
  bool dropped = false;
};

class Snapshots {
 public:
  // Publishes the state as it is now (the first snapshot). The thread that
  // makes it is the owner.
  explicit Snapshots(vm::State& live);
  // Owner thread, with no lease outstanding.
  ~Snapshots();
  Snapshots(const Snapshots&) = delete;
  Snapshots& operator=(const Snapshots&) = delete;

  // Owner thread, after a commit that changed the state.
  void publish();
  // Owner thread: gives back every replaced snapshot no lease holds.
  void reclaim();

  // Any thread: the newest snapshot, held until give_back().
  Snapshot* lease();
  static void give_back(Snapshot* s) {
    // One give-back per lease: a second would let the owner drop the
    // snapshot under another reader's lease.
    [[maybe_unused]] uint32_t held = s->leases.fetch_sub(1, std::memory_order_release);
    assert(held > 0);
  }

  uint64_t published() const { return published_; }
  // Replaced snapshots still held by a lease (owner thread).
  size_t held_back() const { return retired_.size(); }

 private:
  std::unique_ptr<Snapshot> take();
  void give_back_to_tables(Snapshot& s);

  // The owner: the one thread that publishes, reclaims and drops (the
  // reference counts of nodes and texts are not atomic).
  bool on_owner() const { return std::this_thread::get_id() == owner_; }

  vm::State& live_;
  std::thread::id owner_ = std::this_thread::get_id();
  std::mutex mu_;                   // guards current_ (the pointer)
  std::unique_ptr<Snapshot> current_;
  std::vector<std::unique_ptr<Snapshot>> retired_;  // owner thread only
  uint64_t published_ = 0;
};

}  // namespace aup::runtime

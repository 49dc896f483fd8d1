// How a batch of applied events becomes durable, for the Committer
// (runtime/committer.h).
//
// The Committer applies events one after another, then asks commit_batch()
// to make all their changes durable before it settles a single answer. In
// memory that is immediate; with a store (--data) it is one log entry and
// one fdatasync for the whole batch (group commit). When a commit fails the
// batch is rolled back and its events are answered `unavailable` with the
// batch's fate; after a failed write or sync refusing() stays set and every
// later event is refused until a restart (queries still work).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "runtime/code.h"
#include "vm/module.h"
#include "storage/records.h"
#include "storage/schema.h"
#include "vm/state.h"
#include "storage/store.h"

namespace aup::runtime {

class Shipper;

// What the store holds and has done, for the stats request (runtime/metrics.h).
struct StoreFigures {
  bool store = false;  // false in memory: everything else 0
  uint64_t log_bytes_written = 0;  // entry bytes appended since the store opened
  uint64_t log_bytes = 0;          // entry bytes in the segments kept
  uint64_t image_bytes = 0;        // the current images, every table's and the vars'
  uint64_t checkpoints = 0;        // finished since the store opened
};

class Durability {
 public:
  virtual ~Durability() = default;
  // Makes every change since the last commit durable; false when it could
  // not, with what became of the batch (`fate`) and why: the batch is then
  // rolled back in memory too.
  virtual bool commit_batch(storage::Fate& fate, std::string& why) = 0;
  // Set while events must be refused (not written: they do not run), with
  // why, and the code they are refused with: `unavailable` (a store that
  // failed), or `not_primary` (a replica, whose message names its primary).
  virtual const std::string* refusing() const = 0;
  virtual Code refusing_code() const { return Code::Unavailable; }
  // With `not_primary`: the primary's address, when known ("" if not).
  virtual const std::string& primary() const {
    static const std::string none;
    return none;
  }
  // Whether the answers of events leaving now may say they were applied:
  // false on a cluster's primary whose lease may have expired (it may be
  // deposed already: runtime/cluster.h). Checked right before answers leave.
  virtual bool may_answer() const { return true; }
  // Between batches (checkpoints are taken in here).
  virtual void between_batches() {}
  // At shutdown.
  virtual void close() {}
  // Log bytes written so far (for --stats; 0 in memory).
  virtual uint64_t log_bytes() const { return 0; }
  // How long the last commit_batch() took, as the store timed it (the one
  // timing of a commit: storage::Store::commit); 0 in memory, where
  // nothing is waited for.
  virtual uint64_t last_commit_ns() const { return 0; }
  // Owner thread.
  virtual StoreFigures store_figures() const { return {}; }

  // Saves (docs/protocol.md, "Saves"): whether events are answered with
  // the save that holds them (a store), and the last save the state holds
  // (UINT64_MAX in memory, where every `after` is met).
  virtual bool has_saves() const { return false; }
  virtual uint64_t applied_save() const { return UINT64_MAX; }
  // Whether a durable batch's answers wait for replicas (--sync-replicas),
  // the last save they have all confirmed, and how long answers wait for
  // that; how long a query waits for its `after` save.
  virtual bool awaits_acks() const { return false; }
  virtual uint64_t acked_save() const { return UINT64_MAX; }
  virtual std::chrono::milliseconds sync_timeout() const { return std::chrono::milliseconds(0); }
  virtual std::chrono::milliseconds after_timeout() const { return std::chrono::milliseconds(kAfterTimeoutMs); }
  static constexpr int kAfterTimeoutMs = 5000;
};

// --memory: an applied event is done.
class MemoryDurability : public Durability {
 public:
  explicit MemoryDurability(vm::State& s) : state_(s) {}
  bool commit_batch(storage::Fate&, std::string&) override {
    state_.commit();
    return true;
  }
  const std::string* refusing() const override { return nullptr; }

 private:
  vm::State& state_;
};

// --data DIR --read-only (storage/read_only.h): a store served as it is,
// never written. Every event is refused `not_primary`, as a replica
// refuses them, but naming no primary (there is none to follow): the
// message says the store is served read-only. Queries are answered from
// the state read at the start, which holds every save up to `last_seq`.
class ReadOnlyDurability : public Durability {
 public:
  ReadOnlyDurability(vm::State& s, const std::string& dir, uint64_t last_seq);
  // Never reached (refusing() refuses every event before it runs), and
  // would write nothing if it were: the batch is undone.
  bool commit_batch(storage::Fate& fate, std::string& why) override;
  const std::string* refusing() const override { return &refusal_; }
  Code refusing_code() const override { return Code::NotPrimary; }
  uint64_t applied_save() const override { return last_seq_; }

 private:
  vm::State& state_;
  std::string refusal_;
  uint64_t last_seq_;
};

// The store's view of a module: its tables' columns and its vars (never
// the store's own tables, which the store adds: storage/key_tables.h).
storage::Schema schema_of(const vm::Module& m);

// A vm::State as the tables and vars a store reads and recovers.
class StateTables : public storage::Tables {
 public:
  explicit StateTables(vm::State& s) : state_(s) {}
  vm::BTree& table(uint32_t t) override { return state_.table(t); }
  uint64_t var(uint32_t v) const override { return state_.var(v); }
  void set_var(uint32_t v, uint64_t value) override;
  // A replica's, once its indexes are built: each row an entry changes
  // moves its index entries with it.
  void follow_rows() { follows_ = true; }
  bool follows_rows() const override { return follows_; }
  void row_leaving(uint32_t t, const uint64_t* row) override;
  void row_entered(uint32_t t, const uint64_t* row) override;

 private:
  vm::State& state_;
  bool follows_ = false;
};

// --data DIR: each batch is one log entry, synced before the answers.
class StoreDurability : public Durability {
 public:
  // Batches encoded against the store's schema: the module's tables and
  // the key tables when it keeps them, numbered as `state`'s.
  StoreDurability(vm::State& state, storage::Store& store)
      : state_(state), store_(store), batch_(store.schema()) {}
  bool commit_batch(storage::Fate& fate, std::string& why) override;
  const std::string* refusing() const override {
    if (store_.unavailable()) return &store_.unavailable_reason();
    return refusal_.empty() ? nullptr : &refusal_;
  }
  Code refusing_code() const override { return store_.unavailable() ? Code::Unavailable : refusal_code_; }
  const std::string& primary() const override { return primary_; }
  bool may_answer() const override { return !gate_ || gate_(); }
  void between_batches() override;
  // Owner thread. A replica of `primary` (docs/replication.md): every
  // event is refused `not_primary`, naming it.
  void set_replica_of(const std::string& primary);
  // Owner thread. Every event refused with `code` and `why` (a cluster's
  // node while it has no primary); "": events are taken (a primary).
  void refuse_events(Code code, std::string why) {
    refusal_code_ = code;
    refusal_ = std::move(why);
    primary_.clear();
  }
  // A cluster's primary: whether it may answer events now (any thread).
  void set_gate(std::function<bool()> gate) { gate_ = std::move(gate); }
  // A primary's shipper (runtime/shipper.h), told of every durable commit,
  // whose replicas' needs hold log segments back from release.
  void set_shipper(Shipper* s) { shipper_ = s; }
  void close() override { store_.drain(); }
  bool has_saves() const override { return saves_; }
  uint64_t applied_save() const override { return store_.last_seq(); }
  bool awaits_acks() const override { return sync_replicas_ > 0; }
  uint64_t acked_save() const override;
  std::chrono::milliseconds sync_timeout() const override { return sync_timeout_; }
  std::chrono::milliseconds after_timeout() const override { return after_timeout_; }
  // A node that takes part in replication (--sync-replicas given, or a
  // cluster's): events are answered with their saves, and answers wait
  // for `sync_replicas` replicas for up to `sync_timeout`. A lone node's
  // answers are as they always were.
  void set_replication(uint32_t sync_replicas, std::chrono::milliseconds sync_timeout) {
    saves_ = true;
    sync_replicas_ = sync_replicas;
    sync_timeout_ = sync_timeout;
  }
  void set_after_timeout(std::chrono::milliseconds t) { after_timeout_ = t; }
  uint64_t log_bytes() const override { return store_.stats().log_bytes; }
  uint64_t last_commit_ns() const override { return store_.last_commit_ns(); }
  StoreFigures store_figures() const override {
    return StoreFigures{true, store_.stats().log_bytes, store_.live_log_bytes(), store_.image_bytes(),
                        store_.stats().checkpoints};
  }

 private:
  vm::State& state_;
  storage::Store& store_;
  storage::BatchEncoder batch_;
  std::string refusal_;  // why every event is refused (a replica), or ""
  Code refusal_code_ = Code::NotPrimary;
  std::string primary_;  // a replica's primary
  std::function<bool()> gate_;
  Shipper* shipper_ = nullptr;
  bool saves_ = false;
  uint32_t sync_replicas_ = 0;
  std::chrono::milliseconds sync_timeout_{0}, after_timeout_{kAfterTimeoutMs};
};

}  // namespace aup::runtime

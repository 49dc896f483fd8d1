// sqlite-grouped's writer: one thread with its own connection that runs
// every write transaction (New-Order, Payment, Delivery) of every terminal.
//
// A terminal hands its transaction over and waits. The writer takes
// everything waiting at that moment as one group: BEGIN IMMEDIATE, each
// transaction inside SAVEPOINT/RELEASE (ROLLBACK TO + RELEASE for the
// New-Order that must roll back, and for one that fails), one COMMIT, one
// WAL fsync; only then does it wake each terminal with its answer, so an
// answer is never given before it is durable. While one group commits,
// the next one gathers: the group grows with the load, which is what
// spreads one fsync over many transactions.
//
// Failure: a transaction that throws is undone to its savepoint and only
// its terminal gets the error; a BEGIN or COMMIT that fails fails the
// whole group (nothing of it is committed).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "bench/tpcc/backend.h"
#include "bench/tpcc/sqlite_db.h"

namespace aup::tpcc {

// Transactions waiting for the writer. Each terminal waits for its answer
// before it sends another, so at most one per terminal waits: the bound
// is the most terminals a run has, and a submit that finds it full (a
// caller breaking that rule) waits for room. It also bounds one group's
// size, hence the WAL bytes one COMMIT writes.
constexpr size_t kMaxWaitingWrites = kMaxTerminals;

class GroupWriter {
 public:
  // Takes a configured connection of its own and starts the thread.
  explicit GroupWriter(std::unique_ptr<Db> db);
  // Stops as stop() does, reporting nothing.
  ~GroupWriter();
  GroupWriter(const GroupWriter&) = delete;
  GroupWriter& operator=(const GroupWriter&) = delete;

  // Runs `tx` in the next group and returns its answer once the group is
  // committed. Throws the transaction's error, the group's, or a sentence
  // saying the writer has stopped. Called by any number of threads.
  TxResult submit(const Transaction& tx);

  // Lets the thread finish what waits, joins it and closes the
  // connection; throws when the connection does not close. Idempotent.
  void stop();

 private:
  // Lives on the submitting thread's stack until `done`.
  struct Request {
    const Transaction* tx = nullptr;
    TxResult result;
    std::string error;  // empty: result holds the answer
    bool done = false;
    std::condition_variable wake;
  };

  void loop();
  void run_group(const std::deque<Request*>& group);
  void run_in_savepoint(Request& request);
  void halt();

  std::unique_ptr<Db> db_;  // used by the thread only, until it is joined
  std::mutex mutex_;
  std::condition_variable work_;  // the writer waits for requests
  std::condition_variable room_;  // submitters wait for room in the queue
  std::deque<Request*> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace aup::tpcc

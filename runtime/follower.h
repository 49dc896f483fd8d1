// A replica's side of replication (docs/replication.md): `aup run --data
// DIR --replica-of ADDRESS`. A thread of its own connects to the primary,
// says where the store stands (its last save, that entry's term, its
// schema: runtime/replication_stream.h), and takes the entries it is sent.
// It checks each (its payload's digest, that it follows the last one), and
// hands what it has read to the owner thread (owner_tasks.h), which alone
// changes the store and the state: each entry is written into the
// replica's own log, synced, and applied (storage::Store::append_copy).
// Then the thread acknowledges the save now durable.
//
// A lost connection (the primary stopped, a network fault, a beat missing
// for kSilentSeconds) is followed by a new one a second later, from
// wherever the store then stands. A refusal the primary gives at the
// handshake (another module, a replica ahead of it, a log that no longer
// reaches back to the replica's save) will not change by trying again: the
// follower stops and says why (`failed()`), and the server goes on
// answering queries.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/owner_tasks.h"
#include "storage/store.h"

namespace aup::runtime {

// No frame from the primary for this long (it beats once a second): the
// connection is given up and made again.
inline constexpr int kSilentSeconds = 5;

class Follower {
 public:
  // `store` is the replica's (the owner thread's); `tasks` the server's
  // way to the owner thread. Starts following at once.
  Follower(std::string primary, storage::Store& store, OwnerTasks& tasks, std::FILE* err);
  ~Follower();  // stops following
  Follower(const Follower&) = delete;
  Follower& operator=(const Follower&) = delete;

  const std::string& primary() const { return primary_; }
  // Any thread: the last save durable here (and applied: a replica applies
  // an entry once it is durable), and the primary's last as it last said.
  uint64_t durable() const { return durable_.load(std::memory_order_acquire); }
  uint64_t primary_save() const { return primary_save_.load(std::memory_order_acquire); }
  bool connected() const { return connected_.load(std::memory_order_acquire); }
  // Why following stopped for good ("" while it goes on).
  std::string failed() const;

 private:
  struct Received {
    uint32_t term = 0;
    uint64_t save = 0;
    std::vector<uint8_t> payload;
  };
  void run();
  bool session();
  bool handshake(int fd, std::string& buffered);
  bool take_frames(int fd, std::vector<uint8_t>& in);
  bool write_entries(std::vector<Received>& batch);
  bool send_ack(int fd);
  void give_up(const std::string& why);
  void say_caught_up();
  void pause(std::chrono::milliseconds d);

  std::string primary_;
  storage::Store& store_;
  OwnerTasks& tasks_;
  std::FILE* err_;
  std::vector<uint8_t> schema_file_;  // the store's schema, as the handshake sends it
  std::atomic<uint64_t> durable_{0}, primary_save_{0};
  std::atomic<uint32_t> term_{0};
  std::atomic<bool> connected_{false};
  std::atomic<int> fd_{-1};  // the connection, for the destructor to shut down
  mutable std::mutex mu_;
  std::condition_variable cv_;  // the owner finished a batch; or stopping
  bool stop_ = false;           // under mu_
  bool written_ = false;        // under mu_: the batch handed over was taken
  std::string write_error_;     // under mu_: why the batch was not
  std::string failed_;          // under mu_
  bool said_unreachable_ = false;
  uint64_t catch_up_to_ = 0;     // the primary's save at the handshake
  bool caught_up_said_ = false;
  std::thread thread_;
};

}  // namespace aup::runtime

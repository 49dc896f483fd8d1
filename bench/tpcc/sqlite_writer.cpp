#include "bench/tpcc/sqlite_writer.h"

#include <exception>
#include <stdexcept>
#include <utility>

#include "bench/tpcc/sqlite_run.h"
#include "bench/tpcc/sqlite_tpcc.h"

namespace aup::tpcc {
namespace {

std::string message_of(std::exception_ptr error) {
  try {
    std::rethrow_exception(std::move(error));
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an unknown error";
  }
}

}  // namespace

GroupWriter::GroupWriter(std::unique_ptr<Db> db) : db_(std::move(db)), thread_([this] { loop(); }) {}

GroupWriter::~GroupWriter() {
  halt();
  // The connection closes quietly in Db's destructor.
}

TxResult GroupWriter::submit(const Transaction& tx) {
  Request request;
  request.tx = &tx;
  std::unique_lock lock(mutex_);
  room_.wait(lock, [&] { return stopping_ || queue_.size() < kMaxWaitingWrites; });
  if (stopping_) throw std::runtime_error(db_->label() + ": the writer has stopped; no transaction can run");
  queue_.push_back(&request);
  work_.notify_one();
  request.wake.wait(lock, [&] { return request.done; });
  if (!request.error.empty()) throw std::runtime_error(request.error);
  return std::move(request.result);
}

void GroupWriter::halt() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_one();
  room_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GroupWriter::stop() {
  halt();
  db_->close();
}

// Waits for requests; takes all that wait as one group; answers them.
void GroupWriter::loop() {
  std::deque<Request*> group;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      work_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      group.swap(queue_);
    }
    room_.notify_all();
    run_group(group);
    // Wake under the lock: a request lives on its submitter's stack, which
    // may unwind as soon as it sees `done`.
    std::lock_guard lock(mutex_);
    for (Request* r : group) {
      r->done = true;
      r->wake.notify_one();
    }
    group.clear();
  }
}

void GroupWriter::run_group(const std::deque<Request*>& group) {
  try {
    begin_write(*db_);
    for (Request* r : group) run_in_savepoint(*r);
    control(*db_, Control::commit);
  } catch (...) {
    // Nothing of the group is durable: every transaction in it fails,
    // including those that went well up to the COMMIT.
    db_->rollback_quietly();
    const std::string error = message_of(std::current_exception());
    for (Request* r : group) r->error = error;
  }
}

void GroupWriter::run_in_savepoint(Request& request) {
  control(*db_, Control::savepoint);
  try {
    request.result = run_statements(*db_, *request.tx, now_ms());
    check_outcome(*db_, *request.tx, request.result);
    if (request.result.outcome == Outcome::rolled_back) control(*db_, Control::rollback_to);
    control(*db_, Control::release);
  } catch (...) {
    // Some errors (a full disk, an I/O error) end the whole transaction;
    // then the group fails with this error.
    if (!db_->in_transaction()) throw;
    request.error = message_of(std::current_exception());
    control(*db_, Control::rollback_to);
    control(*db_, Control::release);
  }
}

}  // namespace aup::tpcc

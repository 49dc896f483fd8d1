#include "bench/tpcc/sqlite_run.h"

#include <stdexcept>
#include <string>

#include "bench/tpcc/sqlite_tpcc.h"

namespace aup::tpcc {
namespace {

[[noreturn]] void stayed_busy(const Db& db, const SqliteError& last) {
  throw std::runtime_error(db.label() + ": the database stayed locked through " + std::to_string(kMaxBusyAttempts) +
                           " tries of " + std::to_string(kBusyTimeoutMs / 1000) + " s each (" + last.what() + ")");
}

}  // namespace

TxResult run_alone(Db& db, const Transaction& tx) {
  const Control begin = is_read_only(tx) ? Control::begin_deferred : Control::begin_immediate;
  for (int attempt = 1;; ++attempt) {
    try {
      control(db, begin);
      TxResult result = run_statements(db, tx, now_ms());
      check_outcome(db, tx, result);
      control(db, result.outcome == Outcome::rolled_back ? Control::rollback : Control::commit);
      return result;
    } catch (const SqliteError& e) {
      db.rollback_quietly();
      if (!e.busy()) throw;
      if (attempt == kMaxBusyAttempts) stayed_busy(db, e);
    } catch (...) {
      db.rollback_quietly();
      throw;
    }
  }
}

void begin_write(Db& db) {
  for (int attempt = 1;; ++attempt) {
    try {
      control(db, Control::begin_immediate);
      return;
    } catch (const SqliteError& e) {
      if (!e.busy()) throw;
      if (attempt == kMaxBusyAttempts) stayed_busy(db, e);
    }
  }
}

}  // namespace aup::tpcc

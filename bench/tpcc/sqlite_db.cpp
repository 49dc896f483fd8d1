#include "bench/tpcc/sqlite_db.h"

#include <utility>

namespace aup::tpcc {

// ---- Statement ------------------------------------------------------------------

Statement::~Statement() {
  if (!stmt_) return;
  if (owned_) {
    sqlite3_finalize(stmt_);
  } else {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)), owned_(other.owned_) {}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_->fail(sqlite3_sql(stmt_), rc);
}

void Statement::run() {
  while (step()) {
  }
}

std::string Statement::text(int column) const {
  const unsigned char* p = sqlite3_column_text(stmt_, column);
  if (!p) return {};
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

void Statement::bind_one(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) db_->fail(sqlite3_sql(stmt_), rc);
}

void Statement::bind_one(int index, std::string_view value) {
  // SQLITE_TRANSIENT: SQLite copies the text, so the caller's buffer may
  // go away before the step.
  int rc = sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) db_->fail(sqlite3_sql(stmt_), rc);
}

// ---- Db -----------------------------------------------------------------------------

Db::Db(const std::string& path, std::string label) : label_(std::move(label)) {
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw SqliteError(label_ + ": cannot open " + path + ": " + message, rc);
  }
  // Extended codes tell SQLITE_BUSY_SNAPSHOT and the like apart in messages.
  sqlite3_extended_result_codes(db_, 1);
}

Db::~Db() {
  finalize_cached();
  if (db_) sqlite3_close_v2(db_);
}

void Db::fail(std::string_view doing, int code) const {
  std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(code);
  throw SqliteError(label_ + ": " + std::string(doing) + ": " + message, code);
}

void Db::exec(const std::string& sql) {
  char* error = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return;
  std::string message = error ? error : sqlite3_errstr(rc);
  sqlite3_free(error);
  throw SqliteError(label_ + ": " + sql + ": " + message, rc);
}

Statement Db::prepare(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) fail(sql, rc);
  return Statement(*this, stmt, true);
}

Statement Db::cached(size_t slot, const char* sql) {
  if (slot >= cache_.size()) cache_.resize(slot + 1, nullptr);
  if (!cache_[slot]) {
    // SQLITE_PREPARE_PERSISTENT: the statement lives as long as the
    // connection, so SQLite keeps it out of its lookaside memory.
    int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &cache_[slot], nullptr);
    if (rc != SQLITE_OK) fail(sql, rc);
  }
  return Statement(*this, cache_[slot], false);
}

int64_t Db::query_int(const std::string& sql) {
  Statement s = prepare(sql);
  if (!s.step()) throw SqliteError(label_ + ": " + sql + " gave no row", SQLITE_ERROR);
  return s.integer(0);
}

std::string Db::query_text(const std::string& sql) {
  Statement s = prepare(sql);
  if (!s.step()) throw SqliteError(label_ + ": " + sql + " gave no row", SQLITE_ERROR);
  return s.text(0);
}

void Db::rollback_quietly() {
  if (db_ && in_transaction()) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Db::finalize_cached() {
  for (sqlite3_stmt*& stmt : cache_) {
    sqlite3_finalize(stmt);
    stmt = nullptr;
  }
}

void Db::close() {
  if (!db_) return;
  finalize_cached();
  int rc = sqlite3_close(db_);
  if (rc != SQLITE_OK) fail("closing the connection", rc);
  db_ = nullptr;
}

}  // namespace aup::tpcc

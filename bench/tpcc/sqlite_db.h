// A libsqlite3 connection for one thread with its prepared statements kept
// for reuse, and SQLite's errors as exceptions whose sentence names the
// backend ("sqlite-tuned: UPDATE stock ...: database is locked").
//
// A Db is opened SQLITE_OPEN_NOMUTEX: it is used by one thread at a time
// (a terminal's thread, the grouped writer's thread, or the thread that
// drives the backend), so SQLite's per-connection mutex would only cost.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aup::tpcc {

// An error SQLite returned. busy(): another connection held a lock for
// longer than busy_timeout; the transaction may be retried from its start.
class SqliteError : public std::runtime_error {
 public:
  SqliteError(const std::string& what, int code) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }
  bool busy() const { return (code_ & 0xff) == SQLITE_BUSY || (code_ & 0xff) == SQLITE_LOCKED; }

 private:
  int code_;
};

class Db;

// One use of a prepared statement: bind, step through the rows, read
// columns. A cached statement is reset when the use ends (so its next use,
// and COMMIT, find it idle); a one-off statement is finalized.
class Statement {
 public:
  Statement(Db& db, sqlite3_stmt* stmt, bool owned) : db_(&db), stmt_(stmt), owned_(owned) {}
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& operator=(Statement&&) = delete;

  // Binds the arguments to parameters 1, 2, ... in order (numbered
  // parameters ?N take the N-th argument).
  template <typename... Args>
  Statement& bind(const Args&... args) & {
    int index = 1;
    (bind_one(index++, args), ...);
    return *this;
  }
  // On a fresh use (db.cached(...).bind(...)): the use itself, to keep or to run.
  template <typename... Args>
  Statement&& bind(const Args&... args) && {
    int index = 1;
    (bind_one(index++, args), ...);
    return std::move(*this);
  }

  // true: a row is ready to read; false: the statement is done. Throws
  // SqliteError on any other result.
  bool step();
  // Steps to the end, ignoring any rows (INSERT, UPDATE without RETURNING).
  void run();

  int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }
  std::string text(int column) const;
  bool is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

 private:
  void bind_one(int index, int64_t value);
  void bind_one(int index, std::string_view value);

  Db* db_;
  sqlite3_stmt* stmt_;
  bool owned_;
};

class Db {
 public:
  // Opens the database file at `path` (made when missing); `label` starts
  // every error message (the backend's kind).
  Db(const std::string& path, std::string label);
  // Finalizes and closes without reporting; close() reports.
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Runs SQL text with no results wanted (schema, pragmas that set).
  void exec(const std::string& sql);
  // The first column of the first row of a one-off statement (a pragma
  // that answers, a count), as a number or as text.
  int64_t query_int(const std::string& sql);
  std::string query_text(const std::string& sql);

  // The statement cached in `slot` (prepared from `sql` on first use),
  // ready to bind. The caller gives each SQL text its own slot and uses a
  // slot once at a time.
  Statement cached(size_t slot, const char* sql);
  // A statement for one use, finalized afterwards.
  Statement prepare(const std::string& sql);

  // Rows changed by the last INSERT, UPDATE or DELETE.
  int64_t changes() const { return sqlite3_changes64(db_); }
  bool in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }
  // Ends an open transaction, ignoring errors: the path out of a failure.
  void rollback_quietly();

  // Finalizes the cached statements and closes the connection; throws
  // when SQLite refuses. Idempotent.
  void close();

  const std::string& label() const { return label_; }
  // Throws SqliteError: "LABEL: DOING: SQLite's message".
  [[noreturn]] void fail(std::string_view doing, int code) const;

 private:
  void finalize_cached();

  sqlite3* db_ = nullptr;
  std::string label_;
  std::vector<sqlite3_stmt*> cache_;  // by slot; null until first use
};

}  // namespace aup::tpcc

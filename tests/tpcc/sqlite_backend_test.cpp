// Tests of bench/tpcc/sqlite_backend.cpp (and its sqlite_*.cpp helpers):
// the load's population, the consistency conditions after load and after
// generated transactions from several terminals, the exact effect of a
// rolled-back New-Order, a Payment and a Delivery on the rows, durability
// across close and reopen, and the grouped writer against the plain
// configuration. One W=1 load is shared: each case copies its file.
#include <doctest/doctest.h>

#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/tpcc/backend.h"
#include "bench/tpcc/generator.h"
#include "bench/tpcc/sqlite_backend.h"
#include "bench/tpcc/state.h"

namespace aup::tpcc {
namespace {

namespace fs = std::filesystem;

// Table indexes as table_specs() orders them.
enum TableIndex : int {
  kItemsTable, kWarehousesTable, kDistrictsTable, kCustomersTable, kHistoryTable,
  kOrdersTable, kNewOrdersTable, kOrderLinesTable, kStockTable,
};

const std::vector<std::string> kKinds{"sqlite", "sqlite-tuned", "sqlite-grouped"};

// ---- helpers ------------------------------------------------------------------

// A directory made by mkdtemp under $TMPDIR (or /tmp), removed with all
// it holds when the test ends.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/aup-sqlite-test-XXXXXX";
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

BackendConfig config_for(const std::string& kind, const std::string& dir, uint32_t terminals = 1,
                         bool on_disk = false) {
  BackendConfig c;
  c.kind = kind;
  c.dir = dir;
  c.warehouses = 1;
  c.terminals = terminals;
  c.on_disk = on_disk;
  return c;
}

// Rows per table of generate_load, counted without a database.
class CountingSink final : public RowSink {
 public:
  TableCounts counts;
  void items(std::span<const ItemRow> r) override { counts.rows[kItemsTable] += r.size(); }
  void warehouses(std::span<const WarehouseRow> r) override { counts.rows[kWarehousesTable] += r.size(); }
  void districts(std::span<const DistrictRow> r) override { counts.rows[kDistrictsTable] += r.size(); }
  void customers(std::span<const CustomerRow> r) override { counts.rows[kCustomersTable] += r.size(); }
  void history(std::span<const HistoryRow> r) override { counts.rows[kHistoryTable] += r.size(); }
  void orders(std::span<const OrderRow> r) override { counts.rows[kOrdersTable] += r.size(); }
  void new_orders(std::span<const NewOrderRow> r) override { counts.rows[kNewOrdersTable] += r.size(); }
  void order_lines(std::span<const OrderLineRow> r) override { counts.rows[kOrderLinesTable] += r.size(); }
  void stock(std::span<const StockRow> r) override { counts.rows[kStockTable] += r.size(); }
};

TableCounts population_counts() {
  CountingSink sink;
  generate_load(LoadConfig{}, sink);
  return sink.counts;
}

void load_w1(Backend& backend) {
  uint64_t last_progress = 0;
  backend.load(LoadConfig{}, [&](uint64_t rows) { last_progress = rows; });
  CHECK(last_progress == population_counts().total());
}

// The one W=1 load every case copies: made by the plain kind and closed,
// so the WAL is checkpointed into tpcc.db. Lives until the program ends.
const std::string& master_db() {
  static TempDir dir;
  static const std::string path = [] {
    auto backend = make_sqlite_backend(config_for("sqlite", dir.path()));
    load_w1(*backend);
    backend->close();
    return dir.path() + "/tpcc.db";
  }();
  return path;
}

// A backend of `kind` over a copy of the master load in `dir`.
std::unique_ptr<Backend> copy_of_load(const std::string& kind, const std::string& dir, uint32_t terminals = 1) {
  fs::create_directories(dir);
  fs::copy_file(master_db(), dir + "/tpcc.db");
  return make_sqlite_backend(config_for(kind, dir, terminals));
}

doctest::Contains contains(const std::string& text) { return doctest::Contains(doctest::String(text.c_str())); }

int64_t number(const Row& row, size_t column) { return std::get<int64_t>(row.at(column)); }

// The row whose id is `id`, or null.
const Row* find_row(const State& s, int table, int64_t id) {
  for (const Row& r : s.tables[table].rows) {
    if (number(r, 0) == id) return &r;
  }
  return nullptr;
}

Row& row_of(State& s, int table, int64_t id) {
  for (Row& r : s.tables[table].rows) {
    if (number(r, 0) == id) return r;
  }
  throw std::runtime_error("no row " + std::to_string(id) + " in table " + std::to_string(table));
}

// Exact equality, time columns included.
bool identical(const State& a, const State& b) {
  for (int t = 0; t < kTables; ++t) {
    if (a.tables[t].rows != b.tables[t].rows) return false;
  }
  return true;
}

// Differences as same-state counts them (times ignored), printed.
uint64_t differences(const State& expected, const State& got) {
  return compare_states(expected, got, "expected", "sqlite", stderr, 10);
}

// Puts a new row where its id sorts.
void insert_row(State& s, int table, Row row) {
  auto& rows = s.tables[table].rows;
  auto at = std::lower_bound(rows.begin(), rows.end(), number(row, 0),
                             [](const Row& r, int64_t id) { return number(r, 0) < id; });
  rows.insert(at, std::move(row));
}

void add(Row& row, size_t column, int64_t delta) { row.at(column) = number(row, column) + delta; }

struct Answer {
  Outcome outcome;
  std::vector<int64_t> values;
  bool operator==(const Answer&) const = default;
};

// Runs `per_terminal` generated transactions on each of `terminals`
// terminals, each on its own thread; rethrows the first error. Returns each
// terminal's answers.
std::vector<std::vector<Answer>> run_threads(Backend& backend, uint32_t terminals, int per_terminal, uint64_t seed) {
  std::vector<std::vector<Answer>> answers(terminals);
  std::vector<std::exception_ptr> errors(terminals);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < terminals; ++t) {
    std::unique_ptr<Terminal> terminal = backend.terminal(t);
    threads.emplace_back([&, t, term = std::move(terminal)] {
      try {
        TransactionGenerator gen(RunConfig{1, seed}, t);
        for (int i = 0; i < per_terminal; ++i) {
          TxResult r = term->execute(gen.next());
          answers[t].push_back({r.outcome, r.values});
        }
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return answers;
}

// Runs the given terminals' generated sequences one after another on one
// terminal, on this thread.
std::vector<Answer> run_sequences(Backend& backend, uint32_t terminals, int per_terminal, uint64_t seed) {
  std::unique_ptr<Terminal> terminal = backend.terminal(0);
  std::vector<Answer> answers;
  for (uint32_t t = 0; t < terminals; ++t) {
    TransactionGenerator gen(RunConfig{1, seed}, t);
    for (int i = 0; i < per_terminal; ++i) {
      TxResult r = terminal->execute(gen.next());
      answers.push_back({r.outcome, r.values});
    }
  }
  return answers;
}

TxResult execute_one(Backend& backend, const Transaction& tx) { return backend.terminal(0)->execute(tx); }

// Runs SQL on a closed database file directly (to set up a case).
void edit_file(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(db_path.c_str(), &db) == SQLITE_OK);
  char* error = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  REQUIRE_MESSAGE(rc == SQLITE_OK, message);
}

int64_t page_size_of(const std::string& db_path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(db_path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &stmt, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  int64_t size = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return size;
}

}  // namespace

TEST_SUITE("sqlite-backend") {
  TEST_CASE("a load holds the population, the customers' last orders and the consistency conditions") {
    const TableCounts expected = population_counts();
    CHECK(expected.rows[kItemsTable] == 100'000);
    CHECK(expected.rows[kWarehousesTable] == 1);
    CHECK(expected.rows[kDistrictsTable] == 10);
    CHECK(expected.rows[kCustomersTable] == 30'000);
    CHECK(expected.rows[kHistoryTable] == 30'000);
    CHECK(expected.rows[kOrdersTable] == 30'000);
    CHECK(expected.rows[kNewOrdersTable] == 9'000);
    CHECK(expected.rows[kStockTable] == 100'000);

    TempDir dir;
    auto backend = copy_of_load("sqlite", dir.path());
    CHECK(backend->counts().rows == expected.rows);
    CHECK(backend->consistency(1).empty());

    const State s = backend->dump();
    CHECK(counts_of(s).rows == expected.rows);
    const auto& specs = table_specs();
    for (int t = 0; t < kTables; ++t) {
      int64_t previous = INT64_MIN;
      for (const Row& r : s.tables[t].rows) {
        REQUIRE(r.size() == specs[t].columns.size());
        REQUIRE(number(r, 0) > previous);  // ascending by folded id
        previous = number(r, 0);
      }
    }
    // Customer.last_order is the customer's greatest order key (load_orders).
    std::map<int64_t, int64_t> last_order;
    for (const Row& o : s.tables[kOrdersTable].rows) {
      int64_t& last = last_order[customer_key(number(o, 1), number(o, 2), number(o, 4))];
      last = std::max(last, number(o, 0));
    }
    for (const Row& c : s.tables[kCustomersTable].rows) CHECK(number(c, 10) == last_order[number(c, 0)]);
    // Folded keys recomputed from the composite ones.
    const Row& line = s.tables[kOrderLinesTable].rows.front();
    CHECK(number(line, 0) == line_key(order_key(1, 1, 1), 1));
    CHECK(number(line, 1) == order_key(1, 1, 1));
    CHECK(number(s.tables[kStockTable].rows.back(), 0) == stock_key(1, kItems));
    backend->close();
  }

  TEST_CASE("consistency names each broken condition with its warehouse and district") {
    TempDir dir;
    fs::create_directories(dir.sub("data"));
    fs::copy_file(master_db(), dir.sub("data/tpcc.db"));
    edit_file(dir.sub("data/tpcc.db"),
              "UPDATE district SET ytd = ytd + 1 WHERE w = 1 AND d = 2;"              // 1
              "UPDATE district SET next_order = 4000 WHERE w = 1 AND d = 3;"          // 2
              "DELETE FROM new_order WHERE w = 1 AND d = 4 AND o = 2500;"             // 3
              "DELETE FROM order_line WHERE w = 1 AND d = 5 AND o = 7 AND number = 1;"  // 4
              "DELETE FROM new_order WHERE w = 1 AND d = 6 AND o = 3000;");           // 2, new orders
    auto backend = make_sqlite_backend(config_for("sqlite", dir.sub("data")));
    const std::vector<std::string> problems = backend->consistency(1);
    std::string all;
    for (const std::string& p : problems) all += p + "\n";
    INFO(all);
    REQUIRE(problems.size() == 5);
    CHECK(problems[0].find("warehouse 1, district 3: next order - 1 is 3999") == 0);
    CHECK(problems[1].find("warehouse 1, district 4: new orders 2101 to 3000 have gaps") == 0);
    CHECK(problems[2].find("warehouse 1, district 5: its orders' line counts add up to 29885 but it has 29884") == 0);
    CHECK(problems[3].find("warehouse 1, district 6: the greatest new order is 2999") == 0);
    CHECK(problems[4].find("warehouse 1: its ytd") == 0);
    CHECK(backend->consistency(2).back() == "warehouse 2 does not exist.");
    backend->close();
  }

  TEST_CASE("every kind loads; sqlite-tuned on disk makes 1 KiB pages; a second load is refused") {
    const TableCounts expected = population_counts();
    for (const std::string& kind : {std::string("sqlite-tuned"), std::string("sqlite-grouped")}) {
      CAPTURE(kind);
      TempDir dir;
      const bool on_disk = kind == "sqlite-tuned";
      auto backend = make_sqlite_backend(config_for(kind, dir.sub("data"), 1, on_disk));
      load_w1(*backend);
      CHECK(backend->counts().rows == expected.rows);
      CHECK(backend->consistency(1).empty());
      CHECK_THROWS_WITH_AS(backend->load(LoadConfig{}, [](uint64_t) {}),
                           contains(kind + ": "), std::runtime_error);
      backend->close();
      CHECK(page_size_of(dir.sub("data/tpcc.db")) == (on_disk ? 1024 : 4096));
    }
  }

  TEST_CASE("a copied load takes the page size of the configuration that opens it") {
    TempDir dir;
    fs::create_directories(dir.sub("tuned"));
    fs::copy_file(master_db(), dir.sub("tuned/tpcc.db"));
    {
      auto backend = make_sqlite_backend(config_for("sqlite-tuned", dir.sub("tuned"), 1, true));
      CHECK(backend->counts().rows == population_counts().rows);
      backend->close();
    }
    CHECK(page_size_of(dir.sub("tuned/tpcc.db")) == 1024);
  }

  TEST_CASE("generated transactions from several terminals keep the consistency conditions") {
    constexpr uint32_t kTerminals = 3;
    constexpr int kPerTerminal = 500;
    for (const std::string& kind : kKinds) {
      CAPTURE(kind);
      TempDir dir;
      auto backend = copy_of_load(kind, dir.path(), kTerminals);
      auto answers = run_threads(*backend, kTerminals, kPerTerminal, 11);
      int64_t new_orders = 0, deliveries = 0, payments = 0, order_lines = 0;
      for (uint32_t t = 0; t < kTerminals; ++t) {
        TransactionGenerator gen(RunConfig{1, 11}, t);
        for (const Answer& a : answers[t]) {
          Transaction tx = gen.next();
          if (auto* no = std::get_if<NewOrderTx>(&tx)) {
            CHECK((a.outcome == Outcome::rolled_back) == no->rollback);
            if (!no->rollback) {
              ++new_orders;
              order_lines += static_cast<int64_t>(no->lines.size());
              CHECK(a.values.size() == 3);
            } else {
              CHECK(a.values.empty());
            }
          } else {
            CHECK(a.outcome == Outcome::committed);
          }
          if (std::holds_alternative<PaymentTx>(tx)) ++payments;
          if (std::holds_alternative<DeliveryTx>(tx)) deliveries += a.values.at(0);
        }
      }
      CHECK(backend->consistency(1).empty());
      const TableCounts load = population_counts();
      const TableCounts now = backend->counts();
      CHECK(now.rows[kOrdersTable] == load.rows[kOrdersTable] + static_cast<uint64_t>(new_orders));
      CHECK(now.rows[kOrderLinesTable] == load.rows[kOrderLinesTable] + static_cast<uint64_t>(order_lines));
      CHECK(now.rows[kHistoryTable] == load.rows[kHistoryTable] + static_cast<uint64_t>(payments));
      CHECK(now.rows[kNewOrdersTable] == load.rows[kNewOrdersTable] + static_cast<uint64_t>(new_orders - deliveries));
      CHECK(new_orders > 0);
      CHECK(deliveries > 0);
      backend->close();
    }
  }

  TEST_CASE("a rolled-back New-Order leaves every row as it was") {
    for (const std::string& kind : {std::string("sqlite"), std::string("sqlite-grouped")}) {
      CAPTURE(kind);
      TempDir dir;
      auto backend = copy_of_load(kind, dir.path());
      const State before = backend->dump();
      NewOrderTx tx{1, 4, 17, {{1, 1, 5}, {2, 1, 7}, {kUnusedItem, 1, 1}}, true};
      TxResult r = execute_one(*backend, tx);
      CHECK(r.outcome == Outcome::rolled_back);
      CHECK(r.values.empty());
      const State after = backend->dump();
      CHECK(identical(before, after));
      CHECK(number(*find_row(after, kDistrictsTable, district_key(1, 4)), 5) == 3001);

      // The same order without the unused item commits with number 3001.
      tx.lines.pop_back();
      tx.rollback = false;
      r = execute_one(*backend, tx);
      CHECK(r.outcome == Outcome::committed);
      REQUIRE(r.values.size() == 3);
      CHECK(r.values[0] == 3001);
      CHECK(r.values[1] == 2);
      // A New-Order whose rollback flag disagrees with its items is an error, and is undone.
      tx.rollback = true;
      CHECK_THROWS_WITH_AS(execute_one(*backend, tx), contains(kind + ": "), std::runtime_error);
      CHECK(backend->counts().rows[kOrdersTable] == before.tables[kOrdersTable].rows.size() + 1);
      backend->close();
    }
  }

  TEST_CASE("a New-Order changes exactly the module's rows and answers the module's total") {
    for (const std::string& kind : {std::string("sqlite"), std::string("sqlite-grouped")}) {
      CAPTURE(kind);
      TempDir dir;
      auto backend = copy_of_load(kind, dir.path());
      State expected = backend->dump();
      // One item whose stock falls below 10 (the +91 rule) and one whose stock does not.
      int64_t low_item = 0, high_item = 0;
      for (const Row& stock : expected.tables[kStockTable].rows) {
        if (!low_item && number(stock, 3) < 19) low_item = number(stock, 2);
        if (!high_item && number(stock, 3) > 30) high_item = number(stock, 2);
      }
      REQUIRE(low_item != 0);
      REQUIRE(high_item != 0);
      const NewOrderTx tx{1, 2, 33, {{low_item, 1, 10}, {high_item, 1, 10}}, false};
      const TxResult r = execute_one(*backend, tx);
      REQUIRE(r.values.size() == 3);
      CHECK(r.values[0] == 3001);
      CHECK(r.values[1] == 2);

      const int64_t order = order_key(1, 2, 3001);
      const Row customer = row_of(expected, kCustomersTable, customer_key(1, 2, 33));
      const int64_t w_tax = number(row_of(expected, kWarehousesTable, 1), 1);
      const int64_t d_tax = number(row_of(expected, kDistrictsTable, district_key(1, 2)), 3);
      int64_t total = 0;
      add(row_of(expected, kDistrictsTable, district_key(1, 2)), 5, 1);
      row_of(expected, kCustomersTable, customer_key(1, 2, 33)).at(10) = order;
      insert_row(expected, kOrdersTable, {order, 1, 2, 3001, 33, 0, 0, 2, 1});
      insert_row(expected, kNewOrdersTable, {order});
      int64_t n = 0;
      for (const LineInput& l : tx.lines) {
        ++n;
        Row& stock = row_of(expected, kStockTable, stock_key(1, l.item));
        const int64_t q = number(stock, 3);
        stock.at(3) = q >= l.quantity + 10 ? q - l.quantity : q - l.quantity + 91;
        add(stock, 4, l.quantity);
        add(stock, 5, 1);
        const int64_t amount = l.quantity * number(row_of(expected, kItemsTable, l.item), 1);
        total += amount;
        insert_row(expected, kOrderLinesTable, {line_key(order, n), order, n, l.item, 1, 0, l.quantity, amount});
      }
      const double rates = static_cast<double>((10'000 - number(customer, 4)) * (10'000 + w_tax + d_tax));
      CHECK(r.values[2] == static_cast<int64_t>(std::round(static_cast<double>(total) * rates / 1e8)));
      const State after = backend->dump();
      CHECK(differences(expected, after) == 0);
      backend->close();
    }
  }

  TEST_CASE("a Payment changes exactly the warehouse, district, customer and one new history row") {
    for (const std::string& kind : {std::string("sqlite"), std::string("sqlite-grouped")}) {
      CAPTURE(kind);
      TempDir dir;
      auto backend = copy_of_load(kind, dir.path());
      State expected = backend->dump();
      const PaymentTx tx{1, 2, 1, 3, 7, 12'345};
      const TxResult r = execute_one(*backend, tx);
      const State after = backend->dump();

      add(row_of(expected, kWarehousesTable, 1), 2, 12'345);
      add(row_of(expected, kDistrictsTable, district_key(1, 2)), 4, 12'345);
      Row& customer = row_of(expected, kCustomersTable, customer_key(1, 3, 7));
      add(customer, 6, -12'345);
      add(customer, 7, 12'345);
      add(customer, 8, 1);
      const int64_t id = static_cast<int64_t>(expected.tables[kHistoryTable].rows.size()) + 1;
      insert_row(expected, kHistoryTable, {id, 7, 3, 1, 2, 1, 0, 12'345});
      CHECK(differences(expected, after) == 0);
      const Row* history = find_row(after, kHistoryTable, id);
      REQUIRE(history != nullptr);
      CHECK(number(*history, 6) > kDefaultLoadTimeMs);  // now, in ms

      REQUIRE(r.values.size() == 2);
      CHECK(r.values[0] == number(customer, 6));
      CHECK(r.values[1] == (std::get<std::string>(customer.at(5)) == "BC" ? 1 : 0));
      backend->close();
    }
  }

  TEST_CASE("a Delivery delivers the oldest waiting order, and answers {0, 0} where none waits") {
    for (const std::string& kind : {std::string("sqlite"), std::string("sqlite-grouped")}) {
      CAPTURE(kind);
      TempDir dir;
      fs::create_directories(dir.sub("data"));
      fs::copy_file(master_db(), dir.sub("data/tpcc.db"));
      edit_file(dir.sub("data/tpcc.db"), "DELETE FROM new_order WHERE w = 1 AND d = 5");
      auto backend = make_sqlite_backend(config_for(kind, dir.sub("data")));
      State expected = backend->dump();

      TxResult none = execute_one(*backend, DeliveryTx{1, 5, 3});
      CHECK(none.outcome == Outcome::committed);
      CHECK(none.values == std::vector<int64_t>{0, 0});
      CHECK(identical(expected, backend->dump()));

      TxResult r = execute_one(*backend, DeliveryTx{1, 4, 7});
      CHECK(r.values == std::vector<int64_t>{1, kFirstUndeliveredOrder});
      const int64_t order = order_key(1, 4, kFirstUndeliveredOrder);
      auto& waiting = expected.tables[kNewOrdersTable].rows;
      waiting.erase(std::find(waiting.begin(), waiting.end(), Row{order}));
      Row& o = row_of(expected, kOrdersTable, order);
      o.at(6) = int64_t{7};
      int64_t total = 0;
      for (Row& line : expected.tables[kOrderLinesTable].rows) {
        if (number(line, 1) != order) continue;
        line.at(5) = int64_t{1};  // delivered: compared as zero / non-zero
        total += number(line, 7);
      }
      CHECK(total > 0);
      Row& customer = row_of(expected, kCustomersTable, customer_key(1, 4, number(o, 4)));
      add(customer, 6, total);
      add(customer, 9, 1);
      CHECK(differences(expected, backend->dump()) == 0);
      backend->close();
    }
  }

  TEST_CASE("close and reopen keep every row") {
    for (const std::string& kind : {std::string("sqlite"), std::string("sqlite-grouped")}) {
      CAPTURE(kind);
      TempDir dir;
      State before;
      {
        auto backend = copy_of_load(kind, dir.path(), 2);
        run_threads(*backend, 2, 150, 5);
        before = backend->dump();
        backend->close();
      }
      // TRUNCATE: everything is in tpcc.db.
      std::error_code ec;
      CHECK((!fs::exists(dir.path() + "/tpcc.db-wal") || fs::file_size(dir.path() + "/tpcc.db-wal", ec) == 0));
      auto reopened = make_sqlite_backend(config_for(kind, dir.path()));
      CHECK(identical(before, reopened->dump()));
      CHECK(reopened->consistency(1).empty());
      reopened->close();
    }
  }

  TEST_CASE("one terminal's sequence gives the same answers and rows on every kind") {
    constexpr int kTransactions = 400;
    std::vector<Answer> reference;
    State reference_state;
    for (const std::string& kind : kKinds) {
      CAPTURE(kind);
      TempDir dir;
      auto backend = copy_of_load(kind, dir.path());
      std::vector<Answer> answers = run_sequences(*backend, 1, kTransactions, 23);
      State state = backend->dump();
      backend->close();
      if (kind == kKinds.front()) {
        reference = std::move(answers);
        reference_state = std::move(state);
        continue;
      }
      CHECK(answers == reference);
      CHECK(compare_states(reference_state, state, "sqlite", kind, stderr, 10) == 0);
    }
  }

  TEST_CASE("the grouped writer fed by several threads ends with the plain kind's counts") {
    constexpr uint32_t kTerminals = 4;
    constexpr int kPerTerminal = 200;
    TempDir dir;
    auto plain = copy_of_load("sqlite", dir.sub("plain"));
    run_sequences(*plain, kTerminals, kPerTerminal, 31);
    auto grouped = copy_of_load("sqlite-grouped", dir.sub("grouped"), kTerminals);
    run_threads(*grouped, kTerminals, kPerTerminal, 31);
    CHECK(grouped->counts().rows == plain->counts().rows);
    CHECK(grouped->consistency(1).empty());
    // Sums do not depend on the order: the money and the next order numbers agree.
    const State a = plain->dump(), b = grouped->dump();
    CHECK(a.tables[kWarehousesTable].rows == b.tables[kWarehousesTable].rows);
    CHECK(a.tables[kDistrictsTable].rows == b.tables[kDistrictsTable].rows);
    plain->close();
    grouped->close();
  }

  TEST_CASE("errors are sentences that name the backend") {
    TempDir dir;
    auto backend = copy_of_load("sqlite-tuned", dir.path());
    CHECK_THROWS_WITH_AS(execute_one(*backend, PaymentTx{1, 1, 1, 1, 9999, 100}),
                         contains("sqlite-tuned: "), std::runtime_error);
    CHECK_THROWS_WITH_AS(execute_one(*backend, DeliveryTx{1, 1, 11}), contains("carrier"),
                         std::runtime_error);
    CHECK(backend->consistency(1).empty());  // neither left anything behind
    {
      auto terminal = backend->terminal(0);
      CHECK_THROWS_WITH_AS(backend->close(), contains("terminals are open"), std::runtime_error);
    }
    backend->close();
    CHECK_THROWS_AS(backend->counts(), std::runtime_error);
    CHECK_THROWS_WITH_AS(make_sqlite_backend(config_for("sqlite-fast", dir.sub("x"))), contains("sqlite-fast"),
                         std::runtime_error);
  }
}

}  // namespace aup::tpcc

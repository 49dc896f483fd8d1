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

// Whether row r's first fields are `key`.
bool has_key(const Row& r, const Row& key) { return r.size() >= key.size() && std::equal(key.begin(), key.end(), r.begin()); }

// The row whose key is `key` (its key's fields, in order), or null.
const Row* find_row(const State& s, int table, const Row& key) {
  for (const Row& r : s.tables[table].rows) {
    if (has_key(r, key)) return &r;
  }
  return nullptr;
}

Row& row_of(State& s, int table, const Row& key) {
  for (Row& r : s.tables[table].rows) {
    if (has_key(r, key)) return r;
  }
  throw std::runtime_error("no row with that key in table " + std::to_string(table));
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

// Puts a new row where its key sorts.
void insert_row(State& s, int table, Row row) {
  auto& rows = s.tables[table].rows;
  const TableSpec& spec = table_specs()[static_cast<size_t>(table)];
  auto at = std::lower_bound(rows.begin(), rows.end(), row,
                             [&](const Row& a, const Row& b) { return key_less(spec, a, b); });
  rows.insert(at, std::move(row));
}

void add(Row& row, size_t column, int64_t delta) { row.at(column) = number(row, column) + delta; }

// The position of column `name` in `table` (state.h's table_specs()).
size_t col(int table, std::string_view name) {
  const auto& columns = table_specs()[static_cast<size_t>(table)].columns;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == name) return i;
  }
  throw std::runtime_error("no column " + std::string(name));
}

const std::string& text_of(const Row& row, int table, std::string_view name) {
  return std::get<std::string>(row.at(col(table, name)));
}

// A bad-credit Payment's C_DATA (clause 2.5.2.2): the entry at the left,
// the old text shifted right, cut to 500 characters (all ASCII here).
void shift_data(Row& customer, const std::string& entry) {
  std::string& data = std::get<std::string>(customer.at(col(kCustomersTable, "data")));
  data = (entry + data).substr(0, kMaxCustomerData);
}

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
  TEST_CASE("a load holds the population, in key order, and the consistency conditions") {
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
      const std::vector<Row>& rows = s.tables[t].rows;
      for (size_t i = 0; i < rows.size(); ++i) {
        REQUIRE(rows[i].size() == specs[t].columns.size());
        if (i > 0) REQUIRE(key_less(specs[t], rows[i - 1], rows[i]));  // ascending by key
      }
    }
    // The names read back as loaded: customer 1 of each district is BARBARBAR.
    const Row& first = s.tables[kCustomersTable].rows.front();
    CHECK(first == row_of(const_cast<State&>(s), kCustomersTable, {1, 1, 1}));
    CHECK(text_of(first, kCustomersTable, "last") == last_name(0));
    CHECK(text_of(first, kCustomersTable, "first").size() >= 8);
    const Row& line = s.tables[kOrderLinesTable].rows.front();
    CHECK(has_key(line, {1, 1, 1, 1}));
    CHECK(has_key(s.tables[kStockTable].rows.back(), {1, kItems}));
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
              CHECK(a.values.size() == 4);
            } else {
              CHECK(a.values.empty());
            }
          } else {
            CHECK(a.outcome == Outcome::committed);
          }
          if (std::holds_alternative<PaymentTx>(tx)) ++payments;
          if (std::holds_alternative<DeliveryTx>(tx)) {
            REQUIRE(a.values.size() == 10);
            for (int64_t o : a.values) deliveries += o != 0 ? 1 : 0;
          }
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
      CHECK(number(*find_row(after, kDistrictsTable, {1, 4}), col(kDistrictsTable, "next_order")) == 3001);

      // The same order without the unused item commits with number 3001.
      tx.lines.pop_back();
      tx.rollback = false;
      r = execute_one(*backend, tx);
      CHECK(r.outcome == Outcome::committed);
      REQUIRE(r.values.size() == 4);
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
        if (!low_item && number(stock, 2) < 19) low_item = number(stock, 1);  // quantity, item
        if (!high_item && number(stock, 2) > 30) high_item = number(stock, 1);
      }
      REQUIRE(low_item != 0);
      REQUIRE(high_item != 0);
      const NewOrderTx tx{1, 2, 33, {{low_item, 1, 10}, {high_item, 1, 10}}, false};
      const TxResult r = execute_one(*backend, tx);
      REQUIRE(r.values.size() == 4);
      CHECK(r.values[0] == 3001);
      CHECK(r.values[1] == 2);

      const Row customer = row_of(expected, kCustomersTable, {1, 2, 33});
      const int64_t w_tax = number(row_of(expected, kWarehousesTable, {1}), col(kWarehousesTable, "tax"));
      const int64_t d_tax = number(row_of(expected, kDistrictsTable, {1, 2}), col(kDistrictsTable, "tax"));
      int64_t total = 0, brands = 0;
      add(row_of(expected, kDistrictsTable, {1, 2}), col(kDistrictsTable, "next_order"), 1);
      insert_row(expected, kOrdersTable, {1, 2, 3001, 33, 0, 0, 2, 1});
      insert_row(expected, kNewOrdersTable, {1, 2, 3001});
      int64_t n = 0;
      for (const LineInput& l : tx.lines) {
        ++n;
        Row& stock = row_of(expected, kStockTable, {1, l.item});
        const int64_t q = number(stock, 2);
        stock.at(2) = q >= l.quantity + 10 ? q - l.quantity : q - l.quantity + 91;
        add(stock, col(kStockTable, "ytd"), l.quantity);
        add(stock, col(kStockTable, "order_cnt"), 1);
        const Row& item = row_of(expected, kItemsTable, {l.item});
        const int64_t amount = l.quantity * number(item, col(kItemsTable, "price"));
        total += amount;
        // "B" when both data hold ORIGINAL; the district's S_DIST_02 goes into the line.
        if (text_of(item, kItemsTable, "data").find("ORIGINAL") != std::string::npos &&
            text_of(stock, kStockTable, "data").find("ORIGINAL") != std::string::npos) {
          brands |= int64_t{1} << (n - 1);
        }
        insert_row(expected, kOrderLinesTable,
                   {1, 2, 3001, n, l.item, 1, 0, l.quantity, amount, text_of(stock, kStockTable, "dist_02")});
      }
      CHECK(r.values.at(3) == brands);
      const double rates =
          static_cast<double>((10'000 - number(customer, col(kCustomersTable, "discount"))) * (10'000 + w_tax + d_tax));
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
      // A bad-credit customer, whose C_DATA the Payment changes too: one
      // with C_DATA long enough that the entry pushes its end past 500.
      int64_t c = 0;
      for (const Row& row : expected.tables[kCustomersTable].rows) {
        if (!c && has_key(row, {1, 3}) && text_of(row, kCustomersTable, "credit") == "BC" &&
            text_of(row, kCustomersTable, "data").size() > kMaxCustomerData - 10) {
          c = number(row, 2);
        }
      }
      REQUIRE(c != 0);
      const PaymentTx tx{1, 2, 1, 3, c, 12'345, ""};
      const TxResult r = execute_one(*backend, tx);
      const State after = backend->dump();

      Row& warehouse = row_of(expected, kWarehousesTable, {1});
      add(warehouse, col(kWarehousesTable, "ytd"), 12'345);
      Row& district = row_of(expected, kDistrictsTable, {1, 2});
      add(district, col(kDistrictsTable, "ytd"), 12'345);
      Row& customer = row_of(expected, kCustomersTable, {1, 3, c});
      add(customer, col(kCustomersTable, "balance"), -12'345);
      add(customer, col(kCustomersTable, "ytd_payment"), 12'345);
      add(customer, col(kCustomersTable, "payment_cnt"), 1);
      const std::string old_data = text_of(customer, kCustomersTable, "data");
      shift_data(customer, payment_entry(c, 3, 1, 2, 1, 12'345));
      const std::string& new_data = text_of(customer, kCustomersTable, "data");
      CHECK(new_data.size() == kMaxCustomerData);
      CHECK(new_data.starts_with(std::to_string(c) + " 3 1 2 1 123.45 | " + old_data.substr(0, 10)));
      const int64_t id = static_cast<int64_t>(expected.tables[kHistoryTable].rows.size()) + 1;
      const std::string names =
          text_of(warehouse, kWarehousesTable, "name") + "    " + text_of(district, kDistrictsTable, "name");
      insert_row(expected, kHistoryTable, {id, c, 3, 1, 2, 1, 0, 12'345, names});
      CHECK(differences(expected, after) == 0);
      const Row* history = find_row(after, kHistoryTable, {id});
      REQUIRE(history != nullptr);
      CHECK(number(*history, 6) > kDefaultLoadTimeMs);  // now, in ms

      REQUIRE(r.values.size() == 3);
      CHECK(r.values[0] == c);
      CHECK(r.values[1] == number(customer, col(kCustomersTable, "balance")));
      CHECK(r.values[2] == 1);
      backend->close();
    }
  }

  TEST_CASE("a Delivery delivers each district's oldest waiting order, and 0 where none waits") {
    for (const std::string& kind : {std::string("sqlite"), std::string("sqlite-grouped")}) {
      CAPTURE(kind);
      TempDir dir;
      fs::create_directories(dir.sub("data"));
      fs::copy_file(master_db(), dir.sub("data/tpcc.db"));
      edit_file(dir.sub("data/tpcc.db"), "DELETE FROM new_order WHERE w = 1 AND d = 5");
      auto backend = make_sqlite_backend(config_for(kind, dir.sub("data")));
      State expected = backend->dump();

      TxResult r = execute_one(*backend, DeliveryTx{1, 7});
      CHECK(r.outcome == Outcome::committed);
      std::vector<int64_t> want(10, kFirstUndeliveredOrder);
      want[4] = 0;  // district 5 has no new order: skipped
      CHECK(r.values == want);
      for (int64_t d = 1; d <= 10; ++d) {
        if (d == 5) continue;
        const Row key{1, d, kFirstUndeliveredOrder};
        auto& waiting = expected.tables[kNewOrdersTable].rows;
        waiting.erase(std::find(waiting.begin(), waiting.end(), key));
        Row& o = row_of(expected, kOrdersTable, key);
        o.at(col(kOrdersTable, "carrier")) = int64_t{7};
        int64_t total = 0;
        for (Row& line : expected.tables[kOrderLinesTable].rows) {
          if (!has_key(line, key)) continue;
          line.at(col(kOrderLinesTable, "delivery")) = int64_t{1};  // delivered: compared as zero / non-zero
          total += number(line, col(kOrderLinesTable, "amount"));
        }
        CHECK(total > 0);
        Row& customer = row_of(expected, kCustomersTable, {1, d, number(o, col(kOrdersTable, "customer"))});
        add(customer, col(kCustomersTable, "balance"), total);
        add(customer, col(kCustomersTable, "delivery_cnt"), 1);
      }
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
    CHECK_THROWS_WITH_AS(execute_one(*backend, PaymentTx{1, 1, 1, 1, 9999, 100, ""}),
                         contains("sqlite-tuned: "), std::runtime_error);
    CHECK_THROWS_WITH_AS(execute_one(*backend, PaymentTx{1, 1, 1, 1, 0, 100, "NOBODY"}),
                         contains("has no customer named NOBODY"), std::runtime_error);
    CHECK_THROWS_WITH_AS(execute_one(*backend, DeliveryTx{1, 11}), contains("carrier"), std::runtime_error);
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

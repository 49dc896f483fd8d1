// Tests of bench/tpcc/aup_backend.cpp and its parts: answers read into
// TxResults (aup_answers.cpp), dump rows (aup_dump.cpp), and the backend
// against a real `aup run --listen` on a store in a temporary directory:
// the W=1 load, counts, consistency after the load and after transactions
// from four threads, the rollback, a Payment against the dump, durability
// across a restart, and a socket for a data directory too deep for
// sun_path; and eight terminals sharing two pipelined connections.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "bench/tpcc/aup_answers.h"
#include "bench/tpcc/aup_backend.h"
#include "bench/tpcc/aup_dump.h"
#include "bench/server/server_process.h"
#include "bench/server/temp_dir.h"

#ifndef AUP_EXE
#error "AUP_EXE (the aup executable) must be defined by the build"
#endif
#ifndef AUP_TPCC_MODULE
#error "AUP_TPCC_MODULE (examples/tpcc/tpcc.aup) must be defined by the build"
#endif

namespace aup::tpcc {
namespace {

using bench::server::TempDir;

// ---- helpers ------------------------------------------------------------------

// Where the test's stores go; removed with everything in them.
constexpr const char* kTempParent = "/tmp";

BackendConfig config_for(const std::string& dir) {
  BackendConfig c;
  c.kind = "aup";
  c.dir = dir;
  c.warehouses = 1;
  c.terminals = 4;
  c.aup = AUP_EXE;
  c.module = AUP_TPCC_MODULE;
  c.io_threads = 2;
  return c;
}

// Counts the population's rows per table as generate_load makes them.
class CountingSink final : public RowSink {
 public:
  TableCounts counts;
  void items(std::span<const ItemRow> r) override { counts.rows[0] += r.size(); }
  void warehouses(std::span<const WarehouseRow> r) override { counts.rows[1] += r.size(); }
  void districts(std::span<const DistrictRow> r) override { counts.rows[2] += r.size(); }
  void customers(std::span<const CustomerRow> r) override { counts.rows[3] += r.size(); }
  void history(std::span<const HistoryRow> r) override { counts.rows[4] += r.size(); }
  void orders(std::span<const OrderRow> r) override { counts.rows[5] += r.size(); }
  void new_orders(std::span<const NewOrderRow> r) override { counts.rows[6] += r.size(); }
  void order_lines(std::span<const OrderLineRow> r) override { counts.rows[7] += r.size(); }
  void stock(std::span<const StockRow> r) override { counts.rows[8] += r.size(); }
};

TableCounts population(const LoadConfig& config) {
  CountingSink sink;
  generate_load(config, sink);
  return sink.counts;
}

int table_index(std::string_view name) {
  for (int t = 0; t < kTables; ++t) {
    if (table_specs()[t].name == name) return t;
  }
  FAIL("no table " << name);
  return -1;
}

// Loading W=1 takes seconds, so the cases that need a loaded store share
// one, loaded on first use; the directory goes at exit (after the server,
// which the backend's destructor kills if a case left it running).
struct Loaded {
  TempDir dir{kTempParent, "aup-tpcc-test"};
  LoadConfig load_config;
  std::unique_ptr<Backend> backend;
  std::vector<uint64_t> progress;
  double load_seconds = 0;

  Loaded() {
    backend = make_aup_backend(config_for(dir.path() + "/data"));
    auto start = std::chrono::steady_clock::now();
    backend->load(load_config, [&](uint64_t rows) { progress.push_back(rows); });
    load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE(fmt::format("W=1 loaded in {:.2f} s", load_seconds));
  }
};

Loaded& loaded() {
  static Loaded l;
  return l;
}

// What a run of transactions should have changed, from their results.
struct Expected {
  uint64_t new_orders = 0;  // committed
  uint64_t lines = 0;       // of the committed New-Orders
  uint64_t payments = 0;
  uint64_t deliveries = 0;  // that delivered an order
};

// Runs `per_terminal` transactions on each of `terminals` threads; returns
// what they should have changed. Rethrows a thread's error.
Expected run_terminals(Backend& backend, uint32_t terminals, uint64_t per_terminal, uint64_t seed) {
  std::vector<Expected> each(terminals);
  std::vector<std::exception_ptr> errors(terminals);
  std::vector<std::unique_ptr<Terminal>> ts;
  for (uint32_t t = 0; t < terminals; ++t) ts.push_back(backend.terminal(t));
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < terminals; ++t) {
    threads.emplace_back([&, t] {
      try {
        TransactionGenerator gen(RunConfig{1, seed}, t);
        for (uint64_t i = 0; i < per_terminal; ++i) {
          Transaction tx = gen.next();
          TxResult r = ts[t]->execute(tx);
          if (const auto* no = std::get_if<NewOrderTx>(&tx)) {
            if (r.outcome == Outcome::committed) {
              ++each[t].new_orders;
              each[t].lines += no->lines.size();
            }
          } else if (std::holds_alternative<PaymentTx>(tx)) {
            ++each[t].payments;
          } else if (std::holds_alternative<DeliveryTx>(tx)) {
            for (int64_t o : r.values) each[t].deliveries += o != 0 ? 1 : 0;
          }
        }
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  Expected sum;
  for (uint32_t t = 0; t < terminals; ++t) {
    if (errors[t]) std::rethrow_exception(errors[t]);
    sum.new_orders += each[t].new_orders;
    sum.lines += each[t].lines;
    sum.payments += each[t].payments;
    sum.deliveries += each[t].deliveries;
  }
  return sum;
}

// The sockets this process has open (/proc/self/fd).
size_t own_sockets() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    std::filesystem::path target = std::filesystem::read_symlink(e.path(), ec);
    if (!ec && target.string().rfind("socket:", 0) == 0) ++n;
  }
  return n;
}

std::string exception_text(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// ---- answers, without a server -------------------------------------------------

TEST_SUITE("aup answers") {
  TEST_CASE("each transaction's answer becomes the values backend.h documents") {
    JsonLine a;
    a.parse(R"({"id":7,"ok":true,"result":{"order":3001,"lines":2,"total":12345,"brands":"GB"}})", "t");
    NewOrderTx no{1, 2, 3, {{1, 1, 5}, {2, 1, 5}}, false};
    CHECK(tx_result(no, 7, a).values == std::vector<int64_t>{3001, 2, 12345, 2});
    a.parse(R"({"id":7,"ok":true,"result":{"order":3001,"lines":2,"total":12345,"brands":"G"}})", "t");
    CHECK_THROWS_WITH_AS(tx_result(no, 7, a), doctest::Contains("1 brands for 2 lines"), std::runtime_error);

    a.parse(R"({"id":8,"ok":true,"result":{"c":17,"balance":-1000,"credit":"BC"}})", "t");
    TxResult pay = tx_result(PaymentTx{1, 1, 1, 1, 0, 1000, "BARBARBAR"}, 8, a);
    CHECK(pay.outcome == Outcome::committed);
    CHECK(pay.values == std::vector<int64_t>{17, -1000, 1});

    a.parse(R"({"id":9,"ok":true,"result":{"c":1,"balance":5,"order":12,"entry":1700000000000,"carrier":0,)"
            R"("lines":[{"w":1,"d":1,"o":12,"number":1,"item":44,"supply":1,"delivery":0,"quantity":5,"amount":700},)"
            R"({"w":1,"d":1,"o":12,"number":2,"item":45,"supply":2,"delivery":1700000000001,)"
            R"("quantity":6,"amount":800}]}})",
            "t");
    CHECK(tx_result(OrderStatusTx{1, 1, 1, ""}, 9, a).values ==
          std::vector<int64_t>{1, 5, 12, 0, 44, 1, 5, 700, 0, 45, 2, 6, 800, 1});

    a.parse(R"({"id":10,"ok":true,"result":{"orders":[2101,0,2101,2102,2101,2101,2101,2101,2101,2101]}})", "t");
    CHECK(tx_result(DeliveryTx{1, 3}, 10, a).values ==
          std::vector<int64_t>{2101, 0, 2101, 2102, 2101, 2101, 2101, 2101, 2101, 2101});
    a.parse(R"({"id":11,"ok":true,"result":{"orders":[0,0]}})", "t");
    CHECK_THROWS_WITH_AS(tx_result(DeliveryTx{1, 3}, 11, a), doctest::Contains("2 districts delivered, not 10"),
                         std::runtime_error);

    a.parse(R"({"id":12,"ok":true,"result":{"low_stock":4}})", "t");
    CHECK(tx_result(StockLevelTx{1, 1, 15}, 12, a).values == std::vector<int64_t>{4});
  }

  TEST_CASE("the rollback is `failed` with the module's message, and only for a flagged New-Order") {
    const std::string rollback =
        R"j({"id":3,"ok":false,"error":{"code":"failed","message":"item number is not valid (tpcc.aup:180:36)"}})j";
    NewOrderTx flagged{1, 1, 1, {{1, 1, 1}, {kUnusedItem, 1, 1}}, true};
    NewOrderTx plain = flagged;
    plain.rollback = false;
    JsonLine a;
    a.parse(rollback, "new_order");
    TxResult r = tx_result(flagged, 3, a);
    CHECK(r.outcome == Outcome::rolled_back);
    CHECK(r.values.empty());
    // Unflagged, the same answer is an error that names aup and quotes it.
    std::string why = exception_text([&] { tx_result(plain, 3, a); });
    CHECK(why.find("aup: new_order: not ok") == 0);
    CHECK(why.find("item number is not valid") != std::string::npos);
    // Flagged, any other failure or a commit is an error.
    a.parse(R"({"id":3,"ok":false,"error":{"code":"not_found","message":"`stock` has no key 1"}})", "new_order");
    CHECK_THROWS_WITH_AS(tx_result(flagged, 3, a), doctest::Contains("expected the rollback"), std::runtime_error);
    a.parse(R"({"id":3,"ok":true,"result":{"order":1,"lines":2,"total":3}})", "new_order");
    CHECK_THROWS_WITH_AS(tx_result(flagged, 3, a), doctest::Contains("committed instead of rolling back"),
                         std::runtime_error);
  }

  TEST_CASE("a wrong answer throws naming aup and quoting it") {
    JsonLine a;
    StockLevelTx sl{1, 1, 15};
    a.parse(R"({"id":1,"ok":true,"result":{"low":4}})", "stock_level");
    CHECK_THROWS_WITH_AS(tx_result(sl, 1, a),
                         R"(aup: stock_level: no `low_stock`: {"id":1,"ok":true,"result":{"low":4}})",
                         std::runtime_error);
    a.parse(R"({"id":1,"ok":true,"result":{"low_stock":4.5}})", "stock_level");
    CHECK_THROWS_WITH_AS(tx_result(sl, 1, a), doctest::Contains("`4.5` is not a whole number"), std::runtime_error);
    a.parse(R"({"id":2,"ok":true,"result":{"low_stock":4}})", "stock_level");
    CHECK_THROWS_WITH_AS(tx_result(sl, 1, a), doctest::Contains("expected the answer to request 1"),
                         std::runtime_error);
    a.parse(R"({"id":1,"ok":true,"result":{"balance":1,"credit":"XX"}})", "payment");
    CHECK_THROWS_WITH_AS(tx_result(PaymentTx{1, 1, 1, 1, 1, 1, ""}, 1, a), doctest::Contains("neither GC nor BC"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(a.parse("{\"id\":1,", "payment"), doctest::Contains("aup: payment: not JSON"),
                         std::runtime_error);
  }

  TEST_CASE("dump rows: columns in order, whole numbers, credit as text") {
    const TableSpec& customers = table_specs()[table_index("customers")];
    DumpRowReader reader(customers);
    std::string line = R"({"w":1,"d":2,"c":3,"first":"Xy7","middle":"OE","last":"BARBARBAR",)"
                       R"("street_1":"s1","street_2":"s2","city":"c","state":"ST","zip":"123411111",)"
                       R"("phone":"0123456789012345","since":1700000000000,"credit":"BC","credit_lim":5000000,)"
                       R"("discount":1234,"balance":-1000,"ytd_payment":1000,"payment_cnt":1,"delivery_cnt":0)";
    Row row = reader.read(line + R"(,"data":"p"})");
    REQUIRE(row.size() == customers.columns.size());
    CHECK(std::get<int64_t>(row[2]) == 3);
    CHECK(std::get<std::string>(row[3]) == "Xy7");
    CHECK(std::get<std::string>(row[5]) == "BARBARBAR");
    CHECK(std::get<std::string>(row[13]) == "BC");
    CHECK(std::get<int64_t>(row[16]) == -1000);
    CHECK(std::get<std::string>(row.back()) == "p");
    const TableSpec& items = table_specs()[table_index("items")];
    DumpRowReader item_reader(items);
    Row item = item_reader.read(R"({"id":1,"image":2,"name":"n","price":5,"data":"xORIGINALx"})");
    CHECK(item.back() == Value{std::string("xORIGINALx")});
    CHECK_THROWS_WITH_AS(item_reader.read(R"({"id":1,"price":5,"image":0,"name":"n","data":"d"})"),
                         doctest::Contains("expected `image`"), std::runtime_error);
    CHECK_THROWS_WITH_AS(item_reader.read(R"({"id":1,"image":5})"), doctest::Contains("2 fields, the table has 5"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(item_reader.read(R"({"id":1,"image":5.5,"name":"n","price":5,"data":"d"})"),
                         doctest::Contains("not a whole number"), std::runtime_error);
    // The module's rows before ORIGINAL was found in the text: a field too many.
    CHECK_THROWS_WITH_AS(item_reader.read(R"({"id":1,"image":5,"name":"n","price":5,"data":"d","original":false})"),
                         doctest::Contains("6 fields, the table has 5"), std::runtime_error);
  }
}

// ---- the backend against aup run --listen ------------------------------------------

TEST_SUITE("aup backend") {
  TEST_CASE("load W=1: the counts are the population's and consistency holds") {
    Loaded& l = loaded();
    TableCounts expected = population(l.load_config);
    CHECK(expected.rows[table_index("items")] == 100'000);
    CHECK(expected.rows[table_index("warehouses")] == 1);
    CHECK(expected.rows[table_index("districts")] == 10);
    CHECK(expected.rows[table_index("customers")] == 30'000);
    CHECK(expected.rows[table_index("history")] == 30'000);
    CHECK(expected.rows[table_index("orders")] == 30'000);
    CHECK(expected.rows[table_index("new_orders")] == 9'000);
    CHECK(expected.rows[table_index("order_lines")] > 270'000);  // 5..15 lines, 10 on average
    CHECK(expected.rows[table_index("order_lines")] < 330'000);
    CHECK(expected.rows[table_index("stock")] == 100'000);
    CHECK(l.backend->counts().rows == expected.rows);
    CHECK(l.backend->consistency(1).empty());
    // Progress now and then, ending with every row.
    REQUIRE(l.progress.size() > 2);
    CHECK(l.progress.back() == expected.total());
    CHECK(std::is_sorted(l.progress.begin(), l.progress.end()));
  }

  TEST_CASE("transactions from four terminals change the counts as they answered, and keep consistency") {
    Backend& b = *loaded().backend;
    TableCounts before = b.counts();
    Expected e = run_terminals(b, 4, 750, 20240611);
    TableCounts after = b.counts();
    CHECK(e.new_orders > 1000);
    CHECK(after.rows[table_index("orders")] == before.rows[table_index("orders")] + e.new_orders);
    CHECK(after.rows[table_index("order_lines")] == before.rows[table_index("order_lines")] + e.lines);
    CHECK(after.rows[table_index("history")] == before.rows[table_index("history")] + e.payments);
    const int new_orders = table_index("new_orders");
    CHECK(after.rows[new_orders] + e.deliveries == before.rows[new_orders] + e.new_orders);
    CHECK(after.rows[table_index("items")] == before.rows[table_index("items")]);
    CHECK(b.consistency(1).empty());
    ProcessFigures f = b.figures();
    CHECK(f.user_ns > 0);
    CHECK(f.system_ns > 0);  // sockets and the load's writes
    CHECK(f.resident_bytes > 0);
  }

  TEST_CASE("eight terminals over two shared connections: two sockets, counts as they answered, consistency") {
    Loaded& l = loaded();
    l.backend->close();  // the shared store's server; it starts again when next needed
    BackendConfig c = config_for(l.dir.path() + "/data");
    c.terminals = 8;
    c.connections = 2;
    std::unique_ptr<Backend> b = make_aup_backend(c);
    TableCounts before = b->counts();
    {
      size_t sockets = own_sockets();
      std::vector<std::unique_ptr<Terminal>> ts;
      for (uint32_t t = 0; t < 8; ++t) ts.push_back(b->terminal(t));
      CHECK(own_sockets() == sockets + 2);
      // A rollback comes back as such on a shared connection too.
      NewOrderTx flagged{1, 1, 1, {{1, 1, 5}, {kUnusedItem, 1, 1}}, true};
      CHECK(ts[5]->execute(flagged).outcome == Outcome::rolled_back);
    }
    Expected e = run_terminals(*b, 8, 250, 20240612);
    TableCounts after = b->counts();
    CHECK(e.new_orders > 500);
    CHECK(after.rows[table_index("orders")] == before.rows[table_index("orders")] + e.new_orders);
    CHECK(after.rows[table_index("order_lines")] == before.rows[table_index("order_lines")] + e.lines);
    CHECK(after.rows[table_index("history")] == before.rows[table_index("history")] + e.payments);
    const int new_orders = table_index("new_orders");
    CHECK(after.rows[new_orders] + e.deliveries == before.rows[new_orders] + e.new_orders);
    CHECK(b->consistency(1).empty());
    b->close();
  }

  TEST_CASE("connections: 1 to the terminals for aup, none for SQLite, each refused with a sentence") {
    TempDir dir(kTempParent, "aup-tpcc-test");
    BackendConfig c = config_for(dir.path() + "/data");  // 4 terminals
    for (uint32_t n : {0U, 1U, 3U, 4U}) {
      c.connections = n;
      CHECK_NOTHROW(check_connections(c));
    }
    c.connections = 5;
    CHECK_THROWS_WITH_AS(make_backend(c), "5 connections for 4 terminals: --connections takes 1 to the terminals",
                         std::invalid_argument);
    c.kind = "sqlite-grouped";
    c.connections = 2;
    CHECK_THROWS_WITH_AS(make_backend(c),
                         doctest::Contains("sqlite-grouped takes no --connections: SQLite runs in this process"),
                         std::invalid_argument);
    c.connections = 0;
    CHECK_NOTHROW(check_connections(c));
    CHECK(server_connections("aup", 64, 0) == 64);
    CHECK(server_connections("aup", 64, 8) == 8);
    CHECK(server_connections("sqlite", 4, 0) == 0);
  }

  TEST_CASE("a rollback New-Order answers rolled_back and changes no counts") {
    Backend& b = *loaded().backend;
    std::unique_ptr<Terminal> t = b.terminal(0);
    TableCounts before = b.counts();
    NewOrderTx flagged{1, 1, 1, {{1, 1, 5}, {2, 1, 5}, {kUnusedItem, 1, 1}}, true};
    TxResult r = t->execute(flagged);
    CHECK(r.outcome == Outcome::rolled_back);
    CHECK(r.values.empty());
    CHECK(b.counts().rows == before.rows);
    // Unflagged, the same order is an error naming aup; the terminal goes on.
    NewOrderTx unflagged = flagged;
    unflagged.rollback = false;
    CHECK_THROWS_WITH_AS(t->execute(unflagged), doctest::Contains("aup: new_order: not ok"), std::runtime_error);
    CHECK(b.counts().rows == before.rows);
    TxResult s = t->execute(StockLevelTx{1, 1, 15});
    CHECK(s.outcome == Outcome::committed);
    CHECK(s.values.size() == 1);
  }

  TEST_CASE("a Payment's answer matches the dump; the dump is in key order, column for column") {
    Backend& b = *loaded().backend;
    const int64_t c = 7;
    TxResult pay = b.terminal(0)->execute(PaymentTx{1, 2, 1, 2, c, 12'345, ""});
    REQUIRE(pay.values.size() == 3);
    CHECK(pay.values[0] == c);
    TableCounts counts = b.counts();
    State s = b.dump();
    CHECK(counts_of(s).rows == counts.rows);
    for (int t = 0; t < kTables; ++t) {
      const TableSpec& spec = table_specs()[t];
      CAPTURE(spec.name);
      const std::vector<Row>& rows = s.tables[t].rows;
      bool ordered = true, shaped = true;
      for (size_t i = 0; i < rows.size(); ++i) {
        shaped = shaped && rows[i].size() == spec.columns.size();
        ordered = ordered && (i == 0 || key_less(spec, rows[i - 1], rows[i]));
      }
      CHECK(shaped);
      CHECK(ordered);
    }
    const std::vector<Row>& customers = s.tables[table_index("customers")].rows;
    auto row = std::find_if(customers.begin(), customers.end(),
                            [&](const Row& r) { return r[0] == Value{1} && r[1] == Value{2} && r[2] == Value{c}; });
    REQUIRE(row != customers.end());
    const TableSpec& spec = table_specs()[table_index("customers")];
    auto column = [&](std::string_view name) {
      size_t i = 0;
      while (i < spec.columns.size() && spec.columns[i].name != name) ++i;
      return i;
    };
    CHECK(std::get<int64_t>(row->at(column("balance"))) == pay.values[1]);
    CHECK(std::get<std::string>(row->at(column("credit"))) == (pay.values[2] ? "BC" : "GC"));
    // After dump() the server starts again when it is needed.
    CHECK(b.counts().rows == counts.rows);
    // By name: customer 1 is the only BARBARBAR among 1..1000; with the
    // NURand names of 1001..3000 the one found has that name.
    TxResult named = b.terminal(0)->execute(PaymentTx{1, 2, 1, 2, 0, 100, last_name(0)});
    REQUIRE(named.values.size() == 3);
    const State dumped = b.dump();
    const std::vector<Row>& after = dumped.tables[table_index("customers")].rows;
    auto found = std::find_if(after.begin(), after.end(), [&](const Row& r) {
      return r[0] == Value{1} && r[1] == Value{2} && r[2] == Value{named.values[0]};
    });
    REQUIRE(found != after.end());
    CHECK(std::get<std::string>(found->at(column("last"))) == last_name(0));
    // A bad-credit customer's Payment puts its entry at the left of C_DATA
    // and cuts the whole to 500 characters (clause 2.5.2.2): one whose
    // C_DATA is long enough that its end falls off.
    auto bad = std::find_if(after.begin(), after.end(), [&](const Row& r) {
      return r[0] == Value{1} && r[1] == Value{3} && std::get<std::string>(r.at(column("credit"))) == "BC" &&
             std::get<std::string>(r.at(column("data"))).size() > kMaxCustomerData - 10;
    });
    REQUIRE(bad != after.end());
    const int64_t bad_c = std::get<int64_t>(bad->at(2));
    const std::string old_data = std::get<std::string>(bad->at(column("data")));
    TxResult paid = b.terminal(0)->execute(PaymentTx{1, 2, 1, 3, bad_c, 12'345, ""});
    CHECK(paid.values.at(2) == 1);
    const State last = b.dump();
    const std::vector<Row>& now_rows = last.tables[table_index("customers")].rows;
    auto shifted = std::find_if(now_rows.begin(), now_rows.end(), [&](const Row& r) {
      return r[0] == Value{1} && r[1] == Value{3} && r[2] == Value{bad_c};
    });
    REQUIRE(shifted != now_rows.end());
    const std::string& new_data = std::get<std::string>(shifted->at(column("data")));
    CHECK(new_data.size() == kMaxCustomerData);
    CHECK(new_data == (payment_entry(bad_c, 3, 1, 2, 1, 12'345) + old_data).substr(0, kMaxCustomerData));
  }

  TEST_CASE("close, then a new backend on the same directory sees the same rows (durable)") {
    Loaded& l = loaded();
    TableCounts counts = l.backend->counts();
    l.backend->close();
    l.backend->close();  // a second close does nothing
    l.backend = make_aup_backend(config_for(l.dir.path() + "/data"));
    CHECK(l.backend->counts().rows == counts.rows);
    CHECK(l.backend->consistency(1).empty());
    l.backend->close();
  }
}

TEST_SUITE("aup server") {
  TEST_CASE("a data directory too deep for sun_path gets its socket elsewhere; an empty store has no rows") {
    TempDir dir(kTempParent, "aup-tpcc-test");
    std::string deep = dir.path() + "/" + std::string(120, 'd');
    std::unique_ptr<Backend> b = make_aup_backend(config_for(deep));
    CHECK(b->counts().total() == 0);
    b->close();
    CHECK(std::filesystem::exists(deep + "/store"));
    CHECK_FALSE(std::filesystem::exists(deep + "/aup.sock"));
  }

  TEST_CASE("ServerConfig::cpus pins the server with taskset; pid() is the server's") {
    TempDir dir(kTempParent, "aup-tpcc-test");
    bench::server::ServerConfig c;
    c.aup = AUP_EXE;
    c.module = AUP_TPCC_MODULE;
    c.socket = dir.path() + "/aup.sock";
    c.cpus = "0";
    bench::server::ServerProcess server(c);
    std::ifstream status("/proc/" + std::to_string(server.pid()) + "/status");
    std::string line, cpus, name;
    while (std::getline(status, line)) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0) cpus = line.substr(line.find_first_not_of(" \t", 18));
      if (line.rfind("Name:", 0) == 0) name = line.substr(line.find_first_not_of(" \t", 5));
    }
    CHECK(cpus == "0");
    CHECK(name == "aup");
    server.stop();
  }

  TEST_CASE("a server that cannot start is an error with what it said") {
    TempDir dir(kTempParent, "aup-tpcc-test");
    BackendConfig c = config_for(dir.path() + "/data");
    c.module = dir.path() + "/missing.aup";
    std::unique_ptr<Backend> b = make_aup_backend(c);
    CHECK_THROWS_WITH_AS(b->counts(), doctest::Contains("before it listened"), std::runtime_error);
  }
}

}  // namespace
}  // namespace aup::tpcc

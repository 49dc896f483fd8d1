#include "bench/tpcc/sqlite_tpcc.h"

#include <array>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <variant>

namespace aup::tpcc {
namespace {

// ---- the statements -------------------------------------------------------------

// Every cached statement, once: X(name, SQL). The enum gives each its slot
// in a connection's cache. Numbered parameters (?N) take the N-th bound
// argument.
#define AUP_TPCC_SQL(X)                                                                                          \
  /* transaction control */                                                                                      \
  X(begin_deferred, "BEGIN")                                                                                     \
  X(begin_immediate, "BEGIN IMMEDIATE")                                                                          \
  X(commit, "COMMIT")                                                                                            \
  X(rollback, "ROLLBACK")                                                                                        \
  X(savepoint, "SAVEPOINT tx")                                                                                   \
  X(release, "RELEASE tx")                                                                                       \
  X(rollback_to, "ROLLBACK TO tx")                                                                               \
  /* load */                                                                                                     \
  X(insert_item, "INSERT INTO item(id, image, name, price, data) VALUES (?, ?, ?, ?, ?)")                          \
  X(insert_warehouse,                                                                                              \
    "INSERT INTO warehouse(id, name, street_1, street_2, city, state, zip, tax, ytd) "                             \
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")                                                                          \
  X(insert_district,                                                                                               \
    "INSERT INTO district(w, d, name, street_1, street_2, city, state, zip, tax, ytd, next_order) "                \
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")                                                                    \
  X(insert_customer,                                                                                               \
    "INSERT INTO customer(w, d, c, first, middle, last, street_1, street_2, city, state, zip, phone, since, "      \
    "credit, credit_lim, discount, balance, ytd_payment, payment_cnt, delivery_cnt, data) "                        \
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")                                      \
  X(insert_history,                                                                                                \
    "INSERT INTO history(id, c, c_d, c_w, d, w, date, amount, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")           \
  X(insert_order,                                                                                                \
    "INSERT INTO orders(w, d, o, customer, entry, carrier, lines, all_local) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")    \
  X(insert_new_order, "INSERT INTO new_order(w, d, o) VALUES (?, ?, ?)")                                         \
  X(insert_order_line,                                                                                             \
    "INSERT INTO order_line(w, d, o, number, item, supply, delivery, quantity, amount, dist_info) "                \
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")                                                                       \
  X(insert_stock,                                                                                                  \
    "INSERT INTO stock(w, item, quantity, dist_01, dist_02, dist_03, dist_04, dist_05, dist_06, dist_07, "         \
    "dist_08, dist_09, dist_10, ytd, order_cnt, remote_cnt, data) "                                                \
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")                                                  \
  /* New-Order */                                                                                                \
  X(warehouse_tax, "SELECT tax FROM warehouse WHERE id = ?")                                                     \
  X(take_order_number,                                                                                           \
    "UPDATE district SET next_order = next_order + 1 WHERE w = ? AND d = ? RETURNING tax, next_order - 1")       \
  X(customer_discount, "SELECT discount FROM customer WHERE w = ? AND d = ? AND c = ?")                         \
  X(item_of_line, "SELECT price, data FROM item WHERE id = ?")                                                     \
  /* ?5 is the order's district: its S_DIST_xx becomes the line's dist_info */                                     \
  X(take_stock,                                                                                                    \
    "UPDATE stock SET quantity = CASE WHEN quantity >= ?1 + 10 THEN quantity - ?1 ELSE quantity - ?1 + 91 END, "   \
    "ytd = ytd + ?1, order_cnt = order_cnt + 1, remote_cnt = remote_cnt + ?2 WHERE w = ?3 AND item = ?4 "          \
    "RETURNING data, CASE ?5 WHEN 1 THEN dist_01 WHEN 2 THEN dist_02 WHEN 3 THEN dist_03 WHEN 4 THEN dist_04 "     \
    "WHEN 5 THEN dist_05 WHEN 6 THEN dist_06 WHEN 7 THEN dist_07 WHEN 8 THEN dist_08 WHEN 9 THEN dist_09 "         \
    "ELSE dist_10 END")                                                                                            \
  /* Payment */                                                                                                  \
  X(pay_warehouse, "UPDATE warehouse SET ytd = ytd + ?1 WHERE id = ?2 RETURNING name")                             \
  X(pay_district, "UPDATE district SET ytd = ytd + ?1 WHERE w = ?2 AND d = ?3 RETURNING name")                     \
  /* clause 2.5.2.2: the entry at the left, C_DATA cut to 500 characters */                                        \
  X(shift_customer_data,                                                                                           \
    "UPDATE customer SET data = substr(?4 || data, 1, 500) WHERE w = ?1 AND d = ?2 AND c = ?3")                    \
  X(pay_customer,                                                                                                \
    "UPDATE customer SET balance = balance - ?1, ytd_payment = ytd_payment + ?1, payment_cnt = payment_cnt + 1 " \
    "WHERE w = ?2 AND d = ?3 AND c = ?4 RETURNING balance, credit")                                              \
  X(next_history, "SELECT coalesce(max(id), 0) + 1 FROM history")                                                \
  /* a customer by last name (clause 2.5.2.2), through index customer_name */                                    \
  X(count_named, "SELECT count(*) FROM customer WHERE w = ? AND d = ? AND last = ?")                            \
  X(named_at, "SELECT c FROM customer WHERE w = ? AND d = ? AND last = ? ORDER BY first, c LIMIT 1 OFFSET ?")     \
  /* Order-Status */                                                                                             \
  X(customer_balance, "SELECT balance FROM customer WHERE w = ? AND d = ? AND c = ?")                           \
  X(latest_order,                                                                                                \
    "SELECT o, carrier FROM orders WHERE w = ? AND d = ? AND customer = ? ORDER BY o DESC LIMIT 1")              \
  X(lines_of_order,                                                                                              \
    "SELECT item, supply, quantity, amount, delivery FROM order_line WHERE w = ? AND d = ? AND o = ? "           \
    "ORDER BY number")                                                                                           \
  /* Delivery */                                                                                                 \
  X(oldest_new_order, "SELECT o FROM new_order WHERE w = ? AND d = ? ORDER BY o LIMIT 1")                        \
  X(delete_new_order, "DELETE FROM new_order WHERE w = ? AND d = ? AND o = ?")                                   \
  X(set_carrier, "UPDATE orders SET carrier = ?4 WHERE w = ?1 AND d = ?2 AND o = ?3 RETURNING customer")         \
  X(deliver_lines, "UPDATE order_line SET delivery = ?4 WHERE w = ?1 AND d = ?2 AND o = ?3 RETURNING amount")    \
  X(credit_delivery,                                                                                             \
    "UPDATE customer SET balance = balance + ?4, delivery_cnt = delivery_cnt + 1 "                               \
    "WHERE w = ?1 AND d = ?2 AND c = ?3")                                                                        \
  /* Stock-Level: the items of orders next-20 <= o < next, each once (IN) */                                     \
  X(next_order_of, "SELECT next_order FROM district WHERE w = ? AND d = ?")                                      \
  X(low_stock,                                                                                                   \
    "SELECT count(*) FROM stock WHERE w = ?1 AND quantity < ?4 AND item IN "                                     \
    "(SELECT item FROM order_line WHERE w = ?1 AND d = ?2 AND o >= ?3 - 20 AND o < ?3)")                         \
  /* consistency */                                                                                              \
  X(warehouse_ytd, "SELECT ytd FROM warehouse WHERE id = ?")                                                     \
  X(district_figures, "SELECT ytd, next_order FROM district WHERE w = ? AND d = ?")                              \
  X(order_figures, "SELECT count(*), max(o), coalesce(sum(lines), 0) FROM orders WHERE w = ? AND d = ?")         \
  X(new_order_figures, "SELECT count(*), min(o), max(o) FROM new_order WHERE w = ? AND d = ?")                   \
  X(order_line_count, "SELECT count(*) FROM order_line WHERE w = ? AND d = ?")

enum class Sql : size_t {
#define AUP_TPCC_SQL_NAME(name, text) name,
  AUP_TPCC_SQL(AUP_TPCC_SQL_NAME)
#undef AUP_TPCC_SQL_NAME
};

constexpr const char* kSqlTexts[] = {
#define AUP_TPCC_SQL_TEXT(name, text) text,
    AUP_TPCC_SQL(AUP_TPCC_SQL_TEXT)
#undef AUP_TPCC_SQL_TEXT
};

Statement use(Db& db, Sql sql) {
  const auto slot = static_cast<size_t>(sql);
  return db.cached(slot, kSqlTexts[slot]);
}

constexpr const char* kSchema = R"sql(
CREATE TABLE item(
  id INTEGER PRIMARY KEY, image INTEGER NOT NULL, name TEXT NOT NULL, price INTEGER NOT NULL,
  data TEXT NOT NULL) WITHOUT ROWID, STRICT;
CREATE TABLE warehouse(
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, street_1 TEXT NOT NULL, street_2 TEXT NOT NULL,
  city TEXT NOT NULL, state TEXT NOT NULL, zip TEXT NOT NULL, tax INTEGER NOT NULL,
  ytd INTEGER NOT NULL) WITHOUT ROWID, STRICT;
CREATE TABLE district(
  w INTEGER, d INTEGER, name TEXT NOT NULL, street_1 TEXT NOT NULL, street_2 TEXT NOT NULL,
  city TEXT NOT NULL, state TEXT NOT NULL, zip TEXT NOT NULL, tax INTEGER NOT NULL, ytd INTEGER NOT NULL,
  next_order INTEGER NOT NULL,
  PRIMARY KEY(w, d)) WITHOUT ROWID, STRICT;
CREATE TABLE customer(
  w INTEGER, d INTEGER, c INTEGER, first TEXT NOT NULL, middle TEXT NOT NULL, last TEXT NOT NULL,
  street_1 TEXT NOT NULL, street_2 TEXT NOT NULL, city TEXT NOT NULL, state TEXT NOT NULL, zip TEXT NOT NULL,
  phone TEXT NOT NULL, since INTEGER NOT NULL, credit TEXT NOT NULL, credit_lim INTEGER NOT NULL,
  discount INTEGER NOT NULL, balance INTEGER NOT NULL, ytd_payment INTEGER NOT NULL,
  payment_cnt INTEGER NOT NULL, delivery_cnt INTEGER NOT NULL, data TEXT NOT NULL,
  PRIMARY KEY(w, d, c)) WITHOUT ROWID, STRICT;
CREATE INDEX customer_name ON customer(w, d, last, first);
CREATE TABLE history(
  id INTEGER PRIMARY KEY, c INTEGER NOT NULL, c_d INTEGER NOT NULL, c_w INTEGER NOT NULL,
  d INTEGER NOT NULL, w INTEGER NOT NULL, date INTEGER NOT NULL, amount INTEGER NOT NULL,
  data TEXT NOT NULL) WITHOUT ROWID, STRICT;
CREATE TABLE orders(
  w INTEGER, d INTEGER, o INTEGER, customer INTEGER NOT NULL, entry INTEGER NOT NULL,
  carrier INTEGER NOT NULL, lines INTEGER NOT NULL, all_local INTEGER NOT NULL,
  PRIMARY KEY(w, d, o)) WITHOUT ROWID, STRICT;
CREATE INDEX orders_customer ON orders(w, d, customer, o);
CREATE TABLE new_order(w INTEGER, d INTEGER, o INTEGER, PRIMARY KEY(w, d, o)) WITHOUT ROWID, STRICT;
CREATE TABLE order_line(
  w INTEGER, d INTEGER, o INTEGER, number INTEGER, item INTEGER NOT NULL, supply INTEGER NOT NULL,
  delivery INTEGER NOT NULL, quantity INTEGER NOT NULL, amount INTEGER NOT NULL, dist_info TEXT NOT NULL,
  PRIMARY KEY(w, d, o, number)) WITHOUT ROWID, STRICT;
CREATE TABLE stock(
  w INTEGER, item INTEGER, quantity INTEGER NOT NULL,
  dist_01 TEXT NOT NULL, dist_02 TEXT NOT NULL, dist_03 TEXT NOT NULL, dist_04 TEXT NOT NULL,
  dist_05 TEXT NOT NULL, dist_06 TEXT NOT NULL, dist_07 TEXT NOT NULL, dist_08 TEXT NOT NULL,
  dist_09 TEXT NOT NULL, dist_10 TEXT NOT NULL,
  ytd INTEGER NOT NULL, order_cnt INTEGER NOT NULL, remote_cnt INTEGER NOT NULL, data TEXT NOT NULL,
  PRIMARY KEY(w, item)) WITHOUT ROWID, STRICT;
)sql";

constexpr std::string_view kOriginal = "ORIGINAL";

// ---- errors ------------------------------------------------------------------------

[[noreturn]] void refuse(const Db& db, const std::string& sentence) {
  throw std::runtime_error(db.label() + ": " + sentence);
}

std::string where(int64_t w, int64_t d) { return "warehouse " + std::to_string(w) + ", district " + std::to_string(d); }

std::string customer_name(int64_t w, int64_t d, int64_t c) { return where(w, d) + ", customer " + std::to_string(c); }

// Runs an UPDATE or DELETE that must touch exactly one row.
void change_one(Db& db, Statement&& s, const std::string& what) {
  s.run();
  if (db.changes() != 1) refuse(db, what + " does not exist");
}

// ---- load ----------------------------------------------------------------------------

// One COMMIT per this many rows: large enough that the load is bound by
// inserting (a commit with synchronous=OFF costs a few page writes), small
// enough that the page cache never holds a whole table of dirty pages.
constexpr uint64_t kLoadRowsPerCommit = 100'000;

class SqlRowSink final : public RowSink {
 public:
  SqlRowSink(Db& db, const std::function<void(uint64_t)>& progress) : db_(db), progress_(progress) {}

  void items(std::span<const ItemRow> rows) override {
    for (const ItemRow& r : rows) use(db_, Sql::insert_item).bind(r.id, r.image, r.name, r.price, r.data).run();
    added(rows.size());
  }
  void warehouses(std::span<const WarehouseRow> rows) override {
    for (const WarehouseRow& r : rows) {
      const Address& a = r.address;
      use(db_, Sql::insert_warehouse)
          .bind(r.id, r.name, a.street_1, a.street_2, a.city, a.state, a.zip, r.tax, r.ytd)
          .run();
    }
    added(rows.size());
  }
  void districts(std::span<const DistrictRow> rows) override {
    for (const DistrictRow& r : rows) {
      const Address& a = r.address;
      use(db_, Sql::insert_district)
          .bind(r.w, r.d, r.name, a.street_1, a.street_2, a.city, a.state, a.zip, r.tax, r.ytd, r.next_order)
          .run();
    }
    added(rows.size());
  }
  void customers(std::span<const CustomerRow> rows) override {
    for (const CustomerRow& r : rows) {
      const Address& a = r.address;
      use(db_, Sql::insert_customer)
          .bind(r.w, r.d, r.c, r.first, r.middle, r.last, a.street_1, a.street_2, a.city, a.state, a.zip, r.phone,
                r.since, r.credit, r.credit_lim, r.discount, r.balance, r.ytd_payment, r.payment_cnt,
                r.delivery_cnt, r.data)
          .run();
    }
    added(rows.size());
  }
  void history(std::span<const HistoryRow> rows) override {
    for (const HistoryRow& r : rows) {
      use(db_, Sql::insert_history).bind(r.id, r.c, r.c_d, r.c_w, r.d, r.w, r.date, r.amount, r.data).run();
    }
    added(rows.size());
  }
  void orders(std::span<const OrderRow> rows) override {
    for (const OrderRow& r : rows) {
      use(db_, Sql::insert_order).bind(r.w, r.d, r.o, r.customer, r.entry, r.carrier, r.lines, r.all_local).run();
    }
    added(rows.size());
  }
  void new_orders(std::span<const NewOrderRow> rows) override {
    for (const NewOrderRow& r : rows) use(db_, Sql::insert_new_order).bind(r.w, r.d, r.o).run();
    added(rows.size());
  }
  void order_lines(std::span<const OrderLineRow> rows) override {
    for (const OrderLineRow& r : rows) {
      use(db_, Sql::insert_order_line)
          .bind(r.w, r.d, r.o, r.number, r.item, r.supply, r.delivery, r.quantity, r.amount, r.dist_info)
          .run();
    }
    added(rows.size());
  }
  void stock(std::span<const StockRow> rows) override {
    for (const StockRow& r : rows) {
      const auto& x = r.dist;
      use(db_, Sql::insert_stock)
          .bind(r.w, r.item, r.quantity, x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9], r.ytd,
                r.order_cnt, r.remote_cnt, r.data)
          .run();
    }
    added(rows.size());
  }

  void begin() { db_.exec("BEGIN"); }
  void finish() {
    use(db_, Sql::commit).run();
    progress_(rows_);
  }

 private:
  void added(size_t n) {
    rows_ += n;
    uncommitted_ += n;
    if (uncommitted_ < kLoadRowsPerCommit) return;
    use(db_, Sql::commit).run();
    db_.exec("BEGIN");
    uncommitted_ = 0;
    progress_(rows_);
  }

  Db& db_;
  const std::function<void(uint64_t)>& progress_;
  uint64_t rows_ = 0;
  uint64_t uncommitted_ = 0;
};

// ---- the transactions ---------------------------------------------------------------

struct LineOutcome {
  int64_t amount;
  bool brand;  // "B": item and stock data both hold ORIGINAL (clause 2.4.2.2)
};

// Line n of order o: takes the stock and adds the order line with the
// district's S_DIST_xx; nothing when the item does not exist.
std::optional<LineOutcome> order_line(Db& db, const NewOrderTx& t, int64_t o, int64_t n) {
  const LineInput& l = t.lines[static_cast<size_t>(n - 1)];
  int64_t price = 0;
  bool item_original = false;
  {
    Statement s = use(db, Sql::item_of_line).bind(l.item);
    // An unused item number (1% of orders) rolls the whole order back.
    if (!s.step()) return std::nullopt;
    price = s.integer(0);
    item_original = s.text(1).find(kOriginal) != std::string::npos;
  }
  const int64_t remote = l.supply != t.w ? 1 : 0;
  bool stock_original = false;
  std::string dist_info;
  {
    Statement s = use(db, Sql::take_stock).bind(l.quantity, remote, l.supply, l.item, t.d);
    if (!s.step()) refuse(db, "stock of item " + std::to_string(l.item) + " in warehouse " + std::to_string(l.supply) +
                                  " does not exist");
    stock_original = s.text(0).find(kOriginal) != std::string::npos;
    dist_info = s.text(1);
  }
  const int64_t amount = l.quantity * price;
  use(db, Sql::insert_order_line)
      .bind(t.w, t.d, o, n, l.item, l.supply, int64_t{0}, l.quantity, amount, dist_info)
      .run();
  return LineOutcome{amount, item_original && stock_original};
}

// new_order: the module's `on new_order`, statement for statement.
TxResult new_order(Db& db, const NewOrderTx& t, int64_t now) {
  const auto count = static_cast<int64_t>(t.lines.size());
  if (count < 1 || count > kMaxOrderLines) refuse(db, "an order has 1 to 15 lines, not " + std::to_string(count));
  int64_t w_tax = 0;
  {
    Statement s = use(db, Sql::warehouse_tax).bind(t.w);
    if (!s.step()) refuse(db, "warehouse " + std::to_string(t.w) + " does not exist");
    w_tax = s.integer(0);
  }
  int64_t d_tax = 0, o = 0;
  {
    Statement s = use(db, Sql::take_order_number).bind(t.w, t.d);
    if (!s.step()) refuse(db, where(t.w, t.d) + " does not exist");
    d_tax = s.integer(0);
    o = s.integer(1);
  }
  int64_t discount = 0;
  {
    Statement s = use(db, Sql::customer_discount).bind(t.w, t.d, t.c);
    if (!s.step()) refuse(db, customer_name(t.w, t.d, t.c) + " does not exist");
    discount = s.integer(0);
  }
  int64_t all_local = 1;
  for (const LineInput& l : t.lines) {
    if (l.supply != t.w) all_local = 0;
  }
  use(db, Sql::insert_order).bind(t.w, t.d, o, t.c, now, int64_t{0}, count, all_local).run();
  use(db, Sql::insert_new_order).bind(t.w, t.d, o).run();

  int64_t total = 0;
  int64_t brands = 0;
  for (size_t i = 0; i < t.lines.size(); ++i) {
    const std::optional<LineOutcome> line = order_line(db, t, o, static_cast<int64_t>(i) + 1);
    if (!line) return {Outcome::rolled_back, {}};
    total += line->amount;
    if (line->brand) brands |= int64_t{1} << i;
  }
  // As the module: round(total * rates / 100_000_000) in binary64, where
  // total * rates (< 2^53) is exact.
  const int64_t rates = (10'000 - discount) * (10'000 + w_tax + d_tax);
  const double rounded = std::round(static_cast<double>(total) * static_cast<double>(rates) / 100'000'000.0);
  return {Outcome::committed, {o, count, static_cast<int64_t>(rounded), brands}};
}

// The customer a Payment or Order-Status names: by number, or (c 0) by
// last name, the one at position ceil(n / 2) by first name (clause
// 2.5.2.2), which tpcc.aup's find_customer picks the same way.
int64_t find_customer(Db& db, int64_t w, int64_t d, int64_t c, const std::string& last) {
  if (c != 0) return c;
  int64_t n = 0;
  {
    Statement s = use(db, Sql::count_named).bind(w, d, last);
    if (s.step()) n = s.integer(0);
  }
  if (n == 0) refuse(db, where(w, d) + " has no customer named " + last);
  Statement s = use(db, Sql::named_at).bind(w, d, last, (n + 1) / 2 - 1);
  if (!s.step()) refuse(db, "the customers named " + last + " of " + where(w, d) + " cannot be read");
  return s.integer(0);
}

TxResult payment(Db& db, const PaymentTx& t, int64_t now) {
  if (t.amount <= 0) refuse(db, "a payment must be positive");
  std::string names;  // H_DATA: W_NAME, four spaces, D_NAME (clause 2.5.2.2)
  {
    Statement s = use(db, Sql::pay_warehouse).bind(t.amount, t.w);
    if (!s.step()) refuse(db, "warehouse " + std::to_string(t.w) + " does not exist");
    names = s.text(0) + "    ";
  }
  {
    Statement s = use(db, Sql::pay_district).bind(t.amount, t.w, t.d);
    if (!s.step()) refuse(db, where(t.w, t.d) + " does not exist");
    names += s.text(0);
  }
  const int64_t c = find_customer(db, t.c_w, t.c_d, t.c, t.last);
  int64_t balance = 0;
  bool bad_credit = false;
  {
    Statement s = use(db, Sql::pay_customer).bind(t.amount, t.c_w, t.c_d, c);
    if (!s.step()) refuse(db, customer_name(t.c_w, t.c_d, c) + " does not exist");
    balance = s.integer(0);
    bad_credit = s.text(1) == "BC";
  }
  if (bad_credit) {
    use(db, Sql::shift_customer_data)
        .bind(t.c_w, t.c_d, c, payment_entry(c, t.c_d, t.c_w, t.d, t.w, t.amount))
        .run();
  }
  int64_t id = 0;
  {
    Statement s = use(db, Sql::next_history);
    if (!s.step()) refuse(db, "the next history number cannot be read");
    id = s.integer(0);
  }
  use(db, Sql::insert_history).bind(id, c, t.c_d, t.c_w, t.d, t.w, now, t.amount, names).run();
  return {Outcome::committed, {c, balance, bad_credit ? 1 : 0}};
}

// The customer's order with the greatest number (index orders_customer)
// and its lines in line-number order.
TxResult order_status(Db& db, const OrderStatusTx& t) {
  const int64_t c = find_customer(db, t.w, t.d, t.c, t.last);
  TxResult r{Outcome::committed, {c}};
  {
    Statement s = use(db, Sql::customer_balance).bind(t.w, t.d, c);
    if (!s.step()) refuse(db, customer_name(t.w, t.d, c) + " does not exist");
    r.values.push_back(s.integer(0));
  }
  int64_t o = 0;
  {
    Statement s = use(db, Sql::latest_order).bind(t.w, t.d, c);
    if (!s.step()) refuse(db, customer_name(t.w, t.d, c) + " has no order");
    o = s.integer(0);
    r.values.push_back(o);
    r.values.push_back(s.integer(1));
  }
  Statement lines = use(db, Sql::lines_of_order).bind(t.w, t.d, o);
  while (lines.step()) {
    for (int column = 0; column < 4; ++column) r.values.push_back(lines.integer(column));
    r.values.push_back(lines.integer(4) != 0 ? 1 : 0);
  }
  return r;
}

// One district's oldest waiting order, delivered: its number, or 0 when
// none waits.
int64_t deliver_district(Db& db, int64_t w, int64_t d, int64_t carrier, int64_t now) {
  int64_t o = 0;
  {
    Statement s = use(db, Sql::oldest_new_order).bind(w, d);
    if (!s.step()) return 0;
    o = s.integer(0);
  }
  const std::string order_name = "order " + std::to_string(o) + " of " + where(w, d);
  change_one(db, use(db, Sql::delete_new_order).bind(w, d, o), "new order " + std::to_string(o));
  int64_t customer = 0;
  {
    Statement s = use(db, Sql::set_carrier).bind(w, d, o, carrier);
    if (!s.step()) refuse(db, order_name + " does not exist");
    customer = s.integer(0);
  }
  int64_t total = 0;
  {
    Statement s = use(db, Sql::deliver_lines).bind(w, d, o, now);
    while (s.step()) total += s.integer(0);
  }
  change_one(db, use(db, Sql::credit_delivery).bind(w, d, customer, total), customer_name(w, d, customer));
  return o;
}

// Every district of the warehouse in one transaction; a district with no
// waiting order is skipped (clause 2.7.4.2).
TxResult delivery(Db& db, const DeliveryTx& t, int64_t now) {
  if (t.carrier < 1 || t.carrier > 10) refuse(db, "the carrier must be 1 to 10, is " + std::to_string(t.carrier));
  TxResult r{Outcome::committed, {}};
  for (int64_t d = 1; d <= kDistrictsPerWarehouse; ++d) r.values.push_back(deliver_district(db, t.w, d, t.carrier, now));
  return r;
}

TxResult stock_level(Db& db, const StockLevelTx& t) {
  int64_t next = 0;
  {
    Statement s = use(db, Sql::next_order_of).bind(t.w, t.d);
    if (!s.step()) refuse(db, where(t.w, t.d) + " does not exist");
    next = s.integer(0);
  }
  Statement s = use(db, Sql::low_stock).bind(t.w, t.d, next, t.threshold);
  if (!s.step()) refuse(db, "the stock level of " + where(t.w, t.d) + " cannot be counted");
  return {Outcome::committed, {s.integer(0)}};
}

// ---- consistency ---------------------------------------------------------------------

// Clause 3.3.2.2 to 3.3.2.4 for one district; adds its district ytd to `ytd`.
void check_district(Db& db, int64_t w, int64_t d, int64_t& ytd, std::vector<std::string>& problems) {
  auto problem = [&](const std::string& what) { problems.push_back(where(w, d) + ": " + what + "."); };
  int64_t next = 0;
  {
    Statement s = use(db, Sql::district_figures).bind(w, d);
    if (!s.step()) return problem("the district does not exist");
    ytd += s.integer(0);
    next = s.integer(1);
  }
  int64_t orders = 0, max_order = 0, line_sum = 0;
  {
    Statement s = use(db, Sql::order_figures).bind(w, d);
    s.step();
    orders = s.integer(0);
    max_order = s.integer(1);
    line_sum = s.integer(2);
  }
  if (orders == 0) return problem("the district has no orders");
  // 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)
  if (next - 1 != max_order) {
    problem("next order - 1 is " + std::to_string(next - 1) + " but the greatest order is " +
            std::to_string(max_order));
  }
  {
    Statement s = use(db, Sql::new_order_figures).bind(w, d);
    s.step();
    const int64_t waiting = s.integer(0), first = s.integer(1), last = s.integer(2);
    if (waiting > 0 && last != max_order) {
      problem("the greatest new order is " + std::to_string(last) + " but the greatest order is " +
              std::to_string(max_order));
    }
    // 3: no gaps among the new orders
    if (waiting > 0 && last - first + 1 != waiting) {
      problem("new orders " + std::to_string(first) + " to " + std::to_string(last) + " have gaps (" +
              std::to_string(waiting) + " rows)");
    }
  }
  // 4: sum(O_OL_CNT) = number of order lines
  Statement s = use(db, Sql::order_line_count).bind(w, d);
  s.step();
  if (s.integer(0) != line_sum) {
    problem("its orders' line counts add up to " + std::to_string(line_sum) + " but it has " +
            std::to_string(s.integer(0)) + " order lines");
  }
}

void check_warehouse(Db& db, int64_t w, std::vector<std::string>& problems) {
  int64_t warehouse_ytd = 0;
  {
    Statement s = use(db, Sql::warehouse_ytd).bind(w);
    if (!s.step()) {
      problems.push_back("warehouse " + std::to_string(w) + " does not exist.");
      return;
    }
    warehouse_ytd = s.integer(0);
  }
  int64_t ytd = 0;
  for (int64_t d = 1; d <= kDistrictsPerWarehouse; ++d) check_district(db, w, d, ytd, problems);
  // 1: W_YTD = sum(D_YTD)
  if (warehouse_ytd != ytd) {
    problems.push_back("warehouse " + std::to_string(w) + ": its ytd " + std::to_string(warehouse_ytd) +
                       " differs from the sum of its districts' ytd " + std::to_string(ytd) + ".");
  }
}

// ---- reading every row ----------------------------------------------------------------

// How one table is read back: its SQL, which selects the module's record
// fields in their order (table_specs()), the key's first.
struct TableReader {
  const char* table;
  const char* select;
};

// One row in the spec's shape: texts as texts, everything else a number.
Row read_row(const TableSpec& spec, const Statement& s) {
  Row row;
  row.reserve(spec.columns.size());
  for (size_t i = 0; i < spec.columns.size(); ++i) {
    const int column = static_cast<int>(i);
    if (spec.columns[i].kind == ColumnKind::text) {
      row.emplace_back(s.text(column));
    } else {
      row.emplace_back(s.integer(column));
    }
  }
  return row;
}

const std::array<TableReader, kTables>& table_readers() {
  static const std::array<TableReader, kTables> readers{{
      {"item", "SELECT id, image, name, price, data FROM item ORDER BY id"},
      {"warehouse", "SELECT id, name, street_1, street_2, city, state, zip, tax, ytd FROM warehouse ORDER BY id"},
      {"district",
       "SELECT w, d, name, street_1, street_2, city, state, zip, tax, ytd, next_order FROM district ORDER BY w, d"},
      {"customer",
       "SELECT w, d, c, first, middle, last, street_1, street_2, city, state, zip, phone, since, credit, "
       "credit_lim, discount, balance, ytd_payment, payment_cnt, delivery_cnt, data FROM customer "
       "ORDER BY w, d, c"},
      {"history", "SELECT id, c, c_d, c_w, d, w, date, amount, data FROM history ORDER BY id"},
      {"orders", "SELECT w, d, o, customer, entry, carrier, lines, all_local FROM orders ORDER BY w, d, o"},
      {"new_order", "SELECT w, d, o FROM new_order ORDER BY w, d, o"},
      {"order_line",
       "SELECT w, d, o, number, item, supply, delivery, quantity, amount, dist_info FROM order_line "
       "ORDER BY w, d, o, number"},
      {"stock",
       "SELECT w, item, quantity, dist_01, dist_02, dist_03, dist_04, dist_05, dist_06, dist_07, dist_08, "
       "dist_09, dist_10, ytd, order_cnt, remote_cnt, data FROM stock ORDER BY w, item"},
  }};
  return readers;
}

TableCounts counts_in_transaction(Db& db) {
  TableCounts counts;
  const auto& readers = table_readers();
  for (int t = 0; t < kTables; ++t) {
    counts.rows[t] = static_cast<uint64_t>(db.query_int(std::string("SELECT count(*) FROM ") + readers[t].table));
  }
  return counts;
}

// Runs `body` inside BEGIN ... COMMIT (one snapshot for every statement),
// rolling back when it throws.
template <typename Body>
auto in_read_transaction(Db& db, Body body) {
  use(db, Sql::begin_deferred).run();
  try {
    auto result = body();
    use(db, Sql::commit).run();
    return result;
  } catch (...) {
    db.rollback_quietly();
    throw;
  }
}

}  // namespace

void control(Db& db, Control c) {
  switch (c) {
    case Control::begin_deferred: return use(db, Sql::begin_deferred).run();
    case Control::begin_immediate: return use(db, Sql::begin_immediate).run();
    case Control::commit: return use(db, Sql::commit).run();
    case Control::rollback: return use(db, Sql::rollback).run();
    case Control::savepoint: return use(db, Sql::savepoint).run();
    case Control::release: return use(db, Sql::release).run();
    case Control::rollback_to: return use(db, Sql::rollback_to).run();
  }
}

void create_schema(Db& db) { db.exec(kSchema); }

bool has_schema(Db& db) { return db.query_int("SELECT count(*) FROM sqlite_schema") > 0; }

void insert_population(Db& db, const LoadConfig& config, const std::function<void(uint64_t)>& progress) {
  SqlRowSink sink(db, progress);
  sink.begin();
  try {
    generate_load(config, sink);
    sink.finish();
  } catch (...) {
    db.rollback_quietly();
    throw;
  }
}

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

TxResult run_statements(Db& db, const Transaction& tx, int64_t now) {
  struct Run {
    Db& db;
    int64_t now;
    TxResult operator()(const NewOrderTx& t) const { return new_order(db, t, now); }
    TxResult operator()(const PaymentTx& t) const { return payment(db, t, now); }
    TxResult operator()(const OrderStatusTx& t) const { return order_status(db, t); }
    TxResult operator()(const DeliveryTx& t) const { return delivery(db, t, now); }
    TxResult operator()(const StockLevelTx& t) const { return stock_level(db, t); }
  };
  return std::visit(Run{db, now}, tx);
}

void check_outcome(const Db& db, const Transaction& tx, const TxResult& result) {
  const NewOrderTx* order = std::get_if<NewOrderTx>(&tx);
  const bool expect_rollback = order && order->rollback;
  if (expect_rollback == (result.outcome == Outcome::rolled_back)) return;
  const std::string what = expect_rollback ? " that had to roll back (an unused item) committed" : " rolled back";
  refuse(db, "a " + std::string(name_of(kind_of(tx))) + what);
}

bool is_read_only(const Transaction& tx) {
  const TxKind kind = kind_of(tx);
  return kind == TxKind::order_status || kind == TxKind::stock_level;
}

std::vector<std::string> check_consistency(Db& db, int64_t warehouses) {
  return in_read_transaction(db, [&] {
    std::vector<std::string> problems;
    for (int64_t w = 1; w <= warehouses; ++w) check_warehouse(db, w, problems);
    return problems;
  });
}

State read_state(Db& db) {
  return in_read_transaction(db, [&] {
    State state;
    const TableCounts counts = counts_in_transaction(db);
    const auto& readers = table_readers();
    for (int t = 0; t < kTables; ++t) {
      std::vector<Row>& rows = state.tables[t].rows;
      rows.reserve(counts.rows[t]);
      Statement s = db.prepare(readers[t].select);
      while (s.step()) rows.push_back(read_row(table_specs()[t], s));
    }
    return state;
  });
}

TableCounts count_rows(Db& db) {
  return in_read_transaction(db, [&] { return counts_in_transaction(db); });
}

}  // namespace aup::tpcc

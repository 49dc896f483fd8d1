// TPC-C input for examples/tpcc/tpcc.aup: the initial population (as rows
// and as the module's load events) and a seeded stream of the five
// transactions (as plain structs and as request lines).
//
// Everything is a pure function of a seed: the PRNG is our own
// (xoshiro256** seeded through splitmix64), never a std:: distribution,
// whose output differs between standard libraries. The same seed therefore
// gives the same rows and the same transactions on every machine, which is
// what lets aup and the SQLite comparison run exactly the same workload.
//
// The facts (ranges, shares, NURand, last-name syllables) are TPC-C rev
// 5.11 (clauses 2 and 4: population, transaction inputs, NURand). Keys are
// the spec's composite keys, exactly as tpcc.aup declares them. Money is
// integer cents, tax and discount rates ten-thousandths.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace aup::tpcc {

// ---- limits -----------------------------------------------------------------

// tpcc.aup's load_warehouses accepts ids 1..999.
constexpr int64_t kMaxWarehouses = 999;
constexpr int64_t kDistrictsPerWarehouse = 10;
constexpr int64_t kCustomersPerDistrict = 3000;
constexpr int64_t kOrdersPerDistrict = 3000;
constexpr int64_t kItems = 100'000;
// Orders below this number are delivered at load time (clause 4.3.3.1);
// 2101..3000 wait in NEW-ORDER.
constexpr int64_t kFirstUndeliveredOrder = 2101;
// An item number that no ITEM row has: the last line of 1% of New-Orders
// carries it, which makes the module roll the order back.
constexpr int64_t kUnusedItem = kItems + 1;
constexpr int64_t kMinOrderLines = 5;
constexpr int64_t kMaxOrderLines = 15;
// One load event's rows become one request line; 10,000 order lines are
// about 1.4 MB of JSON, well below aup run's default 16 MiB line limit.
constexpr int64_t kMaxBatchRows = 10'000;
constexpr int64_t kDefaultBatchRows = 1000;
// aup run serves at most 1024 connections, one per terminal.
constexpr uint32_t kMaxTerminals = 1024;
// The fixed O_ENTRY_D / H_DATE / C_SINCE of the initial population, in
// milliseconds since the Unix epoch like the module's `now`
// (2023-11-14 22:13:20 UTC): fixed so that loads are byte-for-byte equal.
constexpr int64_t kDefaultLoadTimeMs = 1'700'000'000'000;

// C_FIRST is a random a-string of 8 to 16 characters (clause 4.3.3.1).
constexpr int64_t kMinFirstName = 8;
constexpr int64_t kMaxFirstName = 16;
// Payment and Order-Status choose 60% of their customers by last name
// (clauses 2.5.1.2, 2.6.1.2).
constexpr int64_t kByNamePercent = 60;

// ---- random numbers -----------------------------------------------------------

// splitmix64's output function: used to seed xoshiro and to derive one
// independent stream per (purpose, warehouse, district) from a seed.
uint64_t splitmix64(uint64_t& state);
uint64_t derive_seed(uint64_t seed, uint64_t purpose, uint64_t a, uint64_t b);

// xoshiro256** (Blackman and Vigna, 2018). Not cryptographic; fast and the
// same everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  // Uniform over [low, high], both included; low <= high. Unbiased
  // (rejection), so no value is favoured by a modulo.
  int64_t uniform(int64_t low, int64_t high);

 private:
  uint64_t s_[4];
};

// NURand(A, x, y) = (((rand(0, A) | rand(x, y)) + C) % (y - x + 1)) + x.
int64_t nurand(Rng& rng, int64_t a, int64_t x, int64_t y, int64_t c);

constexpr int64_t kNurandCustomerA = 1023;  // C_ID in 1..3000
constexpr int64_t kNurandItemA = 8191;      // OL_I_ID in 1..100,000
constexpr int64_t kNurandLastA = 255;       // C_LAST's number in 0..999

// Each NURand field has its own C, drawn once per run from rand[0..A] and
// shared by every terminal (clause 2.1.6). C_LAST has two: `last_load`
// makes the population's names, `last_run` the transactions' (their
// difference is in 65..119 and neither 96 nor 112, clause 2.1.6.1).
struct NurandConstants {
  int64_t customer = 0;
  int64_t item = 0;
  int64_t last_load = 0;
  int64_t last_run = 0;
};
NurandConstants nurand_constants(uint64_t seed);

// The last name of number n (0..999): three syllables, one per decimal
// digit of n, from BAR OUGHT ABLE PRI PRES ESE ANTI CALLY ATION EING
// (clause 4.3.2.3). 371 is "PRICALLYOUGHT".
std::string last_name(int64_t n);

// ---- the initial population (clause 4.3.3.1), the module's columns ------------

// The key fields come first, in key order (tpcc.aup's `key (...)`); every
// column of clause 1.3 follows (money in cents, rates in ten-thousandths,
// dates in ms). I_DATA and S_DATA hold "ORIGINAL" in 10% of the rows
// (clause 4.3.3.1), which New-Order looks for on both sides.
struct Address {
  std::string street_1, street_2, city, state, zip;
};
struct ItemRow {
  int64_t id, image;
  std::string name;
  int64_t price;
  std::string data;
};
struct WarehouseRow {
  int64_t id;
  std::string name;
  Address address;
  int64_t tax, ytd;
};
struct DistrictRow {
  int64_t w, d;
  std::string name;
  Address address;
  int64_t tax, ytd, next_order;
};
// C_DATA: a bad-credit Payment puts its entry at the left and cuts the
// whole to this many characters (clause 2.5.2.2).
constexpr size_t kMaxCustomerData = 500;
struct CustomerRow {
  int64_t w, d, c;
  std::string first, middle, last;
  Address address;
  std::string phone;
  int64_t since;
  std::string_view credit;  // "GC" or "BC" (static strings)
  int64_t credit_lim, discount, balance, ytd_payment, payment_cnt, delivery_cnt;
  std::string data;  // 300..500 characters
};
struct HistoryRow {
  int64_t id, c, c_d, c_w, d, w, date, amount;
  std::string data;
};
struct OrderRow { int64_t w, d, o, customer, entry, carrier, lines, all_local; };
struct NewOrderRow { int64_t w, d, o; };
struct OrderLineRow {
  int64_t w, d, o, number, item, supply, delivery, quantity, amount;
  std::string dist_info;
};
struct StockRow {
  int64_t w, item, quantity;
  std::array<std::string, 10> dist;  // S_DIST_01 .. S_DIST_10
  int64_t ytd, order_cnt, remote_cnt;
  std::string data;
};

// Payment's entry for a bad-credit customer's C_DATA (clause 2.5.2.2):
// C_ID, C_D_ID, C_W_ID, D_ID, W_ID and H_AMOUNT, as tpcc.aup's
// payment_entry builds it: "7 3 1 2 1 123.45 | ".
std::string payment_entry(int64_t c, int64_t c_d, int64_t c_w, int64_t d, int64_t w, int64_t amount);

struct LoadConfig {
  int64_t warehouses = 1;
  uint64_t seed = 1;
  int64_t batch_rows = kDefaultBatchRows;
  int64_t load_time_ms = kDefaultLoadTimeMs;
};

// Receives the population in batches of at most batch_rows rows, table by
// table in an order the module accepts: items, warehouses, districts,
// customers, history, orders (they need their customers), new orders (they
// need their orders), order lines, stock. A span is valid only during the
// call.
class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual void items(std::span<const ItemRow> rows) = 0;
  virtual void warehouses(std::span<const WarehouseRow> rows) = 0;
  virtual void districts(std::span<const DistrictRow> rows) = 0;
  virtual void customers(std::span<const CustomerRow> rows) = 0;
  virtual void history(std::span<const HistoryRow> rows) = 0;
  virtual void orders(std::span<const OrderRow> rows) = 0;
  virtual void new_orders(std::span<const NewOrderRow> rows) = 0;
  virtual void order_lines(std::span<const OrderLineRow> rows) = 0;
  virtual void stock(std::span<const StockRow> rows) = 0;
};

// The rows do not depend on batch_rows: each (table, warehouse, district)
// draws from its own stream derived from the seed.
// Preconditions: 1 <= warehouses <= kMaxWarehouses, 1 <= batch_rows <= kMaxBatchRows.
void generate_load(const LoadConfig& config, RowSink& sink);

// Turns each batch into one load event request line
// ({"event":"load_items","args":{"rows":[...]},"id":N}) with ids counting
// up from first_id, and hands it (without a newline) to `emit`.
class LoadRequestWriter final : public RowSink {
 public:
  LoadRequestWriter(std::function<void(const std::string&)> emit, uint64_t first_id);
  void items(std::span<const ItemRow> rows) override;
  void warehouses(std::span<const WarehouseRow> rows) override;
  void districts(std::span<const DistrictRow> rows) override;
  void customers(std::span<const CustomerRow> rows) override;
  void history(std::span<const HistoryRow> rows) override;
  void orders(std::span<const OrderRow> rows) override;
  void new_orders(std::span<const NewOrderRow> rows) override;
  void order_lines(std::span<const OrderLineRow> rows) override;
  void stock(std::span<const StockRow> rows) override;
  uint64_t next_id() const { return next_id_; }

 private:
  template <typename Row>
  void write(std::string_view event, std::span<const Row> rows);

  std::function<void(const std::string&)> emit_;
  uint64_t next_id_;
  std::string line_;  // reused for every batch
};

// One row as the JSON object the module's record expects.
void append_json(std::string& out, const ItemRow& r);
void append_json(std::string& out, const WarehouseRow& r);
void append_json(std::string& out, const DistrictRow& r);
void append_json(std::string& out, const CustomerRow& r);
void append_json(std::string& out, const HistoryRow& r);
void append_json(std::string& out, const OrderRow& r);
void append_json(std::string& out, const NewOrderRow& r);
void append_json(std::string& out, const OrderLineRow& r);
void append_json(std::string& out, const StockRow& r);

// ---- the transactions (clauses 2.4.1 to 2.8.1) ----------------------------------

struct LineInput { int64_t item, supply, quantity; };

struct NewOrderTx {
  int64_t w, d, c;
  std::vector<LineInput> lines;  // 5..15; the last has kUnusedItem iff rollback
  bool rollback;                 // the module must answer `failed`
};
// Payment and Order-Status name their customer by number (c, last "") or
// by last name (c 0, last the name): of that district's customers with
// that name, sorted by first name, the one at position ceil(n / 2).
struct PaymentTx {
  int64_t w, d, c_w, c_d, c, amount;
  std::string last;
};
struct OrderStatusTx {
  int64_t w, d, c;
  std::string last;
};
// Every district of the warehouse, one order each (clause 2.7.4.2).
struct DeliveryTx { int64_t w, carrier; };
struct StockLevelTx { int64_t w, d, threshold; };

using Transaction = std::variant<NewOrderTx, PaymentTx, OrderStatusTx, DeliveryTx, StockLevelTx>;

// The variant's index, so that callers can switch and count per type.
enum class TxKind : uint8_t { new_order = 0, payment, order_status, delivery, stock_level };
constexpr int kTxKinds = 5;
TxKind kind_of(const Transaction& tx);
std::string_view name_of(TxKind kind);  // the module's event or query name

// A terminal's home: warehouse t % W + 1, and for Stock-Level the district
// (t / W) % 10 + 1, so the first 10 * W terminals have distinct
// (warehouse, district) pairs as clause 2.8.1 asks.
struct TerminalHome { int64_t w, d; };
TerminalHome terminal_home(int64_t warehouses, uint32_t terminal);

struct RunConfig {
  int64_t warehouses = 1;
  uint64_t seed = 1;
};

// One terminal's transactions: the 45/43/4/4/4 mix chosen by weight, with
// TPC-C's inputs. Terminals of the same run share the NURand constants
// and draw from independent streams, so terminal t's sequence depends only
// on (seed, warehouses, t), never on how the terminals interleave.
class TransactionGenerator {
 public:
  // Preconditions: 1 <= warehouses <= kMaxWarehouses, terminal < kMaxTerminals.
  TransactionGenerator(const RunConfig& config, uint32_t terminal);
  Transaction next();
  TerminalHome home() const { return home_; }

 private:
  NewOrderTx new_order();
  PaymentTx payment();
  OrderStatusTx order_status();
  // c and last for a Payment or Order-Status: 60% by name.
  void choose_customer(int64_t& c, std::string& last);
  int64_t remote_warehouse();

  int64_t warehouses_;
  TerminalHome home_;
  NurandConstants c_;
  Rng rng_;
};

// {"event":"new_order","args":{...},"id":N} and the like, without a newline.
void append_request_json(std::string& out, const Transaction& tx, uint64_t id);
std::string request_json(const Transaction& tx, uint64_t id);

// What a stream held, to compare with what the server answered and with
// clause 5.5.1.5's limits.
struct RunCounts {
  int64_t per_kind[kTxKinds] = {};
  int64_t rollbacks = 0;
  int64_t order_lines = 0;
  int64_t remote_order_lines = 0;
  int64_t remote_payments = 0;
  int64_t by_name = 0;  // Payments and Order-Statuses that name a last name

  void add(const Transaction& tx);
  int64_t total() const;
  // One JSON object, e.g. for a summary line on stderr.
  std::string json() const;
};

}  // namespace aup::tpcc

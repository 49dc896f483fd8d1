#include "bench/tpcc/generator.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <numeric>

namespace aup::tpcc {
namespace {

// Programmer errors (a caller broke a precondition) stop the program in
// every build type: a generator that silently produced a different
// workload would make every comparison built on it wrong.
void expects(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "aup::tpcc: precondition failed: %s\n", what);
  std::abort();
}

// What a derived stream is for; part of every derived seed, so that adding
// a column to one table never changes another table's rows.
enum Purpose : uint64_t {
  kPurposeItems = 1,
  kPurposeWarehouses,
  kPurposeDistricts,
  kPurposeCustomers,
  kPurposeOrders,
  kPurposeOrderLines,
  kPurposeStock,
  kPurposeRunConstants,
  kPurposeTerminal,
};

// The spec's initial money values (clause 4.3.3.1), in cents.
constexpr int64_t kWarehouseYtdCents = 30'000'000;  // 300,000.00
constexpr int64_t kDistrictYtdCents = 3'000'000;    // 30,000.00
constexpr int64_t kCustomerBalanceCents = -1000;    // -10.00
constexpr int64_t kCustomerYtdPaymentCents = 1000;  // 10.00
constexpr int64_t kHistoryAmountCents = 1000;       // 10.00
constexpr int64_t kMaxTaxRate = 2000;               // 0.2000 in ten-thousandths
constexpr int64_t kMaxDiscountRate = 5000;          // 0.5000
constexpr int64_t kLoadOrderLineQuantity = 5;

// The mix by weight (clause 5.2.3): cumulative percentages.
constexpr int64_t kNewOrderUpTo = 45;
constexpr int64_t kPaymentUpTo = 88;      // + 43
constexpr int64_t kOrderStatusUpTo = 92;  // + 4
constexpr int64_t kDeliveryUpTo = 96;     // + 4; Stock-Level takes the last 4

// A draw from uniform() is rejected with probability below range / 2^64
// (under 1e-14 for our ranges); 64 rejections in a row do not happen, and
// the bound keeps the loop finite anyway.
constexpr int kMaxRejections = 64;

void append_int(std::string& out, int64_t v) {
  char buf[24];  // 20 digits and a sign
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  expects(ec == std::errc(), "to_chars of an int64 fits 24 bytes");
  out.append(buf, end);
}

// Writes one flat JSON object. Keys and strings are our own identifiers,
// which need no escaping.
class ObjectWriter {
 public:
  explicit ObjectWriter(std::string& out) : out_(out) { out_ += '{'; }
  ObjectWriter& num(std::string_view name, int64_t v) {
    key(name);
    append_int(out_, v);
    return *this;
  }
  ObjectWriter& str(std::string_view name, std::string_view v) {
    key(name);
    out_ += '"';
    out_ += v;
    out_ += '"';
    return *this;
  }
  // The caller appends the value (an array or object) itself.
  ObjectWriter& key(std::string_view name) {
    if (!first_) out_ += ',';
    first_ = false;
    out_ += '"';
    out_ += name;
    out_ += "\":";
    return *this;
  }
  void close() { out_ += '}'; }

 private:
  std::string& out_;
  bool first_ = true;
};

// Collects rows and hands them to one RowSink method batch_rows at a time.
template <typename Row>
class Batcher {
 public:
  using Method = void (RowSink::*)(std::span<const Row>);
  Batcher(int64_t batch_rows, RowSink& sink, Method method)
      : batch_rows_(static_cast<size_t>(batch_rows)), sink_(sink), method_(method) {
    rows_.reserve(batch_rows_);
  }
  void add(const Row& row) {
    rows_.push_back(row);
    if (rows_.size() == batch_rows_) flush();
  }
  void finish() {
    if (!rows_.empty()) flush();
  }

 private:
  void flush() {
    (sink_.*method_)(std::span<const Row>(rows_));
    rows_.clear();
  }

  size_t batch_rows_;
  RowSink& sink_;
  Method method_;
  std::vector<Row> rows_;
};

// One district's 3,000 initial orders. Both the ORDER and the ORDER-LINE
// pass need them (a line count must match its order), so they are drawn
// from the district's own stream and simply drawn again for the lines.
struct LoadOrder {
  int64_t customer, carrier, lines;
};

std::vector<LoadOrder> district_orders(uint64_t seed, int64_t w, int64_t d) {
  Rng rng(derive_seed(seed, kPurposeOrders, static_cast<uint64_t>(w), static_cast<uint64_t>(d)));
  // O_C_ID is the next value of a random permutation of 1..3000 (Fisher-Yates).
  std::vector<int64_t> customers(kCustomersPerDistrict);
  std::iota(customers.begin(), customers.end(), int64_t{1});
  for (int64_t i = kCustomersPerDistrict - 1; i > 0; --i) {
    auto j = static_cast<size_t>(rng.uniform(0, i));
    std::swap(customers[static_cast<size_t>(i)], customers[j]);
  }
  std::vector<LoadOrder> orders;
  orders.reserve(kOrdersPerDistrict);
  for (int64_t o = 1; o <= kOrdersPerDistrict; ++o) {
    int64_t carrier = o < kFirstUndeliveredOrder ? rng.uniform(1, 10) : 0;
    int64_t lines = rng.uniform(kMinOrderLines, kMaxOrderLines);
    orders.push_back({customers[static_cast<size_t>(o - 1)], carrier, lines});
  }
  return orders;
}

void load_items(const LoadConfig& config, RowSink& sink) {
  Rng rng(derive_seed(config.seed, kPurposeItems, 0, 0));
  Batcher<ItemRow> out(config.batch_rows, sink, &RowSink::items);
  for (int64_t i = 1; i <= kItems; ++i) {
    int64_t price = rng.uniform(100, 10'000);  // 1.00..100.00
    int64_t image = rng.uniform(1, 10'000);
    out.add({i, price, image});
  }
  out.finish();
}

void load_warehouses(const LoadConfig& config, RowSink& sink) {
  Rng rng(derive_seed(config.seed, kPurposeWarehouses, 0, 0));
  Batcher<WarehouseRow> out(config.batch_rows, sink, &RowSink::warehouses);
  for (int64_t w = 1; w <= config.warehouses; ++w) out.add({w, rng.uniform(0, kMaxTaxRate), kWarehouseYtdCents});
  out.finish();
}

void load_districts(const LoadConfig& config, RowSink& sink) {
  Batcher<DistrictRow> out(config.batch_rows, sink, &RowSink::districts);
  for (int64_t w = 1; w <= config.warehouses; ++w) {
    Rng rng(derive_seed(config.seed, kPurposeDistricts, static_cast<uint64_t>(w), 0));
    for (int64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      int64_t tax = rng.uniform(0, kMaxTaxRate);
      out.add({district_key(w, d), w, d, tax, kDistrictYtdCents, kOrdersPerDistrict + 1});
    }
  }
  out.finish();
}

void load_customers(const LoadConfig& config, RowSink& sink) {
  Batcher<CustomerRow> out(config.batch_rows, sink, &RowSink::customers);
  for (int64_t w = 1; w <= config.warehouses; ++w) {
    for (int64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      Rng rng(derive_seed(config.seed, kPurposeCustomers, static_cast<uint64_t>(w), static_cast<uint64_t>(d)));
      for (int64_t c = 1; c <= kCustomersPerDistrict; ++c) {
        int64_t discount = rng.uniform(0, kMaxDiscountRate);
        std::string_view credit = rng.uniform(1, 100) <= 10 ? "BC" : "GC";  // bad credit: 10%
        out.add({customer_key(w, d, c), w, d, c, discount, credit, kCustomerBalanceCents,
                 kCustomerYtdPaymentCents, 1, 0});
      }
    }
  }
  out.finish();
}

// HISTORY has no key in the spec; the module numbers its rows, and its
// transactions continue after the greatest loaded number.
void load_history(const LoadConfig& config, RowSink& sink) {
  Batcher<HistoryRow> out(config.batch_rows, sink, &RowSink::history);
  int64_t id = 1;
  for (int64_t w = 1; w <= config.warehouses; ++w) {
    for (int64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      for (int64_t c = 1; c <= kCustomersPerDistrict; ++c) {
        out.add({id++, c, d, w, d, w, config.load_time_ms, kHistoryAmountCents});
      }
    }
  }
  out.finish();
}

void load_orders(const LoadConfig& config, RowSink& sink) {
  Batcher<OrderRow> out(config.batch_rows, sink, &RowSink::orders);
  for (int64_t w = 1; w <= config.warehouses; ++w) {
    for (int64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      std::vector<LoadOrder> orders = district_orders(config.seed, w, d);
      for (int64_t o = 1; o <= kOrdersPerDistrict; ++o) {
        const LoadOrder& lo = orders[static_cast<size_t>(o - 1)];
        out.add({order_key(w, d, o), w, d, o, lo.customer, config.load_time_ms, lo.carrier, lo.lines, 1});
      }
    }
  }
  out.finish();
}

void load_new_orders(const LoadConfig& config, RowSink& sink) {
  Batcher<NewOrderRow> out(config.batch_rows, sink, &RowSink::new_orders);
  for (int64_t w = 1; w <= config.warehouses; ++w) {
    for (int64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      for (int64_t o = kFirstUndeliveredOrder; o <= kOrdersPerDistrict; ++o) out.add({order_key(w, d, o)});
    }
  }
  out.finish();
}

void load_order_lines(const LoadConfig& config, RowSink& sink) {
  Batcher<OrderLineRow> out(config.batch_rows, sink, &RowSink::order_lines);
  for (int64_t w = 1; w <= config.warehouses; ++w) {
    for (int64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      std::vector<LoadOrder> orders = district_orders(config.seed, w, d);
      Rng rng(derive_seed(config.seed, kPurposeOrderLines, static_cast<uint64_t>(w), static_cast<uint64_t>(d)));
      for (int64_t o = 1; o <= kOrdersPerDistrict; ++o) {
        const int64_t order = order_key(w, d, o);
        const bool delivered = o < kFirstUndeliveredOrder;
        const int64_t lines = orders[static_cast<size_t>(o - 1)].lines;
        for (int64_t n = 1; n <= lines; ++n) {
          int64_t item = rng.uniform(1, kItems);  // uniform at load, not NURand
          int64_t amount = delivered ? 0 : rng.uniform(1, 999'999);  // 0.01..9,999.99
          out.add({line_key(order, n), order, n, item, w, delivered ? config.load_time_ms : 0,
                   kLoadOrderLineQuantity, amount});
        }
      }
    }
  }
  out.finish();
}

void load_stock(const LoadConfig& config, RowSink& sink) {
  Batcher<StockRow> out(config.batch_rows, sink, &RowSink::stock);
  for (int64_t w = 1; w <= config.warehouses; ++w) {
    Rng rng(derive_seed(config.seed, kPurposeStock, static_cast<uint64_t>(w), 0));
    for (int64_t i = 1; i <= kItems; ++i) out.add({stock_key(w, i), w, i, rng.uniform(10, 100), 0, 0, 0});
  }
  out.finish();
}

void append_args(std::string& out, const NewOrderTx& t) {
  ObjectWriter o(out);
  o.num("w", t.w).num("d", t.d).num("c", t.c).key("lines");
  out += '[';
  bool first = true;
  for (const LineInput& l : t.lines) {
    if (!first) out += ',';
    first = false;
    ObjectWriter(out).num("item", l.item).num("supply", l.supply).num("quantity", l.quantity).close();
  }
  out += ']';
  o.close();
}

void append_args(std::string& out, const PaymentTx& t) {
  ObjectWriter(out).num("w", t.w).num("d", t.d).num("c_w", t.c_w).num("c_d", t.c_d).num("c", t.c)
      .num("amount", t.amount).close();
}

void append_args(std::string& out, const OrderStatusTx& t) {
  ObjectWriter(out).num("w", t.w).num("d", t.d).num("c", t.c).close();
}

void append_args(std::string& out, const DeliveryTx& t) {
  ObjectWriter(out).num("w", t.w).num("d", t.d).num("carrier", t.carrier).close();
}

void append_args(std::string& out, const StockLevelTx& t) {
  ObjectWriter(out).num("w", t.w).num("d", t.d).num("threshold", t.threshold).close();
}

}  // namespace

// ---- random numbers -----------------------------------------------------------

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Each step is a bijection of its input for a fixed prefix, so two
// derivations that differ in one part give different seeds.
uint64_t derive_seed(uint64_t seed, uint64_t purpose, uint64_t a, uint64_t b) {
  uint64_t state = seed;
  uint64_t h = splitmix64(state);
  for (uint64_t part : {purpose, a, b}) {
    state = h ^ part;
    h = splitmix64(state);
  }
  return h;
}

// splitmix64 fills the state as xoshiro's authors recommend; its outputs
// for consecutive states are distinct, so the state is never all zero.
Rng::Rng(uint64_t seed) {
  uint64_t state = seed;
  for (uint64_t& word : s_) word = splitmix64(state);
}

uint64_t Rng::next() {
  const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = std::rotl(s_[3], 45);
  return result;
}

// OpenBSD's arc4random_uniform: draws below 2^64 mod range are rejected, so
// the rest is a whole number of copies of [0, range).
int64_t Rng::uniform(int64_t low, int64_t high) {
  expects(low <= high, "uniform(low, high) needs low <= high");
  // Unsigned arithmetic: well defined for any pair, and C++20 converts
  // back to int64 modulo 2^64.
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low) + 1;
  if (range == 0) return static_cast<int64_t>(next());  // the whole 64-bit range
  const uint64_t reject_below = (0 - range) % range;
  uint64_t x = next();
  for (int tries = 0; x < reject_below && tries < kMaxRejections; ++tries) x = next();
  return static_cast<int64_t>(static_cast<uint64_t>(low) + x % range);
}

int64_t nurand(Rng& rng, int64_t a, int64_t x, int64_t y, int64_t c) {
  expects(a > 0 && x <= y && c >= 0 && c <= a, "NURand needs A > 0, x <= y, 0 <= C <= A");
  const int64_t high_bits = rng.uniform(0, a);
  const int64_t value = rng.uniform(x, y);
  return (((high_bits | value) + c) % (y - x + 1)) + x;
}

NurandConstants nurand_constants(uint64_t seed) {
  Rng rng(derive_seed(seed, kPurposeRunConstants, 0, 0));
  NurandConstants c;
  c.customer = rng.uniform(0, kNurandCustomerA);
  c.item = rng.uniform(0, kNurandItemA);
  return c;
}

// ---- the initial population -------------------------------------------------

void generate_load(const LoadConfig& config, RowSink& sink) {
  expects(config.warehouses >= 1 && config.warehouses <= kMaxWarehouses, "1 <= warehouses <= kMaxWarehouses");
  expects(config.batch_rows >= 1 && config.batch_rows <= kMaxBatchRows, "1 <= batch_rows <= kMaxBatchRows");
  load_items(config, sink);
  load_warehouses(config, sink);
  load_districts(config, sink);
  load_customers(config, sink);
  load_history(config, sink);
  load_orders(config, sink);
  load_new_orders(config, sink);
  load_order_lines(config, sink);
  load_stock(config, sink);
}

LoadRequestWriter::LoadRequestWriter(std::function<void(const std::string&)> emit, uint64_t first_id)
    : emit_(std::move(emit)), next_id_(first_id) {}

template <typename Row>
void LoadRequestWriter::write(std::string_view event, std::span<const Row> rows) {
  line_.clear();
  line_ += "{\"event\":\"";
  line_ += event;
  line_ += "\",\"args\":{\"rows\":[";
  bool first = true;
  for (const Row& r : rows) {
    if (!first) line_ += ',';
    first = false;
    append_json(line_, r);
  }
  line_ += "]},\"id\":";
  line_ += std::to_string(next_id_++);
  line_ += '}';
  emit_(line_);
}

void LoadRequestWriter::items(std::span<const ItemRow> rows) { write("load_items", rows); }
void LoadRequestWriter::warehouses(std::span<const WarehouseRow> rows) { write("load_warehouses", rows); }
void LoadRequestWriter::districts(std::span<const DistrictRow> rows) { write("load_districts", rows); }
void LoadRequestWriter::customers(std::span<const CustomerRow> rows) { write("load_customers", rows); }
void LoadRequestWriter::history(std::span<const HistoryRow> rows) { write("load_history", rows); }
void LoadRequestWriter::orders(std::span<const OrderRow> rows) { write("load_orders", rows); }
void LoadRequestWriter::new_orders(std::span<const NewOrderRow> rows) { write("load_new_orders", rows); }
void LoadRequestWriter::order_lines(std::span<const OrderLineRow> rows) { write("load_order_lines", rows); }
void LoadRequestWriter::stock(std::span<const StockRow> rows) { write("load_stock", rows); }

void append_json(std::string& out, const ItemRow& r) {
  ObjectWriter(out).num("id", r.id).num("price", r.price).num("image", r.image).close();
}

void append_json(std::string& out, const WarehouseRow& r) {
  ObjectWriter(out).num("id", r.id).num("tax", r.tax).num("ytd", r.ytd).close();
}

void append_json(std::string& out, const DistrictRow& r) {
  ObjectWriter(out).num("id", r.id).num("w", r.w).num("d", r.d).num("tax", r.tax).num("ytd", r.ytd)
      .num("next_order", r.next_order).close();
}

void append_json(std::string& out, const CustomerRow& r) {
  ObjectWriter(out).num("id", r.id).num("w", r.w).num("d", r.d).num("c", r.c).num("discount", r.discount)
      .str("credit", r.credit).num("balance", r.balance).num("ytd_payment", r.ytd_payment)
      .num("payment_cnt", r.payment_cnt).num("delivery_cnt", r.delivery_cnt).close();
}

void append_json(std::string& out, const HistoryRow& r) {
  ObjectWriter(out).num("id", r.id).num("c", r.c).num("c_d", r.c_d).num("c_w", r.c_w).num("d", r.d)
      .num("w", r.w).num("date", r.date).num("amount", r.amount).close();
}

void append_json(std::string& out, const OrderRow& r) {
  ObjectWriter(out).num("id", r.id).num("w", r.w).num("d", r.d).num("o", r.o).num("customer", r.customer)
      .num("entry", r.entry).num("carrier", r.carrier).num("lines", r.lines).num("all_local", r.all_local)
      .close();
}

void append_json(std::string& out, const NewOrderRow& r) { ObjectWriter(out).num("id", r.id).close(); }

void append_json(std::string& out, const OrderLineRow& r) {
  ObjectWriter(out).num("id", r.id).num("order", r.order).num("number", r.number).num("item", r.item)
      .num("supply", r.supply).num("delivery", r.delivery).num("quantity", r.quantity)
      .num("amount", r.amount).close();
}

void append_json(std::string& out, const StockRow& r) {
  ObjectWriter(out).num("id", r.id).num("w", r.w).num("item", r.item).num("quantity", r.quantity)
      .num("ytd", r.ytd).num("order_cnt", r.order_cnt).num("remote_cnt", r.remote_cnt).close();
}

// ---- the transactions ---------------------------------------------------------

TxKind kind_of(const Transaction& tx) { return static_cast<TxKind>(tx.index()); }

std::string_view name_of(TxKind kind) {
  switch (kind) {
    case TxKind::new_order: return "new_order";
    case TxKind::payment: return "payment";
    case TxKind::order_status: return "order_status";
    case TxKind::delivery: return "delivery";
    case TxKind::stock_level: return "stock_level";
  }
  return "?";
}

TerminalHome terminal_home(int64_t warehouses, uint32_t terminal) {
  expects(warehouses >= 1 && warehouses <= kMaxWarehouses, "1 <= warehouses <= kMaxWarehouses");
  const int64_t t = terminal;
  return {t % warehouses + 1, (t / warehouses) % kDistrictsPerWarehouse + 1};
}

TransactionGenerator::TransactionGenerator(const RunConfig& config, uint32_t terminal)
    : warehouses_(config.warehouses),
      home_(terminal_home(config.warehouses, terminal)),
      c_(nurand_constants(config.seed)),
      rng_(derive_seed(config.seed, kPurposeTerminal, terminal, 0)) {
  expects(terminal < kMaxTerminals, "terminal < kMaxTerminals");
}

Transaction TransactionGenerator::next() {
  const int64_t x = rng_.uniform(1, 100);
  if (x <= kNewOrderUpTo) return new_order();
  if (x <= kPaymentUpTo) return payment();
  if (x <= kOrderStatusUpTo) {
    int64_t d = rng_.uniform(1, kDistrictsPerWarehouse);
    return OrderStatusTx{home_.w, d, nurand(rng_, kNurandCustomerA, 1, kCustomersPerDistrict, c_.customer)};
  }
  if (x <= kDeliveryUpTo) {
    // The module delivers one district per event (clause 2.7.4 allows
    // it); the district is drawn so that all ten are served evenly.
    int64_t d = rng_.uniform(1, kDistrictsPerWarehouse);
    return DeliveryTx{home_.w, d, rng_.uniform(1, 10)};
  }
  return StockLevelTx{home_.w, home_.d, rng_.uniform(10, 20)};
}

// Uniform over the warehouses other than the home one; W > 1.
int64_t TransactionGenerator::remote_warehouse() {
  int64_t r = rng_.uniform(1, warehouses_ - 1);
  return r >= home_.w ? r + 1 : r;
}

// Clause 2.4.1. Every draw happens whatever W is, so a one-warehouse
// stream differs from a many-warehouse one only where remote choices
// are made.
NewOrderTx TransactionGenerator::new_order() {
  NewOrderTx t;
  t.w = home_.w;
  t.d = rng_.uniform(1, kDistrictsPerWarehouse);
  t.c = nurand(rng_, kNurandCustomerA, 1, kCustomersPerDistrict, c_.customer);
  const int64_t count = rng_.uniform(kMinOrderLines, kMaxOrderLines);
  t.rollback = rng_.uniform(1, 100) == 1;
  t.lines.reserve(static_cast<size_t>(count));
  for (int64_t n = 0; n < count; ++n) {
    LineInput l;
    l.item = nurand(rng_, kNurandItemA, 1, kItems, c_.item);
    const bool remote = rng_.uniform(1, 100) == 1;
    l.supply = remote && warehouses_ > 1 ? remote_warehouse() : home_.w;
    l.quantity = rng_.uniform(1, 10);
    t.lines.push_back(l);
  }
  // The last line, so that every valid line is processed before the
  // unknown item fails the order (clause 2.4.2.3).
  if (t.rollback) t.lines.back().item = kUnusedItem;
  return t;
}

// Clause 2.5.1, always selecting the customer by number.
PaymentTx TransactionGenerator::payment() {
  PaymentTx t;
  t.w = home_.w;
  t.d = rng_.uniform(1, kDistrictsPerWarehouse);
  const bool remote = rng_.uniform(1, 100) > 85;
  if (remote && warehouses_ > 1) {
    t.c_w = remote_warehouse();
    t.c_d = rng_.uniform(1, kDistrictsPerWarehouse);
  } else {
    t.c_w = t.w;
    t.c_d = t.d;
  }
  t.c = nurand(rng_, kNurandCustomerA, 1, kCustomersPerDistrict, c_.customer);
  t.amount = rng_.uniform(100, 500'000);  // 1.00..5,000.00
  return t;
}

void append_request_json(std::string& out, const Transaction& tx, uint64_t id) {
  const TxKind kind = kind_of(tx);
  // Order-Status and Stock-Level are read-only: the module declares them
  // as queries.
  const bool query = kind == TxKind::order_status || kind == TxKind::stock_level;
  out += query ? "{\"query\":\"" : "{\"event\":\"";
  out += name_of(kind);
  out += "\",\"args\":";
  std::visit([&out](const auto& t) { append_args(out, t); }, tx);
  out += ",\"id\":";
  out += std::to_string(id);
  out += '}';
}

std::string request_json(const Transaction& tx, uint64_t id) {
  std::string out;
  append_request_json(out, tx, id);
  return out;
}

void RunCounts::add(const Transaction& tx) {
  ++per_kind[static_cast<int>(kind_of(tx))];
  if (const auto* no = std::get_if<NewOrderTx>(&tx)) {
    if (no->rollback) ++rollbacks;
    order_lines += static_cast<int64_t>(no->lines.size());
    for (const LineInput& l : no->lines) {
      if (l.supply != no->w) ++remote_order_lines;
    }
  } else if (const auto* p = std::get_if<PaymentTx>(&tx)) {
    if (p->c_w != p->w) ++remote_payments;
  }
}

int64_t RunCounts::total() const {
  int64_t sum = 0;
  for (int64_t n : per_kind) sum += n;
  return sum;
}

std::string RunCounts::json() const {
  std::string out;
  ObjectWriter o(out);
  o.num("transactions", total());
  for (int k = 0; k < kTxKinds; ++k) o.num(name_of(static_cast<TxKind>(k)), per_kind[k]);
  o.num("rollbacks", rollbacks).num("order_lines", order_lines).num("remote_order_lines", remote_order_lines)
      .num("remote_payments", remote_payments);
  o.close();
  return out;
}

}  // namespace aup::tpcc

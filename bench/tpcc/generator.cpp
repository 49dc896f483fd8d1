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
  kPurposeCustomerNames,  // every string of CUSTOMER, not only the names
  kPurposeItemStrings,
  kPurposeWarehouseStrings,
  kPurposeDistrictStrings,
  kPurposeHistoryStrings,
  kPurposeOrderLineStrings,
  kPurposeStockStrings,
};

// The spec's initial money values (clause 4.3.3.1), in cents.
constexpr int64_t kWarehouseYtdCents = 30'000'000;  // 300,000.00
constexpr int64_t kDistrictYtdCents = 3'000'000;    // 30,000.00
constexpr int64_t kCustomerBalanceCents = -1000;    // -10.00
constexpr int64_t kCustomerCreditLimitCents = 5'000'000;  // 50,000.00
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

// A random a-string (clause 4.3.2.2) of low..high characters. The
// characters are the 62 letters and digits, not the 128 the clause asks
// for: they need no escaping in JSON and sort alike as UTF-8 bytes (aup)
// and under SQLite's BINARY collation.
std::string a_string(Rng& rng, int64_t low, int64_t high) {
  static constexpr std::string_view kChars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  const int64_t n = rng.uniform(low, high);
  std::string out(static_cast<size_t>(n), ' ');
  for (char& ch : out) ch = kChars[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(kChars.size()) - 1))];
  return out;
}

// "dist_01" .. "dist_10": S_DIST_xx as tpcc.aup names the fields.
std::string fmt_dist(size_t n) { return n < 10 ? "dist_0" + std::to_string(n) : "dist_" + std::to_string(n); }

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

// ---- the strings of clause 4.3.3.1 ---------------------------------------------

// A random n-string (clause 4.3.2.2): `n` digits.
std::string n_string(Rng& rng, int64_t n) {
  std::string out(static_cast<size_t>(n), '0');
  for (char& ch : out) ch = static_cast<char>('0' + rng.uniform(0, 9));
  return out;
}

Address address(Rng& rng) {
  Address a;
  a.street_1 = a_string(rng, 10, 20);
  a.street_2 = a_string(rng, 10, 20);
  a.city = a_string(rng, 10, 20);
  a.state = a_string(rng, 2, 2);
  a.zip = n_string(rng, 4) + "11111";
  return a;
}

// I_DATA and S_DATA: 26..50 characters, "ORIGINAL" at a random place in 10%.
std::string data_with_original(Rng& rng) {
  std::string data = a_string(rng, 26, 50);
  if (rng.uniform(1, 100) <= 10) {
    constexpr std::string_view kOriginal = "ORIGINAL";
    const auto at = static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(data.size() - kOriginal.size())));
    data.replace(at, kOriginal.size(), kOriginal);
  }
  return data;
}

uint64_t u(int64_t x) { return static_cast<uint64_t>(x); }

// ---- the tables ------------------------------------------------------------------

void load_items(const LoadConfig& config, RowSink& sink) {
  Rng rng(derive_seed(config.seed, kPurposeItems, 0, 0));
  Rng strings(derive_seed(config.seed, kPurposeItemStrings, 0, 0));
  Batcher<ItemRow> out(config.batch_rows, sink, &RowSink::items);
  for (int64_t i = 1; i <= kItems; ++i) {
    int64_t price = rng.uniform(100, 10'000);  // 1.00..100.00
    int64_t image = rng.uniform(1, 10'000);
    ItemRow r{i, image, a_string(strings, 14, 24), price, ""};
    r.data = data_with_original(strings);
    out.add(r);
  }
  out.finish();
}

void load_warehouses(const LoadConfig& config, RowSink& sink) {
  Rng rng(derive_seed(config.seed, kPurposeWarehouses, 0, 0));
  Rng strings(derive_seed(config.seed, kPurposeWarehouseStrings, 0, 0));
  Batcher<WarehouseRow> out(config.batch_rows, sink, &RowSink::warehouses);
  for (int64_t w = 1; w <= config.warehouses; ++w) {
    int64_t tax = rng.uniform(0, kMaxTaxRate);
    std::string name = a_string(strings, 6, 10);
    out.add({w, std::move(name), address(strings), tax, kWarehouseYtdCents});
  }
  out.finish();
}

void load_districts(const LoadConfig& config, RowSink& sink) {
  Batcher<DistrictRow> out(config.batch_rows, sink, &RowSink::districts);
  for (int64_t w = 1; w <= config.warehouses; ++w) {
    Rng rng(derive_seed(config.seed, kPurposeDistricts, u(w), 0));
    Rng strings(derive_seed(config.seed, kPurposeDistrictStrings, u(w), 0));
    for (int64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      int64_t tax = rng.uniform(0, kMaxTaxRate);
      std::string name = a_string(strings, 6, 10);
      out.add({w, d, std::move(name), address(strings), tax, kDistrictYtdCents, kOrdersPerDistrict + 1});
    }
  }
  out.finish();
}

// C_LAST (clause 4.3.3.1): customers 1..1000 take the names of 0..999 in
// turn, so every name is in every district; the rest draw NURand(255).
std::string load_last_name(Rng& rng, int64_t c, int64_t nurand_c) {
  if (c <= 1000) return last_name(c - 1);
  return last_name(nurand(rng, kNurandLastA, 0, 999, nurand_c));
}

// One customer's strings, from the district's string stream.
void customer_strings(Rng& strings, int64_t c, int64_t nurand_c, CustomerRow& r) {
  r.first = a_string(strings, kMinFirstName, kMaxFirstName);
  r.middle = "OE";
  r.last = load_last_name(strings, c, nurand_c);
  r.address = address(strings);
  r.phone = n_string(strings, 16);
  r.data = a_string(strings, 300, 500);
}

void load_customers(const LoadConfig& config, RowSink& sink) {
  Batcher<CustomerRow> out(config.batch_rows, sink, &RowSink::customers);
  const NurandConstants constants = nurand_constants(config.seed);
  for (int64_t w = 1; w <= config.warehouses; ++w) {
    for (int64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      Rng rng(derive_seed(config.seed, kPurposeCustomers, u(w), u(d)));
      // Strings from a stream of their own, so the numbers above stay as
      // they were when strings were added.
      Rng strings(derive_seed(config.seed, kPurposeCustomerNames, u(w), u(d)));
      for (int64_t c = 1; c <= kCustomersPerDistrict; ++c) {
        CustomerRow r;
        r.w = w, r.d = d, r.c = c;
        r.discount = rng.uniform(0, kMaxDiscountRate);
        r.credit = rng.uniform(1, 100) <= 10 ? "BC" : "GC";  // bad credit: 10%
        customer_strings(strings, c, constants.last_load, r);
        r.since = config.load_time_ms;
        r.credit_lim = kCustomerCreditLimitCents;
        r.balance = kCustomerBalanceCents;
        r.ytd_payment = kCustomerYtdPaymentCents;
        r.payment_cnt = 1;
        r.delivery_cnt = 0;
        out.add(r);
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
      Rng strings(derive_seed(config.seed, kPurposeHistoryStrings, u(w), u(d)));
      for (int64_t c = 1; c <= kCustomersPerDistrict; ++c) {
        out.add({id++, c, d, w, d, w, config.load_time_ms, kHistoryAmountCents, a_string(strings, 12, 24)});
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
        out.add({w, d, o, lo.customer, config.load_time_ms, lo.carrier, lo.lines, 1});
      }
    }
  }
  out.finish();
}

void load_new_orders(const LoadConfig& config, RowSink& sink) {
  Batcher<NewOrderRow> out(config.batch_rows, sink, &RowSink::new_orders);
  for (int64_t w = 1; w <= config.warehouses; ++w) {
    for (int64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      for (int64_t o = kFirstUndeliveredOrder; o <= kOrdersPerDistrict; ++o) out.add({w, d, o});
    }
  }
  out.finish();
}

void load_order_lines(const LoadConfig& config, RowSink& sink) {
  Batcher<OrderLineRow> out(config.batch_rows, sink, &RowSink::order_lines);
  for (int64_t w = 1; w <= config.warehouses; ++w) {
    for (int64_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
      std::vector<LoadOrder> orders = district_orders(config.seed, w, d);
      Rng rng(derive_seed(config.seed, kPurposeOrderLines, u(w), u(d)));
      Rng strings(derive_seed(config.seed, kPurposeOrderLineStrings, u(w), u(d)));
      for (int64_t o = 1; o <= kOrdersPerDistrict; ++o) {
        const bool delivered = o < kFirstUndeliveredOrder;
        const int64_t lines = orders[static_cast<size_t>(o - 1)].lines;
        for (int64_t n = 1; n <= lines; ++n) {
          int64_t item = rng.uniform(1, kItems);  // uniform at load, not NURand
          int64_t amount = delivered ? 0 : rng.uniform(1, 999'999);  // 0.01..9,999.99
          out.add({w, d, o, n, item, w, delivered ? config.load_time_ms : 0, kLoadOrderLineQuantity, amount,
                   a_string(strings, 24, 24)});
        }
      }
    }
  }
  out.finish();
}

void load_stock(const LoadConfig& config, RowSink& sink) {
  Batcher<StockRow> out(config.batch_rows, sink, &RowSink::stock);
  for (int64_t w = 1; w <= config.warehouses; ++w) {
    Rng rng(derive_seed(config.seed, kPurposeStock, u(w), 0));
    Rng strings(derive_seed(config.seed, kPurposeStockStrings, u(w), 0));
    for (int64_t i = 1; i <= kItems; ++i) {
      StockRow r{w, i, rng.uniform(10, 100), {}, 0, 0, 0, ""};
      for (std::string& dist : r.dist) dist = a_string(strings, 24, 24);
      r.data = data_with_original(strings);
      out.add(r);
    }
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
      .str("last", t.last).num("amount", t.amount).close();
}

void append_args(std::string& out, const OrderStatusTx& t) {
  ObjectWriter(out).num("w", t.w).num("d", t.d).num("c", t.c).str("last", t.last).close();
}

void append_args(std::string& out, const DeliveryTx& t) {
  ObjectWriter(out).num("w", t.w).num("carrier", t.carrier).close();
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
  c.last_load = rng.uniform(0, kNurandLastA);
  // A delta in 65..119 other than 96 and 112, added or taken away so that
  // last_run stays within 0..255 (clause 2.1.6.1).
  int64_t delta = 96;
  while (delta == 96 || delta == 112) delta = rng.uniform(65, 119);
  c.last_run = c.last_load + delta <= kNurandLastA ? c.last_load + delta : c.last_load - delta;
  return c;
}

std::string last_name(int64_t n) {
  expects(n >= 0 && n <= 999, "a last name's number is 0..999");
  static constexpr std::string_view kSyllables[10] = {"BAR", "OUGHT", "ABLE",  "PRI",   "PRES",
                                                      "ESE", "ANTI",  "CALLY", "ATION", "EING"};
  std::string out;
  out += kSyllables[n / 100];
  out += kSyllables[n / 10 % 10];
  out += kSyllables[n % 10];
  return out;
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
  ObjectWriter o(out);
  o.num("id", r.id).num("image", r.image).str("name", r.name).num("price", r.price).str("data", r.data).close();
}

namespace {

void append_address(ObjectWriter& o, const Address& a) {
  o.str("street_1", a.street_1).str("street_2", a.street_2).str("city", a.city).str("state", a.state)
      .str("zip", a.zip);
}

}  // namespace

void append_json(std::string& out, const WarehouseRow& r) {
  ObjectWriter o(out);
  o.num("id", r.id).str("name", r.name);
  append_address(o, r.address);
  o.num("tax", r.tax).num("ytd", r.ytd).close();
}

void append_json(std::string& out, const DistrictRow& r) {
  ObjectWriter o(out);
  o.num("w", r.w).num("d", r.d).str("name", r.name);
  append_address(o, r.address);
  o.num("tax", r.tax).num("ytd", r.ytd).num("next_order", r.next_order).close();
}

void append_json(std::string& out, const CustomerRow& r) {
  ObjectWriter o(out);
  o.num("w", r.w).num("d", r.d).num("c", r.c).str("first", r.first).str("middle", r.middle).str("last", r.last);
  append_address(o, r.address);
  o.str("phone", r.phone).num("since", r.since).str("credit", r.credit).num("credit_lim", r.credit_lim)
      .num("discount", r.discount).num("balance", r.balance).num("ytd_payment", r.ytd_payment)
      .num("payment_cnt", r.payment_cnt).num("delivery_cnt", r.delivery_cnt).str("data", r.data).close();
}

void append_json(std::string& out, const HistoryRow& r) {
  ObjectWriter(out).num("id", r.id).num("c", r.c).num("c_d", r.c_d).num("c_w", r.c_w).num("d", r.d)
      .num("w", r.w).num("date", r.date).num("amount", r.amount).str("data", r.data).close();
}

void append_json(std::string& out, const OrderRow& r) {
  ObjectWriter(out).num("w", r.w).num("d", r.d).num("o", r.o).num("customer", r.customer)
      .num("entry", r.entry).num("carrier", r.carrier).num("lines", r.lines).num("all_local", r.all_local)
      .close();
}

void append_json(std::string& out, const NewOrderRow& r) {
  ObjectWriter(out).num("w", r.w).num("d", r.d).num("o", r.o).close();
}

void append_json(std::string& out, const OrderLineRow& r) {
  ObjectWriter(out).num("w", r.w).num("d", r.d).num("o", r.o).num("number", r.number).num("item", r.item)
      .num("supply", r.supply).num("delivery", r.delivery).num("quantity", r.quantity)
      .num("amount", r.amount).str("dist_info", r.dist_info).close();
}

void append_json(std::string& out, const StockRow& r) {
  ObjectWriter o(out);
  o.num("w", r.w).num("item", r.item).num("quantity", r.quantity);
  for (size_t i = 0; i < r.dist.size(); ++i) o.str(fmt_dist(i + 1), r.dist[i]);
  o.num("ytd", r.ytd).num("order_cnt", r.order_cnt).num("remote_cnt", r.remote_cnt).str("data", r.data).close();
}

std::string payment_entry(int64_t c, int64_t c_d, int64_t c_w, int64_t d, int64_t w, int64_t amount) {
  expects(amount > 0, "a payment is positive");
  std::string cents = std::to_string(amount % 100);
  if (cents.size() < 2) cents.insert(0, "0");
  return std::to_string(c) + " " + std::to_string(c_d) + " " + std::to_string(c_w) + " " + std::to_string(d) + " " +
         std::to_string(w) + " " + std::to_string(amount / 100) + "." + cents + " | ";
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
  if (x <= kOrderStatusUpTo) return order_status();
  if (x <= kDeliveryUpTo) return DeliveryTx{home_.w, rng_.uniform(1, 10)};
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

// Clauses 2.5.1.2 and 2.6.1.2: 60% by a NURand last name, else by a
// NURand number.
void TransactionGenerator::choose_customer(int64_t& c, std::string& last) {
  if (rng_.uniform(1, 100) <= kByNamePercent) {
    c = 0;
    last = last_name(nurand(rng_, kNurandLastA, 0, 999, c_.last_run));
  } else {
    c = nurand(rng_, kNurandCustomerA, 1, kCustomersPerDistrict, c_.customer);
    last.clear();
  }
}

// Clause 2.6.1.
OrderStatusTx TransactionGenerator::order_status() {
  OrderStatusTx t;
  t.w = home_.w;
  t.d = rng_.uniform(1, kDistrictsPerWarehouse);
  choose_customer(t.c, t.last);
  return t;
}

// Clause 2.5.1.
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
  choose_customer(t.c, t.last);
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
    if (!p->last.empty()) ++by_name;
  } else if (const auto* os = std::get_if<OrderStatusTx>(&tx)) {
    if (!os->last.empty()) ++by_name;
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
      .num("remote_payments", remote_payments).num("by_name", by_name);
  o.close();
  return out;
}

}  // namespace aup::tpcc

#include "bench/tpcc/aup_answers.h"

#include <fmt/format.h>

#include <string_view>
#include <variant>

namespace aup::tpcc {

namespace {

// The start of tpcc.aup's message for an unused item number (its position
// in the module follows). Any other `fail` of a New-Order is a bug in the
// generator or the module, not the 1% rollback.
constexpr std::string_view kUnusedItemMessage = "item number is not valid";

// Every line of an Order-Status gives five numbers after the four of the
// customer and order: item, supply, quantity, amount, delivered.
constexpr size_t kOrderStatusHead = 4;
constexpr size_t kOrderStatusPerLine = 5;

// The rollback answer: ok false, code `failed`, the module's message.
TxResult rollback_result(const JsonLine& a) {
  if (a.boolean(a.member(a.root(), "ok"))) a.fail("a New-Order with an unused item committed instead of rolling back");
  uint32_t error = a.member(a.root(), "error");
  if (a.text(a.member(error, "code")) != "failed" ||
      a.text(a.member(error, "message")).substr(0, kUnusedItemMessage.size()) != kUnusedItemMessage) {
    a.fail(fmt::format("expected the rollback (`failed`, \"{}\")", kUnusedItemMessage));
  }
  return TxResult{Outcome::rolled_back, {}};
}

// new_order: {order, lines, total, brands: "BGG..." one letter per line}.
void read_values(const JsonLine& a, uint32_t r, const NewOrderTx&, std::vector<int64_t>& v) {
  v = {a.whole(r, "order"), a.whole(r, "lines"), a.whole(r, "total")};
  std::string_view brands = a.text(a.member(r, "brands"));
  if (static_cast<int64_t>(brands.size()) != v[1]) a.fail(fmt::format("{} brands for {} lines", brands.size(), v[1]));
  v.push_back(brand_mask(brands));
  if (brands.find_first_not_of("BG") != std::string_view::npos) a.fail(fmt::format("brands `{}` are not B or G", brands));
}

void read_values(const JsonLine& a, uint32_t r, const PaymentTx&, std::vector<int64_t>& v) {
  std::string_view credit = a.text(a.member(r, "credit"));
  if (credit != "GC" && credit != "BC") a.fail(fmt::format("credit `{}` is neither GC nor BC", credit));
  v = {a.whole(r, "c"), a.whole(r, "balance"), credit == "BC" ? 1 : 0};
}

// order_status: {c, balance, order, entry, carrier, lines: [OrderLine...]};
// the lines are a view, so in key (= line number) order.
void read_values(const JsonLine& a, uint32_t r, const OrderStatusTx&, std::vector<int64_t>& v) {
  uint32_t lines = a.member(r, "lines");
  uint32_t count = a.node(lines).count;
  if (count > kMaxOrderLines) a.fail(fmt::format("{} order lines, more than {}", count, kMaxOrderLines));
  v = {a.whole(r, "c"), a.whole(r, "balance"), a.whole(r, "order"), a.whole(r, "carrier")};
  v.reserve(kOrderStatusHead + kOrderStatusPerLine * count);
  uint32_t line = a.first_item(lines);
  for (uint32_t i = 0; i < count; ++i, line = a.node(line).next) {
    v.push_back(a.whole(line, "item"));
    v.push_back(a.whole(line, "supply"));
    v.push_back(a.whole(line, "quantity"));
    v.push_back(a.whole(line, "amount"));
    v.push_back(a.whole(line, "delivery") != 0 ? 1 : 0);
  }
}

// delivery: {orders: [o or 0 for each of the ten districts]}.
void read_values(const JsonLine& a, uint32_t r, const DeliveryTx&, std::vector<int64_t>& v) {
  uint32_t orders = a.member(r, "orders");
  if (a.node(orders).count != kDistrictsPerWarehouse) {
    a.fail(fmt::format("{} districts delivered, not {}", a.node(orders).count, kDistrictsPerWarehouse));
  }
  v.clear();
  uint32_t item = a.first_item(orders);
  for (int64_t d = 0; d < kDistrictsPerWarehouse; ++d, item = a.node(item).next) v.push_back(a.whole(item));
}

void read_values(const JsonLine& a, uint32_t r, const StockLevelTx&, std::vector<int64_t>& v) {
  v = {a.whole(r, "low_stock")};
}

}  // namespace

TxResult tx_result(const Transaction& tx, uint64_t id, const JsonLine& answer) {
  check_id(answer, id);
  if (const NewOrderTx* no = std::get_if<NewOrderTx>(&tx); no && no->rollback) return rollback_result(answer);
  uint32_t result = ok_result(answer, id);
  TxResult out;
  std::visit([&](const auto& t) { read_values(answer, result, t, out.values); }, tx);
  return out;
}

TableCounts table_counts(const JsonLine& answer, uint32_t result) {
  TableCounts counts;
  const auto& specs = table_specs();
  for (int t = 0; t < kTables; ++t) {
    int64_t rows = answer.whole(result, specs[t].name);
    if (rows < 0) answer.fail(fmt::format("{} rows in {}", rows, specs[t].name));
    counts.rows[t] = static_cast<uint64_t>(rows);
  }
  return counts;
}

std::vector<std::string> consistency_problems(const JsonLine& answer, uint32_t result, int64_t warehouse) {
  bool ok = answer.boolean(answer.member(result, "ok"));
  uint32_t problems = answer.member(result, "problems");
  uint32_t count = answer.node(problems).count;
  std::vector<std::string> out;
  uint32_t p = answer.first_item(problems);
  for (uint32_t i = 0; i < count; ++i, p = answer.node(p).next) {
    out.push_back(fmt::format("warehouse {}: {}", warehouse, answer.text(p)));
  }
  if (ok != out.empty()) answer.fail("`ok` disagrees with the problems");
  return out;
}

}  // namespace aup::tpcc

#include "bench/tpcc/state.h"

#include <fmt/format.h>

#include <algorithm>

namespace aup::tpcc {

namespace {

constexpr ColumnKind N = ColumnKind::number;

// A value as same-state shows it.
std::string show(const Value& v) {
  if (const int64_t* n = std::get_if<int64_t>(&v)) return std::to_string(*n);
  return fmt::format("\"{}\"", std::get<std::string>(v));
}

std::string show(const TableSpec& spec, const Row& row) {
  std::string out = "{";
  for (size_t i = 0; i < row.size() && i < spec.columns.size(); ++i) {
    if (i) out += ", ";
    out += fmt::format("{}: {}", spec.columns[i].name, show(row[i]));
  }
  return out + "}";
}

// Whether one field agrees, as its column's kind says.
bool same_field(ColumnKind kind, const Value& a, const Value& b) {
  switch (kind) {
    case ColumnKind::time:
      return true;
    case ColumnKind::time_or_zero: {
      const int64_t* x = std::get_if<int64_t>(&a);
      const int64_t* y = std::get_if<int64_t>(&b);
      return x && y && (*x == 0) == (*y == 0);
    }
    case ColumnKind::number:
    case ColumnKind::text:
      return a == b;
  }
  return false;
}

bool same_row(const TableSpec& spec, const Row& a, const Row& b) {
  if (a.size() != spec.columns.size() || b.size() != spec.columns.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same_field(spec.columns[i].kind, a[i], b[i])) return false;
  }
  return true;
}

// Walks two key-ordered tables side by side.
uint64_t compare_table(const TableSpec& spec, const TableRows& a, const TableRows& b, std::string_view a_name,
                       std::string_view b_name, std::FILE* out, uint64_t max_shown) {
  uint64_t differences = 0;
  auto report = [&](const std::string& what) {
    if (differences < max_shown) std::fprintf(out, "%.*s: %s\n", int(spec.name.size()), spec.name.data(), what.c_str());
    ++differences;
  };
  size_t i = 0, j = 0;
  while (i < a.rows.size() || j < b.rows.size()) {
    const bool a_first = j == b.rows.size() || (i < a.rows.size() && key_less(spec, a.rows[i], b.rows[j]));
    const bool b_first = i == a.rows.size() || (j < b.rows.size() && key_less(spec, b.rows[j], a.rows[i]));
    if (a_first) {
      report(fmt::format("only {} has {}", a_name, show(spec, a.rows[i++])));
    } else if (b_first) {
      report(fmt::format("only {} has {}", b_name, show(spec, b.rows[j++])));
    } else {
      if (!same_row(spec, a.rows[i], b.rows[j])) {
        report(fmt::format("{} has {}\n  {} has {}", a_name, show(spec, a.rows[i]), b_name, show(spec, b.rows[j])));
      }
      ++i, ++j;
    }
  }
  if (differences > max_shown) {
    std::fprintf(out, "%.*s: %llu more differing rows\n", int(spec.name.size()), spec.name.data(),
                 static_cast<unsigned long long>(differences - max_shown));
  }
  return differences;
}

}  // namespace

const std::array<TableSpec, kTables>& table_specs() {
  // tpcc.aup's records, field for field. The mean length of a text is
  // the middle of the range the generator draws it from (clause 4.3.3.1).
  constexpr ColumnKind T = ColumnKind::text;
  auto with_address = [](std::vector<ColumnSpec> head, std::vector<ColumnSpec> tail) {
    for (ColumnSpec c : std::vector<ColumnSpec>{
             {"street_1", T, 15}, {"street_2", T, 15}, {"city", T, 15}, {"state", T, 2}, {"zip", T, 9}}) {
      head.push_back(c);
    }
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  std::vector<ColumnSpec> customer_tail{{"phone", T, 16}, {"since", N}, {"credit", T, 2}, {"credit_lim", N},
                                        {"discount", N}, {"balance", N}, {"ytd_payment", N}, {"payment_cnt", N},
                                        {"delivery_cnt", N}, {"data", T, 400}};
  std::vector<ColumnSpec> stock{{"w", N}, {"item", N}, {"quantity", N}};
  for (std::string_view dist : kStockDistColumns) stock.push_back({dist, T, 24});
  for (ColumnSpec c : std::vector<ColumnSpec>{
           {"ytd", N}, {"order_cnt", N}, {"remote_cnt", N}, {"data", T, 38}}) {
    stock.push_back(c);
  }
  static const std::array<TableSpec, kTables> specs{{
      {"items", {{"id", N}, {"image", N}, {"name", T, 19}, {"price", N}, {"data", T, 38}}, 1},
      {"warehouses", with_address({{"id", N}, {"name", T, 8}}, {{"tax", N}, {"ytd", N}}), 1},
      {"districts", with_address({{"w", N}, {"d", N}, {"name", T, 8}}, {{"tax", N}, {"ytd", N}, {"next_order", N}}),
       2},
      {"customers",
       with_address({{"w", N}, {"d", N}, {"c", N}, {"first", T, 12}, {"middle", T, 2}, {"last", T, 12}},
                    customer_tail),
       3},
      {"history",
       {{"id", N}, {"c", N}, {"c_d", N}, {"c_w", N}, {"d", N}, {"w", N}, {"date", ColumnKind::time}, {"amount", N},
        {"data", T, 18}},
       1},
      {"orders",
       {{"w", N}, {"d", N}, {"o", N}, {"customer", N}, {"entry", ColumnKind::time}, {"carrier", N}, {"lines", N},
        {"all_local", N}},
       3},
      {"new_orders", {{"w", N}, {"d", N}, {"o", N}}, 3},
      {"order_lines",
       {{"w", N}, {"d", N}, {"o", N}, {"number", N}, {"item", N}, {"supply", N},
        {"delivery", ColumnKind::time_or_zero}, {"quantity", N}, {"amount", N}, {"dist_info", T, 24}},
       4},
      {"stock", stock, 2},
  }};
  return specs;
}

uint64_t TableCounts::total() const {
  uint64_t sum = 0;
  for (uint64_t n : rows) sum += n;
  return sum;
}

uint64_t state_bytes(const TableCounts& counts) {
  constexpr uint64_t kNumberBytes = 8;
  uint64_t bytes = 0;
  const auto& specs = table_specs();
  for (int t = 0; t < kTables; ++t) {
    for (const ColumnSpec& c : specs[t].columns) {
      bytes += counts.rows[t] * (c.kind == ColumnKind::text ? c.mean_text_bytes : kNumberBytes);
    }
  }
  return bytes;
}

TableCounts counts_of(const State& s) {
  TableCounts c;
  for (int t = 0; t < kTables; ++t) c.rows[t] = s.tables[t].rows.size();
  return c;
}

bool key_less(const TableSpec& spec, const Row& a, const Row& b) {
  for (size_t i = 0; i < spec.key_columns && i < a.size() && i < b.size(); ++i) {
    if (a[i] < b[i]) return true;
    if (b[i] < a[i]) return false;
  }
  return false;
}

uint64_t compare_states(const State& a, const State& b, std::string_view a_name, std::string_view b_name,
                        std::FILE* out, uint64_t max_shown) {
  uint64_t differences = 0;
  const auto& specs = table_specs();
  for (int t = 0; t < kTables; ++t) {
    differences += compare_table(specs[t], a.tables[t], b.tables[t], a_name, b_name, out, max_shown);
  }
  return differences;
}

}  // namespace aup::tpcc

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

int64_t key_of(const Row& r) {
  const int64_t* k = r.empty() ? nullptr : std::get_if<int64_t>(&r[0]);
  return k ? *k : INT64_MIN;
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
    int64_t ka = i < a.rows.size() ? key_of(a.rows[i]) : INT64_MAX;
    int64_t kb = j < b.rows.size() ? key_of(b.rows[j]) : INT64_MAX;
    if (ka < kb) {
      report(fmt::format("only {} has {}", a_name, show(spec, a.rows[i++])));
    } else if (kb < ka) {
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
  // tpcc.aup's records, field for field.
  static const std::array<TableSpec, kTables> specs{{
      {"items", {{"id", N}, {"price", N}, {"image", N}}},
      {"warehouses", {{"id", N}, {"tax", N}, {"ytd", N}}},
      {"districts", {{"id", N}, {"w", N}, {"d", N}, {"tax", N}, {"ytd", N}, {"next_order", N}}},
      {"customers",
       {{"id", N}, {"w", N}, {"d", N}, {"c", N}, {"discount", N}, {"credit", ColumnKind::text}, {"balance", N},
        {"ytd_payment", N}, {"payment_cnt", N}, {"delivery_cnt", N}, {"last_order", N}}},
      {"history",
       {{"id", N}, {"c", N}, {"c_d", N}, {"c_w", N}, {"d", N}, {"w", N}, {"date", ColumnKind::time}, {"amount", N}}},
      {"orders",
       {{"id", N}, {"w", N}, {"d", N}, {"o", N}, {"customer", N}, {"entry", ColumnKind::time}, {"carrier", N},
        {"lines", N}, {"all_local", N}}},
      {"new_orders", {{"id", N}}},
      {"order_lines",
       {{"id", N}, {"order", N}, {"number", N}, {"item", N}, {"supply", N}, {"delivery", ColumnKind::time_or_zero},
        {"quantity", N}, {"amount", N}}},
      {"stock",
       {{"id", N}, {"w", N}, {"item", N}, {"quantity", N}, {"ytd", N}, {"order_cnt", N}, {"remote_cnt", N}}},
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
  constexpr uint64_t kCreditBytes = 2;  // "GC" or "BC"
  uint64_t bytes = 0;
  const auto& specs = table_specs();
  for (int t = 0; t < kTables; ++t) {
    for (const ColumnSpec& c : specs[t].columns) {
      bytes += counts.rows[t] * (c.kind == ColumnKind::text ? kCreditBytes : kNumberBytes);
    }
  }
  return bytes;
}

TableCounts counts_of(const State& s) {
  TableCounts c;
  for (int t = 0; t < kTables; ++t) c.rows[t] = s.tables[t].rows.size();
  return c;
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

// The nine tables as tpcc.aup declares them (names, columns in declaration
// order, which columns are times), every row of a store as plain values,
// and the comparison that same-state prints. Both backends fill a State in
// this shape: aup from `aup replay --dump`, SQLite from SELECTs over the
// same columns.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace aup::tpcc {

// How same-state compares a column.
enum class ColumnKind : uint8_t {
  number,        // equal values
  text,          // equal texts
  time,          // a clock reading (Order.entry, History.date): ignored
  time_or_zero,  // a clock reading or 0 for "not yet" (OrderLine.delivery): only zero/non-zero compared
};

struct ColumnSpec {
  std::string_view name;
  ColumnKind kind;
  // A text's mean length in bytes as the generator draws it (state_bytes);
  // 0 for numbers.
  uint32_t mean_text_bytes = 0;
};

struct TableSpec {
  std::string_view name;  // tpcc.aup's table name: "order_lines"
  std::vector<ColumnSpec> columns;  // the record's fields in order; the key's fields first
  size_t key_columns = 1;           // how many of the first columns are the key
};

constexpr int kTables = 9;

// Stock.dist_01 .. dist_10 (S_DIST_xx), as the module names them.
constexpr std::array<std::string_view, 10> kStockDistColumns{
    "dist_01", "dist_02", "dist_03", "dist_04", "dist_05", "dist_06", "dist_07", "dist_08", "dist_09", "dist_10"};

// The tables in the order the loader fills them: items, warehouses,
// districts, customers, history, orders, new_orders, order_lines, stock.
const std::array<TableSpec, kTables>& table_specs();

// One field: numbers are whole (money in cents, rates in ten-thousandths),
// so int64_t holds every value both backends store.
using Value = std::variant<int64_t, std::string>;
using Row = std::vector<Value>;  // in TableSpec::columns order

struct TableRows {
  std::vector<Row> rows;  // ascending by key (the first key_columns columns)
};

// Every row of every table, indexed as table_specs().
struct State {
  std::array<TableRows, kTables> tables;
};

// Rows per table, indexed as table_specs().
struct TableCounts {
  std::array<uint64_t, kTables> rows{};
  uint64_t total() const;
};

// The state's size as data: 8 bytes for each number and the mean bytes of
// each text column, over every row, computed the same way for every
// backend. What "resident memory / state bytes" divides by.
uint64_t state_bytes(const TableCounts& counts);

// The counts of a State.
TableCounts counts_of(const State& s);

// Compares two states row by row, table by table, as the column kinds say.
// Prints each difference to `out` (the first `max_shown` per table in full,
// the rest counted), naming the backends `a_name` and `b_name`. Returns the
// number of differing rows (a row only one side has counts once).
// Whether row a's key sorts before row b's (numbers numerically, texts by
// their bytes, as both backends order them).
bool key_less(const TableSpec& spec, const Row& a, const Row& b);

uint64_t compare_states(const State& a, const State& b, std::string_view a_name, std::string_view b_name,
                        std::FILE* out, uint64_t max_shown);

}  // namespace aup::tpcc

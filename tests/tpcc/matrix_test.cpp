// Tests of the matrix's cells with --connections (bench/tpcc/matrix.cpp)
// and of how the report shows them and the server CPU split into user and
// system (matrix_report.cpp, matrix_figures.cpp), from made-up figures: no
// run, no server.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "bench/common/report.h"
#include "bench/tpcc/matrix.h"
#include "bench/tpcc/matrix_figures.h"
#include "bench/tpcc/matrix_report.h"

namespace aup::tpcc {
namespace {

bool same_cells(const std::vector<MatrixCell>& a, const std::vector<MatrixCell>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].kind != b[i].kind || a[i].terminals != b[i].terminals || a[i].connections != b[i].connections) {
      return false;
    }
  }
  return true;
}

RunRecord record(const CellKey& key, double tx_per_s) {
  RunRecord r;
  r.cell = key;
  r.figures.transactions_per_s = tx_per_s;
  r.figures.cpu_us_per_transaction = 40.5;
  r.figures.user_us_per_transaction = 31.3;
  r.figures.system_us_per_transaction = 9.2;
  r.figures.state_bytes = 1e8;
  r.figures.resident_bytes = 2e8;
  return r;
}

TEST_SUITE("matrix") {
  TEST_CASE("no --connections keeps the cells as they are") {
    CHECK(same_cells(with_connections(default_cells(), {}), default_cells()));
  }

  TEST_CASE("--connections repeats each aup cell once per value, a connection per terminal at or above it") {
    std::vector<MatrixCell> cells{{"aup", 16}, {"sqlite", 4}, {"aup", 64}};
    std::vector<MatrixCell> expected{{"aup", 16, 0}, {"aup", 16, 8}, {"aup", 16, 2}, {"sqlite", 4, 0},
                                     {"aup", 64, 0}, {"aup", 64, 8}, {"aup", 64, 2}};
    CHECK(same_cells(with_connections(cells, {64, 8, 2}), expected));
    // 16 and 64 both mean a connection per terminal at 16: said once.
    std::vector<MatrixCell> once{{"aup", 16, 0}, {"aup", 16, 1}};
    CHECK(same_cells(with_connections({{"aup", 16}}, {16, 64, 1}), once));
  }

  TEST_CASE("the table and the JSON labels say each cell's connections and the CPU's user and system parts") {
    MatrixOptions o;
    o.media.push_back(MatrixMedium{"ram", "/dev/shm", false});
    o.warehouses = {1};
    o.cells = with_connections({{"aup", 64}, {"sqlite", 4}}, {64, 8});
    MatrixResults results;
    CellKey per_terminal{"ram", 1, "aup", 64, 0}, shared{"ram", 1, "aup", 64, 8}, sqlite{"ram", 1, "sqlite", 4, 0};
    results.runs = {record(per_terminal, 1000), record(shared, 2000), record(sqlite, 500)};
    std::string table = matrix_table(o, results);
    CHECK(table.find("| terminals | connections | tx/s |") != std::string::npos);
    CHECK(table.find("server CPU µs/tx | user µs/tx | system µs/tx |") != std::string::npos);
    CHECK(table.find("| ram | 1 | aup | 64 | 64 | 1,000 |") != std::string::npos);
    CHECK(table.find("| ram | 1 | aup | 64 | 8 | 2,000 |") != std::string::npos);
    CHECK(table.find("| ram | 1 | sqlite | 4 | – | 500 |") != std::string::npos);
    CHECK(table.find("| 40.5 | 31.3 | 9.2 |") != std::string::npos);
    CHECK(cell_labels_json(shared).find("\"terminals\":64,\"connections\":8") != std::string::npos);
    CHECK(cell_labels_json(per_terminal).find("\"connections\":64") != std::string::npos);
    CHECK(cell_labels_json(sqlite).find("\"connections\":null") != std::string::npos);
    CHECK(connections_text(shared) == " over 8 connections");
    CHECK(connections_text(per_terminal).empty());
    // The ratios name the aup cell they come from.
    bool named = false;
    for (const Ratio& r : ratios(o, results)) {
      named |= ratio_text(r).find("64 terminals over 8 connections") != std::string::npos;
    }
    CHECK(named);
  }
}

}  // namespace
}  // namespace aup::tpcc

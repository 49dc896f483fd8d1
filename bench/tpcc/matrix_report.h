// The matrix's results as tpcc.json (everything: options, CPU plan, load
// times, every run's figures, the cells' medians, the ratios) and tpcc.md
// (how the runs were made, one table row per cell, the ratios against the
// goals, the load times, the plots).
#pragma once

#include <string>
#include <vector>

#include "bench/common/report.h"
#include "bench/tpcc/matrix.h"
#include "bench/tpcc/matrix_figures.h"

namespace aup::tpcc {

std::string matrix_json(const bench::Environment& env, const MatrixOptions& o, const MatrixResults& results,
                        const std::vector<Ratio>& ratios);

// `plots` is what plots.h made of the results: a paragraph for the end.
std::string matrix_markdown(const bench::Environment& env, const MatrixOptions& o, const MatrixResults& results,
                            const std::vector<Ratio>& ratios, const std::string& plots);

// The table alone (a header and a row per cell with a consistent run).
std::string matrix_table(const MatrixOptions& o, const MatrixResults& results);

}  // namespace aup::tpcc

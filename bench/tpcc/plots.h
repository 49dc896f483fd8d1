// The matrix's plots, drawn by gnuplot (Debian gnuplot-nox) from data and
// scripts written beside them in the output directory, so that
// `cd OUT && gnuplot tpcc-throughput.gp` draws them again:
//   tpcc-throughput.{dat,gp,svg}  tx/s by terminals, a line per backend, a
//                                 panel per (medium, W)
//   tpcc-latency.{dat,gp,svg}     the latency CDF of all transactions, a
//                                 curve per (backend, terminals), a panel per
//                                 medium, at the smallest W (W=1 by default)
#pragma once

#include <string>

#include "bench/tpcc/matrix.h"
#include "bench/tpcc/matrix_figures.h"

namespace aup::tpcc {

// Writes the data and scripts into o.out_dir (which must exist) and runs
// gnuplot on them when it is on PATH. Returns a Markdown paragraph naming
// the plots, or saying why they were not drawn (no gnuplot, gnuplot failed,
// no data); throws only when a file cannot be written.
std::string write_plots(const MatrixOptions& o, const MatrixResults& results);

}  // namespace aup::tpcc

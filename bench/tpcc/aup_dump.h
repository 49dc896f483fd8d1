// A stopped aup store's rows: `aup replay --data DIR --dump TABLE` for each
// of the nine tables (docs/store-format.md, "aup replay": every row as a
// JSON line in key order), each line turned into a Row in the column order
// of state.h's table_specs(). replay reads the store without writing it, so
// the rows are exactly what the server left durable.
#pragma once

#include <string>
#include <string_view>

#include "bench/tpcc/aup_json.h"
#include "bench/tpcc/state.h"

namespace aup::tpcc {

// Runs `aup replay --data STORE_DIR --dump TABLE` for every table. Throws
// std::runtime_error when replay cannot be started or exits other than 0
// (with what it printed on stderr), or when a row does not match its table's
// columns (a column missing, extra or out of order, a number that is not
// whole, a text where a number belongs), or the keys do not ascend.
State dump_store(const std::string& aup, const std::string& store_dir);

// Turns `--dump` lines of one table into Rows of `spec` (which must outlive
// it); throws as above.
class DumpRowReader {
 public:
  explicit DumpRowReader(const TableSpec& spec);
  Row read(std::string_view line);

 private:
  const TableSpec& spec_;
  std::string what_;  // for messages
  JsonLine json_;     // reused for every line
};

}  // namespace aup::tpcc

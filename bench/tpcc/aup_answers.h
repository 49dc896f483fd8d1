// What tpcc.aup answers, as the numbers backend.h's TxResult, TableCounts
// and consistency() hold: one function per kind of answer, each checking
// every field it reads (aup_json.h), so a changed module or a wrong answer
// throws naming aup and quoting the answer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/tpcc/aup_json.h"
#include "bench/tpcc/backend.h"
#include "bench/tpcc/generator.h"
#include "bench/tpcc/state.h"

namespace aup::tpcc {

// The answer to `tx` sent with request id `id`:
//   ok, {order, lines, total, brands}            new_order (brands "BG.." per line)
//   ok, {c, balance, credit}                     payment ("GC" 0, "BC" 1)
//   ok, {c, balance, order, entry, carrier, lines}  order_status (lines: OrderLine rows)
//   ok, {orders: [o or 0, one per district]}     delivery
//   ok, {low_stock}                              stock_level
// and for a New-Order whose rollback flag is set, the module's `fail`:
// {"ok":false,"error":{"code":"failed","message":"item number is not valid ..."}},
// which is rolled_back with no values. Anything else throws.
TxResult tx_result(const Transaction& tx, uint64_t id, const JsonLine& answer);

// The `sizes` query's result: rows per table, by the tables' names.
TableCounts table_counts(const JsonLine& answer, uint32_t result);

// The `consistency` query's result {ok, problems}: the problems, each
// prefixed with "warehouse W: ". Throws when ok and problems disagree.
std::vector<std::string> consistency_problems(const JsonLine& answer, uint32_t result, int64_t warehouse);

}  // namespace aup::tpcc

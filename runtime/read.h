// The read request: a table's rows by key or by range, without writing a
// query (docs/protocol.md, "The read request"):
//
//   {"read": {"table": "accounts", "key": [3]}}                      a get: 0 or 1 row
//   {"read": {"table": "accounts", "from": [3], "to": [10], "limit": 50, "bytes": 65536}}
//   {"read": {"table": "accounts", "index": "by_owner", "from": ["ann"]}}
//
// answered {"rows": [ROW, ...], "next": [KEY...]}, each row its record's
// fields in order (as a query returning rows answers them), `next` only
// when rows remained past the limits: the key to continue `from`.
//
// A range reads the table in its key order, or with `index` in the index's
// order; `from` and `to` are inclusive bounds, each a prefix of that order's
// fields (the key's; an index's fields, then the key's fields not among
// them, which make each entry unique): `"to": [5]` on a key (w, d) ends
// after every row with w = 5. It is answered like a query: from a snapshot,
// or the live state, wherever queries are (a replica too), and counted as
// `reads` in the stats.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/answer.h"
#include "runtime/json.h"
#include "runtime/request.h"
#include "vm/interp.h"

namespace aup::runtime {

// Rows one answer holds: `limit` when the request gives none, and the most
// it may ask for. Bounded so that one request holds the owner (or an I/O
// thread) for a bounded time and a bounded answer; a client pages on with
// `next`.
inline constexpr uint32_t kReadRowsDefault = 100;
inline constexpr uint32_t kReadRowsMax = 10000;
// The bytes of the rows' JSON one answer holds (counting each row object):
// `bytes` when the request gives none, and the most it may ask for. A row
// that would pass it is left for `next`, unless it is the answer's first,
// which is sent whole (a row's texts may hold up to 16 MiB each, and a
// read must always move on). The most is the longest text a row can
// hold: a page of rows as large as a query's result may be.
inline constexpr uint32_t kReadBytesDefault = uint32_t{1} << 20;
inline constexpr uint32_t kReadBytesMax = uint32_t{16} << 20;

// Checks the shape of the read object `n` of `doc` against `m`, into r
// (r.kind Read, r.target the table, r.read), or refuses r (`bad_request`
// with why: unknown member, unknown table or index, a key of the wrong
// length, a bad limit).
void prepare_read(const vm::Module& m, const JsonDoc& doc, uint32_t n, Request& r);

// Answers prepared read `r` from the state `vm` runs on (texts of its key
// values go to vm's arena). False when a key value does not fit its field
// (`bad_args`, `bad_number`), with the refusal in `out`.
bool answer_read(const Request& r, vm::Vm& vm, Answer& out);

}  // namespace aup::runtime

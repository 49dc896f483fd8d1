// A module described to its clients: the answer to `{"schema": {}}`
// (docs/protocol.md), from which `aup call` and `aup shell` learn which
// names are events and which are queries, and the names and types of
// their arguments, so they can build and check a request before sending
// it. Built from the compiled module alone (vm/module.h), so a server
// answers it without the source.
#pragma once

#include <cstdint>
#include <string>

#include "vm/module.h"

namespace aup::runtime {

// A type as the language spells it (docs/language.md): `num`, `text`,
// `bool`, a record's name, `[num]`, `{x: num, y: text}`. (A query that
// returns a row or a view has the row's record or an array of them as its
// result type in the module: what its answer holds.)
std::string type_spelling(const vm::Module& m, uint32_t type);

// The schema as a JSON object:
//   {"events":[{"name":"transfer","args":[{"name":"from","type":"num"},
//               {"name":"note","type":"text","default":""}],"result":"num"}],
//    "queries":[{"name":"balance","args":[{"name":"id","type":"num"}],"result":"num"}],
//    "tables":[{"name":"accounts","record":"Account","key":["id"],
//               "indexes":[{"name":"by_owner","fields":["owner"],"unique":false}]}],
//    "records":[{"name":"Account","fields":[{"name":"id","type":"num"}, ...]}]}
// Events and queries in declaration order; an event without a result has
// no "result"; "default" only for an argument that has one; each table's
// "indexes" in declaration order ([] when it has none). Event
// argument records are not listed under "records" (they are the events').
std::string schema_json(const vm::Module& m);

}  // namespace aup::runtime

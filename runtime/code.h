// The codes of answers, as an enum inside the process; their names (one
// table, code.cpp) are the protocol's, written only where an answer leaves
// (docs/protocol.md, "Error codes").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "vm/interp.h"

namespace aup::runtime {

// The VM's failures (vm::ErrorCode) lead, in its order, so a failure's
// code is its vm::ErrorCode's; then `unavailable` and `not_primary`, so
// the codes an event can fail with are the first kEventFailCodes (counted
// per code by the stats request, runtime/metrics.h).
enum class Code : uint8_t {
  Failed,
  NotFound,
  Duplicate,
  StaleRow,
  OutOfRange,
  NotFinite,
  BadNumber,
  Budget,
  Unavailable,   // the store cannot take the event; the answer's fate says whether it was written
  NotPrimary,    // a replica takes no events; the message names its primary (docs/replication.md)
  BadRequest,    // not a request: not JSON, unknown keys, a request HTTP refused
  UnknownEvent,
  UnknownQuery,
  BadArgs,
  Ok,
};
inline constexpr size_t kCodes = static_cast<size_t>(Code::Ok) + 1;
inline constexpr size_t kEventFailCodes = static_cast<size_t>(Code::NotPrimary) + 1;

constexpr Code code_of(vm::ErrorCode c) { return static_cast<Code>(c); }
static_assert(code_of(vm::ErrorCode::Budget) == Code::Budget, "the VM's codes lead, in its order");

// The protocol's name: "not_found", "unavailable", ...; "ok" for Ok.
std::string_view code_name(Code c);

}  // namespace aup::runtime

#include "runtime/code.h"

#include <array>

namespace aup::runtime {

namespace {
// The codes after the VM's, in Code's order. docs/protocol.md explains
// every code (tests/docs checks).
constexpr std::array<std::string_view, kCodes - static_cast<size_t>(Code::Unavailable)> kRuntimeNames = {
    "unavailable", "not_primary", "bad_request", "unknown_event", "unknown_query", "bad_args", "ok",
};
}  // namespace

std::string_view code_name(Code c) {
  if (c < Code::Unavailable) return vm::error_code_name(static_cast<vm::ErrorCode>(c));
  return kRuntimeNames[static_cast<size_t>(c) - static_cast<size_t>(Code::Unavailable)];
}

}  // namespace aup::runtime

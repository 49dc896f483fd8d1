#include "bench/retention/policy.h"

#include <cassert>

namespace aup::retention {

std::string_view policy_name(Policy policy) {
  switch (policy) {
    case Policy::borrow: return "borrow";
    case Policy::copy: return "copy";
    case Policy::threshold2: return "threshold2";
    case Policy::threshold4: return "threshold4";
    case Policy::threshold8: return "threshold8";
    case Policy::pressure: return "pressure";
    case Policy::project: return "project";
    case Policy::copy_no_pool: return "copy_no_pool";
  }
  assert(false && "unknown policy");
  return "?";
}

std::optional<Policy> parse_policy(std::string_view name) {
  for (Policy p : kAllPolicies) {
    if (policy_name(p) == name) return p;
  }
  return std::nullopt;
}

bool should_copy(Policy policy, const CopyQuestion& q) {
  assert(q.selection_capacity <= q.source_capacity);
  switch (policy) {
    case Policy::borrow: return false;
    case Policy::copy:
    case Policy::copy_no_pool: return true;
    // Capacities, not lengths: what the allocator hands out is what is held.
    case Policy::threshold2: return q.source_capacity >= 2 * q.selection_capacity;
    case Policy::threshold4: return q.source_capacity >= 4 * q.selection_capacity;
    case Policy::threshold8: return q.source_capacity >= 8 * q.selection_capacity;
    case Policy::pressure:
      return 2 * q.live_bytes > q.usable_budget_bytes && q.selection_capacity < q.source_capacity;
    case Policy::project: break;
  }
  assert(false && "project reads the selection directly and never asks");
  return false;
}

}  // namespace aup::retention

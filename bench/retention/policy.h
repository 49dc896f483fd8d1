// The retention policies compared, and the one decision most of them
// differ in: once a record's body sits in its source buffer, does the
// selection move to its own buffer (and the source go back to the pool), or
// does the queued result keep the whole source alive?
//
//   borrow        never copies: the result holds the source while queued
//   copy          always copies the selection, then releases the source
//   threshold2/4/8  copies when source capacity >= N x selection capacity
//   pressure      copies when the live buffers exceed half of the usable
//                 budget and the selection's class is smaller than the
//                 source's
//   project       no source buffer: reads the selection straight into the
//                 result buffer and the rest through a small scratch buffer
//   copy_no_pool  copy's decisions and classes, with the reuse cache off
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace aup::retention {

enum class Policy : uint8_t {
  borrow,
  copy,
  threshold2,
  threshold4,
  threshold8,
  pressure,
  project,
  copy_no_pool
};

inline constexpr std::array<Policy, 8> kAllPolicies = {
    Policy::borrow,     Policy::copy,     Policy::threshold2, Policy::threshold4,
    Policy::threshold8, Policy::pressure, Policy::project,    Policy::copy_no_pool,
};

std::string_view policy_name(Policy policy);
std::optional<Policy> parse_policy(std::string_view name);

inline bool policy_reuses_buffers(Policy p) { return p != Policy::copy_no_pool; }
inline bool policy_projects(Policy p) { return p == Policy::project; }

// What the copy decision may look at, all in bytes.
struct CopyQuestion {
  uint64_t source_capacity = 0;
  uint64_t selection_capacity = 0;
  uint64_t live_bytes = 0;           // buffers in use now, the source included
  uint64_t usable_budget_bytes = 0;  // the budget less the fixed space
};

// Not for `project`, which never has a source buffer.
bool should_copy(Policy policy, const CopyQuestion& q);

}  // namespace aup::retention

#include "bench/retention/instrumentation.h"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <fstream>
#include <sstream>

namespace aup::retention {
namespace {

// Bounds the parser's loop: the line has one pair per field plus the policy.
constexpr size_t kMaxStatsPairs = 64;

template <class T>
bool parse_number(std::string_view text, T& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool parse_number(std::string_view text, bool& out) {
  if (text != "0" && text != "1") return false;
  out = text == "1";
  return true;
}

template <class T>
T field_text(T value) {
  return value;
}
// Flags travel as 0/1, which parse_number reads back.
int field_text(bool value) { return value ? 1 : 0; }

}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t percentile(std::span<int64_t> samples, uint32_t permille) {
  assert(permille >= 1 && permille <= 1000);
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  // rank = ceil(n * p), 1-based.
  size_t rank = (samples.size() * permille + 999) / 1000;
  return samples[std::max<size_t>(rank, 1) - 1];
}

std::optional<uint64_t> parse_status_kib(std::string_view status_text, std::string_view key) {
  size_t at = 0;
  // Bounded by the text's length: each turn moves past one line.
  while (at < status_text.size()) {
    size_t end = status_text.find('\n', at);
    if (end == std::string_view::npos) end = status_text.size();
    std::string_view line = status_text.substr(at, end - at);
    at = end + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') continue;
    std::string_view rest = line.substr(key.size() + 1);
    size_t digits = rest.find_first_not_of(" \t");
    if (digits == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(digits);
    size_t stop = rest.find(' ');
    if (stop == std::string_view::npos || rest.substr(stop) != " kB") return std::nullopt;
    uint64_t value = 0;
    if (!parse_number(rest.substr(0, stop), value)) return std::nullopt;
    return value;
  }
  return std::nullopt;
}

Result<uint64_t> read_vm_hwm_kib() {
  std::ifstream in("/proc/self/status");
  if (!in) return error("cannot read /proc/self/status");
  std::stringstream text;
  text << in.rdbuf();
  auto kib = parse_status_kib(text.str(), "VmHWM");
  if (!kib) return error("no VmHWM line in /proc/self/status");
  return *kib;
}

uint64_t rusage_maxrss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss);  // kilobytes on Linux
}

std::string format_stats(const RunStats& stats) {
  std::string line = "policy=" + stats.policy;
#define AUP_X(type, name) line += fmt::format(" " #name "={}", field_text(stats.name));
  AUP_RETENTION_STATS_FIELDS(AUP_X)
#undef AUP_X
  return line;
}

Result<RunStats> parse_stats(std::string_view line) {
  // One trailing newline is how the line is written to its file.
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  RunStats stats;
  bool seen_policy = false;
  size_t pairs = 0;
  size_t fields_seen = 0;
  while (!line.empty()) {
    if (++pairs > kMaxStatsPairs) return error("stats line: too many fields");
    size_t space = line.find(' ');
    std::string_view pair = line.substr(0, space);
    line = space == std::string_view::npos ? std::string_view{} : line.substr(space + 1);
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos) return error("stats line: `{}` is not key=value", pair);
    std::string_view key = pair.substr(0, eq);
    std::string_view value = pair.substr(eq + 1);
    if (key == "policy") {
      stats.policy = std::string(value);
      seen_policy = true;
      continue;
    }
    bool known = false;
#define AUP_X(type, name)                                                                   \
  if (key == #name) {                                                                       \
    if (!parse_number(value, stats.name)) return error("stats line: bad value for " #name); \
    known = true;                                                                           \
    ++fields_seen;                                                                          \
  }
    AUP_RETENTION_STATS_FIELDS(AUP_X)
#undef AUP_X
    if (!known) return error("stats line: unknown field `{}`", key);
  }
  size_t fields_expected = 0;
#define AUP_X(type, name) ++fields_expected;
  AUP_RETENTION_STATS_FIELDS(AUP_X)
#undef AUP_X
  if (!seen_policy || fields_seen != fields_expected) return error("stats line: fields missing");
  return stats;
}

}  // namespace aup::retention

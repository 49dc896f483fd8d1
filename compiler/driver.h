// `check`, the front end's command: shared by the `aup` and `aupc`
// executables so both print the same diagnostics and exit codes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace aup {

enum class ColorMode { Auto, Always, Never };

struct CheckOptions {
  std::vector<std::string> paths;
  bool json = false;          // NDJSON diagnostics on stdout instead of text on stderr
  bool quiet = false;         // no "ok" line for clean files
  uint32_t max_errors = 100;  // per file; the rest are counted, not shown
  ColorMode color = ColorMode::Auto;
};

// Exit codes (docs/protocol.md, README): 0 clean, 1 errors in a module, 2 usage or I/O.
inline constexpr int kExitOk = 0;
inline constexpr int kExitErrors = 1;
inline constexpr int kExitUsage = 2;

int run_check(const CheckOptions& options, std::FILE* out, std::FILE* err);

}  // namespace aup

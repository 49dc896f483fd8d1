// The front end's commands, `check` and `build`: one implementation behind
// the two executables that offer them (`aup` and `aupc`), so both print the
// same diagnostics, write the same module files and exit with the same
// codes. Their command-line options are declared once too
// (compiler/check_cli.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vm/module.h"

namespace aup {

enum class ColorMode { Auto, Always, Never };

struct CheckOptions {
  std::string program = "aup";  // the executable, for messages ("aup: cannot read ...")
  std::vector<std::string> paths;
  bool json = false;          // NDJSON diagnostics on stdout instead of text on stderr
  bool quiet = false;         // no "ok" line for clean files
  uint32_t max_errors = 100;  // per file; the rest are counted, not shown
  ColorMode color = ColorMode::Auto;
};

struct BuildOptions {
  std::string program = "aup";
  std::string source;
  std::string output;  // default: the source with .aupm
};

// Exit codes (docs/protocol.md, README): 0 clean, 1 errors in a module, 2 usage or I/O.
inline constexpr int kExitOk = 0;
inline constexpr int kExitErrors = 1;
inline constexpr int kExitUsage = 2;

int run_check(const CheckOptions& options, std::FILE* out, std::FILE* err);

// Compiles `source` and writes its module file; "wrote ..." on `out`,
// diagnostics and problems on `err`.
int run_build(const BuildOptions& options, std::FILE* out, std::FILE* err);

// The module compiled from the .aup file at `path` (what `build` writes,
// and what `aup run` and `aup disasm` run when given a source). When it
// cannot be had (unreadable, errors), null, with the diagnostics or the
// problem on `err` and `exit_code` set. `program` prefixes a problem that
// is not a diagnostic.
std::unique_ptr<vm::Module> compile_file(const std::string& program, const std::string& path, std::FILE* err,
                                         int& exit_code);

// "1 table", "3 tables".
std::string counted(uint64_t n, std::string_view one, std::string_view many);

}  // namespace aup

// The options of the `check` command, declared once for both executables
// that offer it (`aup check` and `aupc check`). Include after CLI/CLI.hpp.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>

#include "compiler/driver.h"

namespace aup {

inline CLI::App* add_check_command(CLI::App& app, CheckOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "check", "Parse and type-check aup modules; print every error found.\n"
               "Exit status: 0 clean, 1 errors in a module, 2 usage or unreadable file.");
  cmd->add_option("files", o.paths, "the .aup files to check")->required()->type_name("FILE.aup");
  cmd->add_flag("--json", o.json,
                "print each diagnostic as a JSON object on its own line (stdout)");
  cmd->add_flag("-q,--quiet", o.quiet, "print nothing for files without errors");
  cmd->add_option("--max-errors", o.max_errors, "show at most N errors per file")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000000u));
  static const std::map<std::string, ColorMode> kColors = {
      {"auto", ColorMode::Auto}, {"always", ColorMode::Always}, {"never", ColorMode::Never}};
  cmd->add_option("--color", o.color, "color diagnostics: auto (on a terminal), always, never")
      ->transform(CLI::CheckedTransformer(kColors, CLI::ignore_case))
      ->default_str("auto");
  return cmd;
}

// CLI11 reports usage errors with its own exit codes; aup's is 2.
inline int cli_exit(CLI::App& app, const CLI::ParseError& e) {
  int rc = app.exit(e);
  return rc == 0 ? kExitOk : kExitUsage;
}

}  // namespace aup

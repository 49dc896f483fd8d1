// The command lines of the front end's commands, `check` and `build`,
// declared once for both executables that offer them (`aup` and `aupc`;
// the work behind them is compiler/driver.h), and what both do before and
// after CLI11 parses. Include after CLI/CLI.hpp.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/driver.h"
#include "compiler/suggest.h"

namespace aup {

inline CLI::App* add_check_command(CLI::App& app, CheckOptions& o) {
  o.program = app.get_name();
  CLI::App* cmd = app.add_subcommand(
      "check", "Parse and type-check aup modules; print every error found.\n"
               "Exit status: 0 clean, 1 errors in a module, 2 usage or unreadable file.");
  cmd->add_option("files", o.paths, "the .aup files to check")->required()->type_name("FILE.aup");
  CLI::Option* json = cmd->add_flag("--json", o.json,
                                    "print each diagnostic as a JSON object on its own line (stdout), and nothing\n"
                                    "for a file without errors");
  cmd->add_flag("-q,--quiet", o.quiet, "print nothing for files without errors");
  cmd->add_option("--max-errors", o.max_errors, "show at most N errors per file")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000000u));
  static const std::map<std::string, ColorMode> kColors = {
      {"auto", ColorMode::Auto}, {"always", ColorMode::Always}, {"never", ColorMode::Never}};
  // JSON has no colors: --color with --json would be ignored, so it is refused.
  cmd->add_option("--color", o.color, "color diagnostics: auto (on a terminal, unless $NO_COLOR is set), always, never")
      ->transform(CLI::CheckedTransformer(kColors, CLI::ignore_case))
      ->default_str("auto")
      ->excludes(json);
  return cmd;
}

inline CLI::App* add_build_command(CLI::App& app, BuildOptions& o) {
  o.program = app.get_name();
  CLI::App* cmd = app.add_subcommand(
      "build", "Compile a module to a module file (schema, bytecode, line table).\n"
               "Exit status: 0 written, 1 errors in the module, 2 usage or I/O.");
  cmd->add_option("source", o.source, "the .aup file")->required()->type_name("FILE.aup");
  cmd->add_option("-o,--output", o.output, "the module file to write (default: FILE.aupm beside the source)")
      ->type_name("FILE.aupm");
  return cmd;
}

// Before CLI11 parses: the program alone prints the help, and a first word
// that is no command is named with the closest command (CLI11 would only
// say that a subcommand is required). Returns the exit code, or -1 when
// the line names a known command (or starts with an option, which CLI11
// handles: --help, --version, or an error it reports).
inline int missing_command(CLI::App& app, int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "{}", app.help());
    return kExitUsage;
  }
  std::string_view first = argv[1];
  if (first.empty() || first[0] == '-') return -1;
  std::vector<std::string_view> names;
  std::string list;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == first) return -1;
    names.push_back(sub->get_name());
    list += (list.empty() ? "" : ", ") + sub->get_name();
  }
  fmt::print(stderr, "{0}: no command `{1}`{2} (the commands: {3}; `{0} --help` says more)\n", app.get_name(), first,
             did_you_mean(first, names), list);
  return kExitUsage;
}

// CLI11 reports usage errors with its own exit codes; aup's is 2.
inline int cli_exit(CLI::App& app, const CLI::ParseError& e) {
  int rc = app.exit(e);
  return rc == 0 ? kExitOk : kExitUsage;
}

}  // namespace aup

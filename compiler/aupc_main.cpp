// aupc: the front end alone, linked without the runtime, the store or
// LLVM. `aupc check FILE.aup` does what `aup check` does (the one command
// it has: `aup build` writes module files).
#include <CLI/CLI.hpp>

#include "compiler/check_cli.h"

int main(int argc, char** argv) {
  CLI::App app{"aupc: the aup front end (parser and type checker)"};
  app.set_version_flag("--version", "aupc " AUP_VERSION);
  app.require_subcommand(1);
  aup::CheckOptions check;
  CLI::App* check_cmd = aup::add_check_command(app, check);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return aup::cli_exit(app, e);
  }
  if (check_cmd->parsed()) return aup::run_check(check, stdout, stderr);
  return aup::kExitUsage;
}

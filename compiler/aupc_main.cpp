// aupc: the front end alone (docs/architecture.md), linked with the
// compiler library and the VM's module-file writer it emits into, without
// the runtime, the store or LLVM: a machine that only compiles modules
// (a build step, an editor) needs nothing else. `aupc check` and `aupc
// build` are `aup check` and `aup build`: the same options, output, module
// files and exit codes, from the same code (compiler/driver.h).
#include <CLI/CLI.hpp>

#include "compiler/check_cli.h"

int main(int argc, char** argv) {
  CLI::App app{"aupc: the aup front end. Checks modules and compiles them to module files\n"
               "(`aup run` runs those; aupc needs neither the runtime, the store nor LLVM).",
               "aupc"};
  app.set_version_flag("-V,--version", "aupc " AUP_VERSION);
  aup::use_help_formatter(app);  // before the commands: each takes it from its parent
  app.require_subcommand(1);
  app.footer("Run `aupc COMMAND --help` (or `aupc help COMMAND`) for a command's options.");
  aup::CheckOptions check;
  CLI::App* check_cmd = aup::add_check_command(app, check);
  aup::BuildOptions build;
  CLI::App* build_cmd = aup::add_build_command(app, build);
  aup::name_command_groups(app);
  if (int rc = aup::missing_command(app, argc, argv); rc >= 0) return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return aup::usage_error(app, e);
  }
  if (check_cmd->parsed()) return aup::run_check(check, stdout, stderr);
  if (build_cmd->parsed()) return aup::run_build(build, stdout, stderr);
  return aup::kExitUsage;
}

// aup: the command users type. It only wires the libraries together; each
// subcommand's work lives in its library (compiler/, and later vm/,
// runtime/, storage/).
#include <CLI/CLI.hpp>

#include "check_cli.h"

int main(int argc, char** argv) {
  CLI::App app{"aup: durable applications from small typed modules.\n"
               "Write tables, events and queries in an .aup file; aup checks it."};
  app.set_version_flag("--version", "aup " AUP_VERSION);
  app.require_subcommand(1);
  app.footer("Run `aup COMMAND --help` for a command's options.");
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

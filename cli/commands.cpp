#include "commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <memory>

#include "codegen.h"
#include "compiler.h"
#include "disasm.h"
#include "driver.h"
#include "module_file.h"
#include "service.h"
#include "state.h"
#include "stdio_loop.h"

namespace aup::cli {

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A module from an .aup source (compiled now; diagnostics to stderr) or an
// .aupm file. Null with the exit code set when it cannot be had.
std::unique_ptr<vm::Module> load(const std::string& path, int& exit_code) {
  if (ends_with(path, ".aup")) {
    std::string text, error;
    if (!read_source_file(path, text, error)) {
      fmt::print(stderr, "aup: {}\n", error);
      exit_code = kExitUsage;
      return nullptr;
    }
    auto checked = check_source(path, std::move(text));
    Diagnostics codegen_errors;
    std::unique_ptr<vm::Module> m;
    if (checked->ok()) m = generate(*checked, codegen_errors);
    const auto& list = checked->ok() ? codegen_errors.list() : checked->diags.list();
    if (!m) {
      bool color = isatty(fileno(stderr)) != 0;
      for (const Diagnostic& d : list) fmt::print(stderr, "{}", render_text(checked->file, d, color));
      fmt::print(stderr, "{}: {} error{}\n", path, list.size(), list.size() == 1 ? "" : "s");
      exit_code = kExitErrors;
      return nullptr;
    }
    return m;
  }
  auto m = std::make_unique<vm::Module>();
  std::string error;
  if (!vm::read_module_file(path, *m, error)) {
    fmt::print(stderr, "aup: {}\n", error);
    exit_code = access(path.c_str(), R_OK) == 0 ? kExitErrors : kExitUsage;
    return nullptr;
  }
  return m;
}

}  // namespace

int build(const BuildOptions& o) {
  if (!ends_with(o.source, ".aup")) {
    fmt::print(stderr, "aup build: expected an .aup source file, got {}\n", o.source);
    return kExitUsage;
  }
  int rc = kExitOk;
  auto m = load(o.source, rc);
  if (!m) return rc;
  std::string out = o.output.empty() ? o.source + "m" : o.output;
  std::string error;
  if (!vm::write_module_file(out, *m, error)) {
    fmt::print(stderr, "aup build: {}\n", error);
    return kExitUsage;
  }
  size_t code = 0;
  for (const vm::Function& f : m->functions) code += f.code.size();
  fmt::print("wrote {} ({} tables, {} events, {} functions, {} instructions)\n", out, m->tables.size(),
             m->events.size(), m->functions.size(), code);
  return kExitOk;
}

int disasm(const std::string& path) {
  int rc = kExitOk;
  auto m = load(path, rc);
  if (!m) return rc;
  fmt::print("{}", vm::disassemble(*m));
  return kExitOk;
}

int run(const RunOptions& o) {
  if (!o.memory) {
    fmt::print(stderr,
               "aup run: the durable store (--data) is not built yet; pass --memory to run with the "
               "state in memory (nothing is written, nothing survives)\n");
    return kExitUsage;
  }
  int rc = kExitOk;
  auto m = load(o.module, rc);
  if (!m) return rc;
  m->prepare();
  vm::State state(*m);
  runtime::ServiceOptions so;
  if (o.step_budget) so.step_budget = o.step_budget;
  runtime::Service service(*m, state, so);
  runtime::StdioOptions io;
  if (o.max_line_bytes) io.max_line_bytes = o.max_line_bytes;
  io.fixed_now = o.fixed_time;
  // A closed stdout must be an error we report, not a silent death.
  std::signal(SIGPIPE, SIG_IGN);
  // In memory, an event is done once applied: commit at once.
  return runtime::serve_stdio(service, io, STDIN_FILENO, STDOUT_FILENO, stderr,
                              [&state] { state.commit(); });
}

}  // namespace aup::cli

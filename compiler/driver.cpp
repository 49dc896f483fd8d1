#include "compiler/driver.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "compiler/codegen.h"
#include "compiler/compiler.h"
#include "vm/module_file.h"

namespace aup {

namespace {

bool use_color(ColorMode mode, std::FILE* stream) {
  if (mode != ColorMode::Auto) return mode == ColorMode::Always;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  return isatty(fileno(stream)) != 0;
}

std::string summary(const CheckedModule& m) {
  const Program& p = m.program;
  size_t records = 0, queries = 0, helpers = 0;
  for (const auto& r : p.records) records += !r->is_event_args;
  for (const auto& f : p.functions) {
    queries += f->kind == FnKind::Query;
    helpers += f->kind == FnKind::Helper;
  }
  return fmt::format("{}, {}, {}, {}, {}, {}", counted(records, "record", "records"),
                     counted(p.tables.size(), "table", "tables"), counted(p.vars.size(), "var", "vars"),
                     counted(p.events.size(), "event", "events"), counted(queries, "query", "queries"),
                     counted(helpers, "function", "functions"));
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Checks one file; returns its exit code.
int check_one(const std::string& path, const CheckOptions& o, bool color, std::FILE* out,
              std::FILE* err) {
  auto refuse = [&](const std::string& problem) {
    if (o.json) {
      fmt::print(out, "{{\"file\":{},\"line\":0,\"col\":0,\"width\":0,\"severity\":\"error\",\"message\":{}}}\n",
                 json_quote(path), json_quote(problem));
    } else {
      fmt::print(err, "{}: {}\n", o.program, problem);
    }
    return kExitUsage;
  };
  std::string text, problem;
  if (!read_source_file(path, text, problem)) return refuse(problem);
  if (text.rfind("AUPM", 0) == 0) {
    // A module file (`aup build`'s output) would give an error per byte.
    return refuse(fmt::format("{} is a compiled module (it starts with AUPM), not source: `{} check` reads .aup "
                              "files, `aup disasm` shows a module",
                              path, o.program));
  }
  auto m = check_source(path, std::move(text));
  const auto& list = m->diags.list();
  size_t shown = std::min<size_t>(list.size(), o.max_errors);
  for (size_t i = 0; i < shown; ++i) {
    if (o.json) {
      fmt::print(out, "{}\n", render_json(m->file, list[i]));
    } else {
      fmt::print(err, "{}", render_text(m->file, list[i], color));
    }
  }
  if (list.empty()) {
    if (!o.quiet && !o.json) fmt::print(out, "{}: ok ({})\n", path, summary(*m));
    return kExitOk;
  }
  if (!o.json) {
    if (shown < list.size()) {
      fmt::print(err, "... and {} more (show them with --max-errors {})\n", list.size() - shown,
                 list.size());
    }
    fmt::print(err, "{}: {}\n", path, counted(list.size(), "error", "errors"));
  }
  return kExitErrors;
}

}  // namespace

std::string counted(uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

int run_check(const CheckOptions& o, std::FILE* out, std::FILE* err) {
  bool color = !o.json && use_color(o.color, err);
  int worst = kExitOk;
  for (const std::string& path : o.paths) {
    int rc = check_one(path, o, color, out, err);
    worst = std::max(worst, rc);
  }
  return worst;
}

std::unique_ptr<vm::Module> compile_file(const std::string& program, const std::string& path, std::FILE* err,
                                         int& exit_code) {
  std::string text, error;
  if (!read_source_file(path, text, error)) {
    fmt::print(err, "{}: {}\n", program, error);
    exit_code = kExitUsage;
    return nullptr;
  }
  auto checked = check_source(path, std::move(text));
  Diagnostics codegen_errors;
  std::unique_ptr<vm::Module> m;
  if (checked->ok()) m = generate(*checked, codegen_errors);
  if (m) return m;
  // Code generation has errors of its own only in a module that checks
  // (codegen.h): one list or the other, said as `check` says it.
  const auto& list = checked->ok() ? codegen_errors.list() : checked->diags.list();
  bool color = use_color(ColorMode::Auto, err);
  for (const Diagnostic& d : list) fmt::print(err, "{}", render_text(checked->file, d, color));
  fmt::print(err, "{}: {}\n", path, counted(list.size(), "error", "errors"));
  exit_code = kExitErrors;
  return nullptr;
}

int run_build(const BuildOptions& o, std::FILE* out, std::FILE* err) {
  if (!ends_with(o.source, ".aup")) {
    fmt::print(err, "{} build: expected an .aup source file, got {}\n", o.program, o.source);
    return kExitUsage;
  }
  int rc = kExitOk;
  auto m = compile_file(o.program, o.source, err, rc);
  if (!m) return rc;
  std::string path = o.output.empty() ? o.source + "m" : o.output;
  std::string error;
  if (!vm::write_module_file(path, *m, error)) {
    fmt::print(err, "{} build: {}\n", o.program, error);
    return kExitUsage;
  }
  size_t code = 0;
  for (const vm::Function& f : m->functions) code += f.code.size();
  fmt::print(out, "wrote {} ({}, {}, {}, {})\n", path, counted(m->tables.size(), "table", "tables"),
             counted(m->events.size(), "event", "events"), counted(m->functions.size(), "function", "functions"),
             counted(code, "instruction", "instructions"));
  return kExitOk;
}

}  // namespace aup

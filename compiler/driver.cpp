#include "compiler/driver.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "compiler/compiler.h"

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
  auto n = [](size_t count, const char* noun) {
    std::string_view plural = std::string_view(noun) == "query" ? "queries" : "";
    if (count == 1) return fmt::format("1 {}", noun);
    if (!plural.empty()) return fmt::format("{} {}", count, plural);
    return fmt::format("{} {}s", count, noun);
  };
  return fmt::format("{}, {}, {}, {}, {}, {}", n(records, "record"), n(p.tables.size(), "table"),
                     n(p.vars.size(), "var"), n(p.events.size(), "event"), n(queries, "query"),
                     n(helpers, "function"));
}

// Checks one file; returns its exit code.
int check_one(const std::string& path, const CheckOptions& o, bool color, std::FILE* out,
              std::FILE* err) {
  auto refuse = [&](const std::string& problem) {
    if (o.json) {
      fmt::print(out, "{{\"file\":{},\"line\":0,\"col\":0,\"width\":0,\"severity\":\"error\",\"message\":{}}}\n",
                 json_quote(path), json_quote(problem));
    } else {
      fmt::print(err, "aup: {}\n", problem);
    }
    return kExitUsage;
  };
  std::string text, problem;
  if (!read_source_file(path, text, problem)) return refuse(problem);
  if (text.rfind("AUPM", 0) == 0) {
    // A module file (`aup build`'s output) would give an error per byte.
    return refuse(path + " is a compiled module (it starts with AUPM), not source: `aup check` reads .aup files, "
                         "`aup disasm` shows a module");
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
    fmt::print(err, "{}: {} error{}\n", path, list.size(), list.size() == 1 ? "" : "s");
  }
  return kExitErrors;
}

}  // namespace

int run_check(const CheckOptions& o, std::FILE* out, std::FILE* err) {
  bool color = !o.json && use_color(o.color, err);
  int worst = kExitOk;
  for (const std::string& path : o.paths) {
    int rc = check_one(path, o, color, out, err);
    worst = std::max(worst, rc);
  }
  return worst;
}

}  // namespace aup

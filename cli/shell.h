// `aup shell`: requests typed by hand, against a running server (ADDRESS)
// or a store the shell opens itself (MODULE --data DIR, MODULE --memory:
// an `aup run` child on pipes, so the same request pipeline applies them).
//
// On a terminal: line editing, history across sessions and tab completion
// (libedit), the short form (cli/short_form.h) checked before sending,
// answers laid out (cli/pretty_json.h), a failure's code in colour, and
// dot commands (.help, .events, .queries, .tables, .schema, .timing,
// .quit). When stdin is not a terminal it reads the same lines one at a
// time and prints each answer as one line, for scripts and tests.
//
// Exit status: 0 every request answered ok, 1 some request failed or was
// refused, 2 usage or connection problems.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

namespace aup::cli {

struct ShellOptions {
  std::string target;  // ADDRESS, or MODULE with data/memory
  std::string data;    // MODULE --data DIR
  bool memory = false;  // MODULE --memory
  std::string history;  // the history file; empty: $AUP_HISTORY, else ~/.aup_history
  double timeout_seconds = 30;
};

int shell(const ShellOptions& o, const char* self);

}  // namespace aup::cli

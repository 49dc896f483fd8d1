// `aup shell`: requests typed by hand, against a running server (ADDRESS)
// or a store the shell opens itself (MODULE --data DIR, MODULE --memory:
// an `aup run` child on pipes, so the same request pipeline applies them;
// the child has a process group of its own, so a Ctrl-C typed at the
// shell never reaches it).
//
// On a terminal: line editing, history across sessions and tab completion
// in the module's order (libedit), the short form (cli/short_form.h)
// checked before sending, rows as an aligned table (.mode table|line|json,
// cli/table_format.h), a failure's code in colour, and dot commands
// (.help, .events, .queries, .tables, .schema, .mode, .timing, .quit).
// Ctrl-C drops the line being typed; twice on an empty line, or Ctrl-D,
// leaves, and a --memory shell whose state an event changed asks first.
// When stdin is not a terminal it reads the same lines one at a time and
// prints each answer as one line (unless .mode says otherwise), for
// scripts and tests; --bail stops at the first request that fails.
//
// Exit status: 0 every request answered ok, 1 some request failed or was
// refused (an `unavailable` answer among them: nothing could be
// committed), 2 usage or connection problems, or a store the shell cannot
// open.
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
  bool bail = false;  // from a pipe: stop at the first request that fails
};

int shell(const ShellOptions& o, const char* self);

}  // namespace aup::cli

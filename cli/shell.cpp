#include "cli/shell.h"

#include <editline/readline.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <vector>

#include "cli/call.h"
#include "cli/client.h"
#include "cli/pretty_json.h"
#include "cli/rows.h"
#include "cli/short_form.h"

namespace aup::cli {

namespace {

constexpr const char* kDotHelp =
    "  NAME [ARG ...]    an event or query: arguments by name (id=1) or in order (1)\n"
    "  {...}             a raw JSON request\n"
    "  .events           the events and their arguments\n"
    "  .queries          the queries and their arguments\n"
    "  .tables           the tables and their keys\n"
    "  .schema           the module's whole description, as the server gives it\n"
    "  .get TABLE KEY... the row with that key (the key's values in order)\n"
    "  .scan TABLE [from=V] [to=V] [index=NAME] [limit=N]\n"
    "                    rows in key (or index) order, from and to inclusive\n"
    "  .timing on|off    print how long each answer took\n"
    "  .help             this\n"
    "  .quit             leave (so does end of input)\n";

// What the session knows and has seen.
struct Session {
  Client client;
  Schema schema;
  std::string schema_json;
  bool tty = false;
  bool timing = false;
  bool any_failed = false;
  bool lost = false;  // the connection broke
  double timeout = 30;
};

Session* g_session = nullptr;  // for libedit's completion callback, which takes no context

std::chrono::milliseconds timeout_ms(const Session& s) {
  return std::chrono::milliseconds(static_cast<long long>(s.timeout * 1000));
}

// ---- completion: names first, then the request's argument names

std::vector<std::string> g_matches;

char* next_match(const char*, int state) {
  static size_t at;
  if (state == 0) at = 0;
  return at < g_matches.size() ? strdup(g_matches[at++].c_str()) : nullptr;
}

char** complete(const char* text, int start, int) {
  rl_attempted_completion_over = 1;  // never fall back to file names
  g_matches.clear();
  std::string_view prefix(text);
  std::string_view line(rl_line_buffer, static_cast<size_t>(start));
  std::vector<std::string> words;
  std::string error;
  split_words(line, words, error);
  auto offer = [&](const std::string& m) {
    if (m.starts_with(prefix)) g_matches.push_back(m);
  };
  if (words.empty()) {
    for (const RequestSpec& r : g_session->schema.requests) offer(r.name);
    for (const char* d : {".events", ".queries", ".tables", ".get", ".scan", ".schema", ".timing", ".help", ".quit"}) {
      offer(d);
    }
  } else if (const RequestSpec* r = g_session->schema.find(words[0])) {
    for (const ArgSpec& a : r->args) offer(a.name + "=");
  }
  if (g_matches.size() == 1 && g_matches[0].back() == '=') rl_completion_append_character = '\0';
  else rl_completion_append_character = ' ';
  return g_matches.empty() ? nullptr : rl_completion_matches(text, next_match);
}

// ---- answers

void show_answer(Session& s, const std::string& line, double ms) {
  Answer a = read_answer(line);
  if (!a.ok) s.any_failed = true;
  if (!s.tty) {
    fmt::print("{}\n", line);
  } else if (a.ok) {
    fmt::print("{}\n", a.result.empty() ? "ok" : pretty_json(a.result));
  } else {
    fmt::print("\x1b[31m{}\x1b[0m\n", a.error);
  }
  if (s.timing) fmt::print("({:.3f} ms)\n", ms);
}

void refused(Session& s, const std::string& why) {
  s.any_failed = true;
  if (s.tty) {
    fmt::print(stderr, "\x1b[31merror\x1b[0m {}\n", why);
  } else {
    fmt::print(stderr, "aup shell: {}\n", why);
  }
}

// ---- dot commands

void list_requests(const Session& s, bool events) {
  for (const RequestSpec& r : s.schema.requests) {
    if (r.event == events) fmt::print("{}{}\n", usage(r), r.result.empty() ? "" : " -> " + r.result);
  }
}

bool exchange_and_show(Session& s, const std::string& request);

// `.get` and `.scan`: a read request (cli/rows.h), answered as a query's;
// false when the connection is gone.
bool read_rows(Session& s, const std::vector<std::string>& words) {
  std::string line, error;
  std::vector<std::string> rest(words.begin() + 1, words.end());
  if (shell_read_line(s.schema_json, words[0] == ".scan", rest, line, error)) return exchange_and_show(s, line);
  refused(s, error);
  return true;
}

// False when the session should end.
bool dot_command(Session& s, const std::vector<std::string>& words) {
  const std::string& c = words[0];
  if (c == ".quit" || c == ".exit") return false;
  if (c == ".help") {
    fmt::print("{}", kDotHelp);
  } else if (c == ".events" || c == ".queries") {
    list_requests(s, c == ".events");
  } else if (c == ".tables") {
    for (const std::string& t : s.schema.tables) fmt::print("{}\n", t);
  } else if (c == ".get" || c == ".scan") {
    return read_rows(s, words);
  } else if (c == ".schema") {
    fmt::print("{}\n", s.tty ? pretty_json(s.schema_json) : s.schema_json);
  } else if (c == ".timing" && words.size() == 2 && (words[1] == "on" || words[1] == "off")) {
    s.timing = words[1] == "on";
  } else {
    refused(s, fmt::format("no command `{}`; .help lists them", fmt::join(words, " ")));
  }
  return true;
}

// One line typed or read: false when the session should end.
bool handle_line(Session& s, const std::string& line) {
  std::vector<std::string> words;
  std::string error, request;
  if (!split_words(line, words, error)) {
    refused(s, error);
    return true;
  }
  if (words.empty()) return true;
  if (words[0].starts_with(".")) return dot_command(s, words);
  if (words[0].starts_with("{")) {
    request = line;
  } else if (!build_request(s.schema, words, request, error)) {
    refused(s, error);
    return true;
  }
  return exchange_and_show(s, request);
}

// Sends a request and shows its answer: false when the connection is gone.
bool exchange_and_show(Session& s, const std::string& request) {
  std::string answer, error;
  auto start = std::chrono::steady_clock::now();
  if (!s.client.exchange(request, timeout_ms(s), answer, error)) {
    refused(s, error);
    s.lost = true;
    return false;  // the connection is gone
  }
  std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
  show_answer(s, answer, took.count());
  return true;
}

std::string history_path(const ShellOptions& o) {
  if (!o.history.empty()) return o.history;
  if (const char* h = std::getenv("AUP_HISTORY")) return h;  // empty: no history kept
  const char* home = std::getenv("HOME");
  return home ? std::string(home) + "/.aup_history" : std::string();
}

void interactive(Session& s, const ShellOptions& o) {
  std::string history = history_path(o);
  using_history();
  if (!history.empty()) read_history(history.c_str());
  rl_attempted_completion_function = complete;
  fmt::print("aup shell: {} events, {} queries; .help for help\n",
             std::count_if(s.schema.requests.begin(), s.schema.requests.end(), [](auto& r) { return r.event; }),
             std::count_if(s.schema.requests.begin(), s.schema.requests.end(), [](auto& r) { return !r.event; }));
  for (;;) {
    char* raw = readline("aup> ");
    if (!raw) break;
    std::string line(raw);
    std::free(raw);
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    add_history(line.c_str());
    if (!history.empty()) write_history(history.c_str());
    std::fflush(stdout);
    if (!handle_line(s, line)) break;
  }
}

void scripted(Session& s) {
  char* raw = nullptr;
  size_t cap = 0;
  ssize_t n;
  while ((n = ::getline(&raw, &cap, stdin)) >= 0) {
    std::string line(raw, static_cast<size_t>(n));
    if (!line.empty() && line.back() == '\n') line.pop_back();
    bool go_on = handle_line(s, line);
    std::fflush(stdout);
    if (!go_on) break;
  }
  std::free(raw);
}

bool open_target(Session& s, const ShellOptions& o, const char* self, std::string& error) {
  if (!o.memory && o.data.empty()) return s.client.connect(o.target, error);
  std::vector<std::string> argv = {self, "run", o.target};
  if (o.memory) argv.push_back("--memory");
  else argv.insert(argv.end(), {"--data", o.data});
  return s.client.spawn(argv, error);
}

}  // namespace

int shell(const ShellOptions& o, const char* self) {
  std::signal(SIGPIPE, SIG_IGN);
  Session s;
  s.tty = ::isatty(0) && ::isatty(1);
  s.timeout = o.timeout_seconds;
  g_session = &s;
  std::string error;
  if (!open_target(s, o, self, error) || !fetch_schema(s.client, s.timeout, s.schema, s.schema_json, error)) {
    fmt::print(stderr, "aup shell: {}\n", error);
    return 2;
  }
  if (s.tty) {
    interactive(s, o);
  } else {
    scripted(s);
  }
  return s.lost ? 2 : s.any_failed ? 1 : 0;
}

}  // namespace aup::cli

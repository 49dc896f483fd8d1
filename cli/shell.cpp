#include "cli/shell.h"

#include <editline/readline.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <clocale>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "cli/call.h"
#include "cli/client.h"
#include "cli/rows.h"
#include "cli/short_form.h"
#include "cli/table_format.h"
#include "runtime/json.h"
#include "storage/io.h"

namespace aup::cli {

namespace {

constexpr const char* kDotHelp =
    "  NAME [ARG ...]    an event or query: arguments by name (id=1) or in order (1)\n"
    "  {...}             a raw JSON request\n"
    "  .events           the events and their arguments\n"
    "  .queries          the queries and their arguments\n"
    "  .tables           the tables, each with its key and indexes\n"
    "  .schema           the module's whole description, as the server gives it\n"
    "  .mode table|line|json  how rows print: an aligned table, field = value lines, or JSON\n"
    "  .get TABLE KEY... the row with that key (the key's values in order)\n"
    "  .scan TABLE [from=V] [to=V] [index=NAME] [limit=N]\n"
    "                    rows in key (or index) order, from and to inclusive\n"
    "  .timing on|off    print how long each answer took\n"
    "  .help             this\n"
    "  .quit             leave (so do Ctrl-D, and Ctrl-C twice on an empty line)\n";

constexpr const char* kDotCommands[] = {".events", ".queries", ".tables", ".get",  ".scan",
                                        ".schema", ".mode",    ".timing", ".help", ".quit"};

// What the session knows and has seen.
struct Session {
  Client client;
  Schema schema;
  std::string schema_json;
  bool tty = false;
  bool timing = false;
  bool memory = false;  // the state is the child's, in memory: gone when the shell ends
  bool any_failed = false;       // some request failed or a line was refused: --bail stops
  bool any_unavailable = false;  // some event could not be committed: the exit status says so
  bool lost = false;  // the connection broke
  RowsMode mode = RowsMode::Json;
  uint64_t applied = 0;  // events answered ok
  double timeout = 30;
};

Session* g_session = nullptr;  // for libedit's completion callback, which takes no context

std::chrono::milliseconds timeout_ms(const Session& s) {
  return std::chrono::milliseconds(static_cast<long long>(s.timeout * 1000));
}

// ---- Ctrl-C on a terminal
//
// At the prompt it drops the line being typed (read_key ends the line, and
// the shell does not run it); while an answer is awaited it only says that
// the request is on its way: it cannot be called back, and the child of a
// --memory shell, in a process group of its own (cli/client.h), is never
// signalled, so its state stays.

volatile sig_atomic_t g_interrupted = 0;
volatile sig_atomic_t g_waiting = 0;

constexpr char kStillWaiting[] =
    "\naup shell: the request is sent and cannot be called back: waiting for its answer (--timeout bounds the "
    "wait; the store and its state are untouched by Ctrl-C)\n";

void on_interrupt(int) {
  if (g_waiting) {
    ssize_t ignored = ::write(2, kStillWaiting, sizeof kStillWaiting - 1);
    (void)ignored;
    return;
  }
  g_interrupted = 1;
}

// One byte of the terminal: -2 when a Ctrl-C came first (also one that
// came while libedit was busy between reads), -1 at the end.
int read_byte() {
  for (;;) {
    if (g_interrupted) return -2;
    unsigned char c;
    ssize_t n = ::read(0, &c, 1);
    if (n == 1) return c;
    if (n < 0 && errno == EINTR) continue;  // the check above tells a Ctrl-C from other signals
    return -1;
  }
}

// libedit's reader of keys: one character (a UTF-8 sequence decoded, as
// libedit takes a wide character from it), and a Ctrl-C as the end of the
// line, which read_line then drops.
int read_key(FILE*) {
  int c = read_byte();
  if (c == -2) return '\n';
  if (c < 0x80) return c;
  int more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
  int code = c & (0x3F >> more);
  for (int i = 0; i < more; ++i) {
    int d = read_byte();
    if (d < 0) return d == -2 ? '\n' : EOF;
    code = code << 6 | (d & 0x3F);
  }
  return code;
}

enum class Typed { Line, Interrupted, End };

// A line typed at `prompt`: Interrupted (with what was typed before the
// Ctrl-C in `line`) or End (Ctrl-D on an empty line) instead.
Typed read_line(const char* prompt, std::string& line) {
  g_interrupted = 0;
  char* raw = readline(prompt);
  bool interrupted = g_interrupted, ended = !raw;
  g_interrupted = 0;
  line = raw ? raw : "";
  std::free(raw);
  return interrupted ? Typed::Interrupted : ended ? Typed::End : Typed::Line;
}

bool blank(const std::string& line) { return line.find_first_not_of(" \t") == std::string::npos; }

// Whether the session may end now: a --memory shell whose state has
// changed asks first (its state ends with it). Ctrl-D at the question
// leaves: nothing more can be typed.
bool may_leave(const Session& s) {
  if (!s.memory || s.applied == 0) return true;
  std::string question =
      fmt::format("This --memory shell's state ({} event{} applied) ends with it. Leave? (y/N) ", s.applied,
                  s.applied == 1 ? "" : "s");
  std::string answer;
  Typed t = read_line(question.c_str(), answer);
  if (t == Typed::End) fmt::print("\n");
  answer.erase(0, answer.find_first_not_of(" \t"));
  answer.erase(answer.find_last_not_of(" \t") + 1);
  return t == Typed::End || (t == Typed::Line && (answer == "y" || answer == "Y" || answer == "yes"));
}

// ---- completion: names first, then the request's argument names, each
// in the order the module declares them (libedit would sort them)

std::vector<std::string> g_matches;

char* next_match(const char*, int state) {
  static size_t at;
  if (state == 0) at = 0;
  return at < g_matches.size() ? strdup(g_matches[at++].c_str()) : nullptr;
}

std::string_view common_prefix(const std::vector<std::string>& words) {
  std::string_view common = words[0];
  for (const std::string& w : words) {
    size_t n = 0;
    while (n < common.size() && n < w.size() && common[n] == w[n]) ++n;
    common = common.substr(0, n);
  }
  return common;
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
    for (const char* d : kDotCommands) offer(d);
  } else if (const RequestSpec* r = g_session->schema.find(words[0])) {
    auto given = [&](const ArgSpec& a) {
      return std::any_of(words.begin() + 1, words.end(), [&](const std::string& w) { return w.starts_with(a.name + "="); });
    };
    for (const ArgSpec& a : r->args) {
      if (!given(a)) offer(a.name + "=");
    }
  }
  if (g_matches.size() > 1 && common_prefix(g_matches).size() == prefix.size()) {
    // Nothing to add: libedit would list the choices sorted; the shell
    // lists them in order itself, and leaves the word as it is.
    fmt::print("\n{}\n", fmt::join(g_matches, "  "));
    std::fflush(stdout);
    rl_forced_update_display();
    g_matches = {std::string(prefix)};
  }
  if (g_matches.size() == 1 && (g_matches[0].empty() || g_matches[0].back() == '=' || g_matches[0] == prefix)) {
    rl_completion_append_character = '\0';
  } else {
    rl_completion_append_character = ' ';
  }
  return g_matches.empty() ? nullptr : rl_completion_matches(text, next_match);
}

// ---- answers

// Every answer the shell prints goes through here (a request's, and a dot
// command's that reads rows), so .mode applies to all: from a pipe in
// json mode the answer line as the server wrote it, else its result in
// the session's mode (cli/table_format.h), or a failure's `code: message`.
void show_answer(Session& s, const std::string& line, double ms) {
  Answer a = read_answer(line);
  if (!a.ok) s.any_failed = true;
  if (a.code == "unavailable") s.any_unavailable = true;
  if (!s.tty && s.mode == RowsMode::Json) {
    fmt::print("{}\n", line);
  } else if (a.ok) {
    fmt::print("{}\n", a.result.empty() ? "ok" : format_result(a.result, s.mode));
  } else if (s.tty) {
    fmt::print("\x1b[31m{}\x1b[0m\n", a.error);
  } else {
    fmt::print("{}\n", a.error);
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

// `accounts   key (id)   index by_owner (owner, ...)`: a line a table.
void list_tables(const Session& s) {
  size_t name_width = 0;
  for (const TableSpec& t : s.schema.table_specs) name_width = std::max(name_width, t.name.size());
  for (const TableSpec& t : s.schema.table_specs) {
    std::string line = fmt::format("{:<{}}  key ({})", t.name, name_width, fmt::join(t.key, ", "));
    for (const IndexSpec& x : t.indexes) {
      line += fmt::format("  {}index {} ({})", x.unique ? "unique " : "", x.name, fmt::join(x.fields, ", "));
    }
    fmt::print("{}\n", line);
  }
}

void set_mode(Session& s, const std::vector<std::string>& words) {
  if (words.size() == 1) {
    fmt::print("{}\n", rows_mode_name(s.mode));
  } else if (words.size() != 2 || !parse_rows_mode(words[1], s.mode)) {
    refused(s, fmt::format("`{}`: .mode takes table, line or json", fmt::join(words, " ")));
  }
}

bool exchange_and_show(Session& s, const std::string& request, bool event);

// `.get` and `.scan`: a read request (cli/rows.h), answered as a query's;
// false when the connection is gone.
bool read_rows(Session& s, const std::vector<std::string>& words) {
  std::string line, error;
  std::vector<std::string> rest(words.begin() + 1, words.end());
  if (shell_read_line(s.schema_json, words[0] == ".scan", rest, line, error)) return exchange_and_show(s, line, false);
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
    list_tables(s);
  } else if (c == ".get" || c == ".scan") {
    return read_rows(s, words);
  } else if (c == ".schema") {
    fmt::print("{}\n", s.tty ? format_result(s.schema_json, RowsMode::Json) : s.schema_json);
  } else if (c == ".mode") {
    set_mode(s, words);
  } else if (c == ".timing" && words.size() == 2 && (words[1] == "on" || words[1] == "off")) {
    s.timing = words[1] == "on";
  } else {
    refused(s, fmt::format("no command `{}`; .help lists them", fmt::join(words, " ")));
  }
  return true;
}

// Whether a raw JSON request is an event (the only kind that changes the state).
bool raw_event(const std::string& line) {
  runtime::JsonDoc doc;
  std::string why;
  return doc.parse(line, why) && doc.member(doc.root(), "event") != 0;
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
  bool event = false;
  if (words[0].starts_with("{")) {
    request = line;
    event = raw_event(line);
  } else if (!build_request(s.schema, words, request, error)) {
    refused(s, error);
    return true;
  } else {
    event = s.schema.find(words[0])->event;
  }
  return exchange_and_show(s, request, event);
}

// Sends a request and shows its answer: false when the connection is gone.
// An event answered ok counts as a change (a --memory shell asks before
// leaving with changes).
bool exchange_and_show(Session& s, const std::string& request, bool event) {
  std::string answer, error;
  auto start = std::chrono::steady_clock::now();
  g_waiting = 1;
  bool answered = s.client.exchange(request, timeout_ms(s), answer, error);
  g_waiting = 0;
  if (!answered) {
    refused(s, error);
    s.lost = true;
    return false;  // the connection is gone
  }
  std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
  if (event && read_answer(answer).ok) ++s.applied;
  show_answer(s, answer, took.count());
  return true;
}

std::string history_path(const ShellOptions& o) {
  if (!o.history.empty()) return o.history;
  if (const char* h = std::getenv("AUP_HISTORY")) return h;  // empty: no history kept
  const char* home = std::getenv("HOME");
  return home ? std::string(home) + "/.aup_history" : std::string();
}

// libedit as the shell wants it, before its first use (using_history
// starts it): our Ctrl-C (libedit's own would re-raise it and end the
// shell), our key reader, completion in declared order, UTF-8 typed as
// the terminal's locale says.
void start_editing() {
  std::setlocale(LC_CTYPE, "");
  struct sigaction sa = {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: the read of a key returns, and read_key ends the line
  sigaction(SIGINT, &sa, nullptr);
  rl_catch_signals = 0;
  rl_getc_function = read_key;
  rl_attempted_completion_function = complete;
  // A word is what split_words makes one: `id=1` whole, so a value typed
  // after `=` is never taken for an argument's name.
  rl_basic_word_break_characters = " \t\n";
  using_history();
}

void interactive(Session& s, const ShellOptions& o) {
  std::string history = history_path(o);
  start_editing();
  if (!history.empty()) read_history(history.c_str());
  fmt::print("aup shell: {} events, {} queries; .help for help\n",
             std::count_if(s.schema.requests.begin(), s.schema.requests.end(), [](auto& r) { return r.event; }),
             std::count_if(s.schema.requests.begin(), s.schema.requests.end(), [](auto& r) { return !r.event; }));
  int interrupts = 0;  // Ctrl-C on an empty line, in a row
  for (;;) {
    std::string line;
    Typed t = read_line("aup> ", line);
    if (t == Typed::Interrupted) {
      if (!blank(line)) {
        interrupts = 0;  // the line is dropped
      } else if (++interrupts == 1) {
        fmt::print("(Ctrl-C again, Ctrl-D or .quit leaves)\n");
      } else if (may_leave(s)) {
        break;
      } else {
        interrupts = 0;
      }
      continue;
    }
    interrupts = 0;
    if (t == Typed::End) {
      if (may_leave(s)) break;
      continue;
    }
    if (blank(line)) continue;
    add_history(line.c_str());
    if (!history.empty()) write_history(history.c_str());
    std::fflush(stdout);
    if (!handle_line(s, line) && (s.lost || may_leave(s))) break;
  }
}

// Lines from a pipe; with --bail, none after the first that failed.
void scripted(Session& s, bool bail) {
  char* raw = nullptr;
  size_t cap = 0;
  ssize_t n;
  for (size_t number = 1; (n = ::getline(&raw, &cap, stdin)) >= 0; ++number) {
    std::string line(raw, static_cast<size_t>(n));
    if (!line.empty() && line.back() == '\n') line.pop_back();
    bool go_on = handle_line(s, line);
    std::fflush(stdout);
    if (!go_on) break;
    if (bail && s.any_failed) {
      fmt::print(stderr, "aup shell: --bail: stopped after line {}, the first that failed\n", number);
      break;
    }
  }
  std::free(raw);
}

// ---- opening the target

// A module's file rather than an address: a name ending .aup or .aupm,
// or a regular file (an address names a socket, or a host).
bool looks_like_module(const std::string& target) {
  struct stat st = {};
  return target.ends_with(".aup") || target.ends_with(".aupm") ||
         (::stat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode));
}

// The --listen addresses in the command line of process `pid`, as it
// gave them (Linux's /proc; none when it cannot be read).
std::vector<std::string> listen_addresses(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args, out;
  for (size_t at = 0; at < all.size();) {
    size_t end = all.find('\0', at);
    if (end == std::string::npos) end = all.size();
    args.push_back(all.substr(at, end - at));
    at = end + 1;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--listen" && i + 1 < args.size()) out.push_back(args[++i]);
    else if (args[i].starts_with("--listen=")) out.push_back(args[i].substr(9));
  }
  // A relative socket path is the server's, from its working directory.
  char cwd[4096];
  ssize_t n = ::readlink(("/proc/" + pid + "/cwd").c_str(), cwd, sizeof cwd - 1);
  for (std::string& a : out) {
    if (n > 0 && a.starts_with("unix:") && a.size() > 5 && a[5] != '/') {
      a = "unix:" + std::string(cwd, static_cast<size_t>(n)) + "/" + a.substr(5);
    }
  }
  return out;
}

// False with a message when an aup holds the store at `dir` (DIR/LOCK,
// storage/io.h): the `aup run` the shell would start could not open it,
// and the store is there to be talked to at the server's address.
bool store_free(const std::string& dir, std::string& error) {
  storage::SystemIo io;
  std::string holder;
  int fd = io.lock(dir + "/LOCK", /*exclusive=*/false, holder);
  if (fd >= 0) io.close(fd);
  if (fd != -EWOULDBLOCK) return true;  // free, new, or a problem `aup run` reports in its words
  std::vector<std::string> at = holder.empty() ? std::vector<std::string>{} : listen_addresses(holder);
  std::string who = holder.empty() ? "another aup" : "the aup at pid " + holder;
  if (at.empty()) {
    error = fmt::format("the store {} is in use by {}, and a store has one writer at a time; if it is a server, "
                        "talk to it with `aup shell ADDRESS` (the address it listens on), else wait until it ends",
                        dir, who);
  } else {
    error = fmt::format("the store {} is in use by {}, which serves it on {}; talk to it there: `aup shell {}`",
                        dir, who, fmt::join(at, " and "), at[0]);
  }
  return false;
}

bool open_target(Session& s, const ShellOptions& o, const char* self, std::string& error) {
  if (!o.memory && o.data.empty()) {
    if (looks_like_module(o.target)) {
      error = fmt::format("{} is a module: open a store with it, `--data DIR` (kept on disk) or `--memory` "
                          "(gone when the shell ends), or give the ADDRESS of a running server instead",
                          o.target);
      return false;
    }
    return s.client.connect(o.target, error);
  }
  if (!o.data.empty() && !store_free(o.data, error)) return false;
  std::vector<std::string> argv = {self, "run", o.target};
  if (o.memory) argv.push_back("--memory");
  else argv.insert(argv.end(), {"--data", o.data});
  return s.client.spawn(argv, error);
}

// The schema, the first request: when the `aup run` the shell started
// ended before answering it (a module that does not build, a store it
// cannot open), it said why on stderr, and nothing reached the store.
bool first_answer(Session& s, const ShellOptions& o, std::string& error) {
  if (fetch_schema(s.client, s.timeout, s.schema, s.schema_json, error)) return true;
  if (!s.client.spawned()) return false;
  int status = s.client.child_exit_status();
  if (status >= 0) {
    error = fmt::format("`aup run {} {}` ended before it answered (exit status {}; why is above): nothing was sent "
                        "to the store",
                        o.target, o.memory ? "--memory" : "--data " + o.data, status);
  }
  return false;
}

}  // namespace

int shell(const ShellOptions& o, const char* self) {
  std::signal(SIGPIPE, SIG_IGN);
  Session s;
  s.tty = ::isatty(0) && ::isatty(1);
  s.mode = s.tty ? RowsMode::Table : RowsMode::Json;
  s.memory = o.memory;
  s.timeout = o.timeout_seconds;
  g_session = &s;
  std::string error;
  if (!open_target(s, o, self, error) || !first_answer(s, o, error)) {
    fmt::print(stderr, "aup shell: {}\n", error);
    return 2;
  }
  if (s.tty) {
    interactive(s, o);
  } else {
    scripted(s, o.bail);
  }
  // As `aup run` (docs/operations.md, "Exit status of a batch run"): a
  // failed request is an answer, printed; a store that could not commit,
  // or a --bail stop, is not what the input asked for.
  if (s.any_unavailable) {
    fmt::print(stderr, "aup shell: some events were answered `unavailable`: the store could not commit them\n");
  }
  return s.lost ? 2 : s.any_unavailable || (o.bail && s.any_failed) ? 1 : 0;
}

}  // namespace aup::cli

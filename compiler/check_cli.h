// The command lines of the front end's commands, `check` and `build`,
// declared once for both executables that offer them (`aup` and `aupc`;
// the work behind them is compiler/driver.h), and what both do before and
// after CLI11 parses: `help CMD`, and every usage error said in aup's words
// (`aup run: unknown option `--dta`; did you mean `--data`?`), never
// CLI11's. Include after CLI/CLI.hpp.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <sys/stat.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/driver.h"
#include "compiler/suggest.h"

namespace aup {

// ---- option values: checked in aup's words, nothing added to the help -------------
//
// CLI11's own validators print their workings in the help's type column
// (`UINT:INT in [0 - 4294967296]`) and refuse in theirs; these print
// nothing there (an option's type_name says what it takes, its help the
// range) and refuse as `VALUE: expected ...`, which usage_error() puts
// after the option's name.

// `v` for people: a power of two past a million as 2^N; bytes in KiB,
// MiB, GiB or TiB when they are a whole number of one.
inline std::string amount_words(uint64_t v, bool bytes) {
  if (bytes) {
    static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
    for (int u = 3; u >= 0; --u) {
      uint64_t unit = uint64_t{1} << (10 * (u + 1));
      if (v >= unit && v % unit == 0) return fmt::format("{} {}", v / unit, kUnits[u]);
    }
    return fmt::format("{} {}", v, v == 1 ? "byte" : "bytes");
  }
  if (v > 1000000 && (v & (v - 1)) == 0) return fmt::format("2^{}", __builtin_ctzll(v));
  return std::to_string(v);
}

// A whole number from lo to hi (`bytes`: a size, said in KiB and such).
inline CLI::Validator whole_number(uint64_t lo, uint64_t hi, bool bytes = false) {
  return CLI::Validator(
      [lo, hi, bytes](std::string& text) -> std::string {
        std::string range = fmt::format("from {} to {}", amount_words(lo, bytes), amount_words(hi, bytes));
        char* end = nullptr;
        errno = 0;
        unsigned long long v = text.empty() || text[0] == '-' ? 0 : std::strtoull(text.c_str(), &end, 10);
        if (!end || *end != '\0' || errno == ERANGE) {
          return fmt::format("{}: expected a whole number{}, {}", text, bytes ? " of bytes" : "", range);
        }
        if (v < lo || v > hi) {
          // The ends in digits too when words said them (1 GiB): that is what is typed.
          bool worded = amount_words(lo, bytes) != std::to_string(lo) || amount_words(hi, bytes) != std::to_string(hi);
          return fmt::format("{}: out of range; expected {}{}", text, range,
                             worded ? fmt::format(" ({} to {})", lo, hi) : std::string());
        }
        return "";
      },
      "");
}

// A number from lo to hi (seconds, say).
inline CLI::Validator number_between(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        char* end = nullptr;
        double v = text.empty() ? 0 : std::strtod(text.c_str(), &end);
        if (!end || *end != '\0' || !(v >= lo && v <= hi)) {
          return fmt::format("{}: expected a number from {} to {}", text, lo, hi);
        }
        return "";
      },
      "");
}

// One of `names`.
inline CLI::Validator one_of(std::vector<std::string> names) {
  return CLI::Validator(
      [names](std::string& text) -> std::string {
        for (const std::string& n : names) {
          if (n == text) return "";
        }
        std::vector<std::string_view> views(names.begin(), names.end());
        std::string list;
        for (size_t i = 0; i < names.size(); ++i) {
          list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
        }
        return fmt::format("{}: expected {}{}", text, list, did_you_mean(text, views));
      },
      "");
}

// ---- the help's layout ---------------------------------------------------------------

// CLI11's help, with an argument shown by what it takes (`MODULE`, not
// `module MODULE REQUIRED`) in the usage line and the list alike, and its
// labels in words. Set on the program before its commands are added (each
// command takes its parent's formatter).
class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() {
    label("REQUIRED", "(required)");
    label("Needs", "needs");
    label("Excludes", "not with");
    label("Positionals", "Arguments");
    label("SUBCOMMAND", "COMMAND");
    label("SUBCOMMANDS", "COMMANDS");
    label("Subcommands", "Commands");
  }
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    return positional ? opt->get_type_name() : CLI::Formatter::make_option_name(opt, positional);
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    return opt->get_positional() && opt->get_lnames().empty() ? "" : CLI::Formatter::make_option_opts(opt);
  }
  std::string make_option_usage(const CLI::Option* opt) const override {
    std::string name = opt->get_type_name();
    bool many = opt->get_expected_max() > 1 && name.find("...") == std::string::npos;
    name += many ? "..." : "";
    return opt->get_required() ? name : "[" + name + "]";
  }
};

inline void use_help_formatter(CLI::App& app) { app.formatter(std::make_shared<HelpFormatter>()); }

// The commands listed under "Commands" (CLI11: "Subcommands"), at every
// depth. After they are added.
inline void name_command_groups(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands({})) {
    sub->group("Commands");
    name_command_groups(*sub);
  }
}

// ---- the front end's commands ----------------------------------------------------

inline CLI::App* add_check_command(CLI::App& app, CheckOptions& o) {
  o.program = app.get_name();
  CLI::App* cmd = app.add_subcommand(
      "check", "Parse and type-check aup modules; print every error found.\n"
               "Exit status: 0 clean, 1 errors in a module, 2 usage or unreadable file.");
  cmd->add_option("files", o.paths, "the .aup files to check")->required()->type_name("FILE.aup");
  CLI::Option* json = cmd->add_flag("--json", o.json,
                                    "print each diagnostic as a JSON object on its own line (stdout), and nothing\n"
                                    "for a file without errors");
  cmd->add_flag("-q,--quiet", o.quiet, "print nothing for files without errors");
  cmd->add_option("--max-errors", o.max_errors, "show at most N errors per file (1 to 1000000)")
      ->capture_default_str()
      ->type_name("N")
      ->check(whole_number(1, 1000000));
  // JSON has no colors: --color with --json would be ignored, so it is refused.
  cmd->add_option_function<std::string>(
         "--color",
         [&o](const std::string& when) {
           o.color = when == "always" ? ColorMode::Always : when == "never" ? ColorMode::Never : ColorMode::Auto;
         },
         "color diagnostics: auto (on a terminal, unless $NO_COLOR is set; the default), always, never")
      ->type_name("WHEN")
      ->check(one_of({"auto", "always", "never"}))
      ->excludes(json);
  return cmd;
}

inline CLI::App* add_build_command(CLI::App& app, BuildOptions& o) {
  o.program = app.get_name();
  CLI::App* cmd = app.add_subcommand(
      "build", "Compile a module to a module file (schema, bytecode, line table).\n"
               "Exit status: 0 written, 1 errors in the module, 2 usage or I/O.");
  cmd->add_option("source", o.source, "the .aup file")->required()->type_name("FILE.aup");
  cmd->add_option("-o,--output", o.output, "the module file to write (default: FILE.aupm beside the source)")
      ->type_name("FILE.aupm");
  return cmd;
}

// ---- before CLI11 parses ------------------------------------------------------------

// `aup cluster status`: the command's words from the program on.
inline std::string command_words(const CLI::App& cmd) {
  const CLI::App* parent = cmd.get_parent();
  return parent ? command_words(*parent) + " " + cmd.get_name() : cmd.get_name();
}

// "no command `x`; did you mean `y`? (the commands: ...; `aup --help` says more)"
inline void print_no_command(const CLI::App& app, std::string_view word) {
  std::vector<std::string_view> names;
  std::string list;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names.push_back(sub->get_name());
    list += (list.empty() ? "" : ", ") + sub->get_name();
  }
  fmt::print(stderr, "{0}: no command `{1}`{2} (the commands: {3}; `{0} --help` says more)\n", command_words(app),
             word, did_you_mean(word, names), list);
}

// `aup help [COMMAND...]`: that command's help (as `aup COMMAND --help`)
// on stdout.
inline int help_command(CLI::App& app, int argc, char** argv) {
  CLI::App* cmd = &app;
  for (int i = 2; i < argc; ++i) {
    CLI::App* sub = nullptr;
    for (CLI::App* s : cmd->get_subcommands({})) {
      if (s->get_name() == argv[i]) sub = s;
    }
    if (!sub) {
      print_no_command(*cmd, argv[i]);
      return kExitUsage;
    }
    cmd = sub;
  }
  // help(PREV) names the command after PREV in its usage line: the words before it.
  fmt::print("{}", cmd->get_parent() ? cmd->help(command_words(*cmd->get_parent())) : cmd->help());
  return kExitOk;
}

// Before CLI11 parses: the program alone prints the help, `help CMD` a
// command's, and a first word that is no command is named with the
// closest command (CLI11 would only say that a subcommand is required).
// Returns the exit code, or -1 when the line names a known command (or
// starts with an option, which CLI11 handles: --help, --version, or an
// error usage_error() reports).
inline int missing_command(CLI::App& app, int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "{}", app.help());
    return kExitUsage;
  }
  std::string_view first = argv[1];
  if (first == "help") return help_command(app, argc, argv);
  if (first.empty() || first[0] == '-') return -1;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == first) return -1;
  }
  print_no_command(app, first);
  return kExitUsage;
}

// ---- after CLI11 refuses: usage_error() ----------------------------------------------

// The command CLI11 was parsing when it refused: the last one given.
inline CLI::App* parsing_command(CLI::App& app) {
  std::vector<CLI::App*> given = app.get_subcommands();
  return given.empty() ? &app : parsing_command(*given.back());
}

// How `o` is written on a command line: `--data DIR`, `MODULE`.
inline std::string option_words(const CLI::Option& o) {
  if (o.get_positional() && o.get_lnames().empty() && o.get_snames().empty()) return o.get_type_name();
  std::string name = o.get_name();
  return o.get_type_size() == 0 ? name : name + " " + o.get_type_name();
}

// The option of `cmd` CLI11 calls `name` (`--data`, `-o`, `module`).
inline const CLI::Option* find_option(const CLI::App& cmd, std::string_view name) {
  for (const CLI::Option* o : cmd.get_options()) {
    if (o->get_name() == name || o->check_name(std::string(name))) return o;
  }
  return nullptr;
}

// A word where an argument was not expected that names a store (a
// directory, or a bare name with no extension that is nothing yet): a
// store is given with --data, where the command takes one.
inline std::string store_hint(const CLI::App& cmd, const std::string& word) {
  if (!find_option(cmd, "--data")) return "";
  struct stat st;
  bool dir = ::stat(word.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  bool bare = ::stat(word.c_str(), &st) != 0 && word.find('.') == std::string::npos && word.find('=') == std::string::npos;
  if (!dir && !bare) return "";
  return fmt::format("; a store is given with --data DIR ({} --data {})", command_words(cmd), word);
}

// Arguments CLI11 could not place: the first unknown option, with the
// closest the command has; else the first word too many.
inline std::string extras_words(const CLI::App& cmd) {
  std::vector<std::string> extras = cmd.remaining(false);
  for (const std::string& word : extras) {
    if (word.size() < 2 || word[0] != '-') continue;
    std::string name = word.substr(0, word.find('='));
    std::vector<std::string> names;
    for (const CLI::Option* o : cmd.get_options()) {
      for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
      for (const std::string& s : o->get_snames()) names.push_back("-" + s);
    }
    std::vector<std::string_view> views(names.begin(), names.end());
    return fmt::format("unknown option `{}`{} (`{} --help` lists the options)", name, did_you_mean(name, views),
                       command_words(cmd));
  }
  if (extras.empty()) return "";
  if (!cmd.get_subcommands({}).empty()) return "";  // the caller names the commands
  return fmt::format("unexpected argument `{}`{}", extras[0], store_hint(cmd, extras[0]));
}

// What is missing, when CLI11 says something is required.
inline std::string required_words(const CLI::App& cmd) {
  for (const CLI::Option* o : cmd.get_options()) {
    if (o->get_required() && o->count() == 0) {
      return o->get_positional() ? fmt::format("no {} given (`{} --help` says more)", option_words(*o),
                                               command_words(cmd))
                                 : fmt::format("{} is required", option_words(*o));
    }
  }
  if (!cmd.get_subcommands({}).empty()) {
    std::string list;
    for (const CLI::App* sub : cmd.get_subcommands({})) list += (list.empty() ? "" : ", ") + sub->get_name();
    return fmt::format("no command given (the commands: {})", list);
  }
  return "";
}

// CLI11's "A requires B", "A excludes B", "A: 1 required T missing",
// "NAME: VALUE: expected ..." in aup's words; "" when it is none of them.
inline std::string relation_words(const CLI::App& cmd, const CLI::ParseError& e) {
  std::string m = e.what();
  auto split = [&m](std::string_view sep, std::string& a, std::string& b) {
    size_t at = m.find(sep);
    if (at == std::string::npos) return false;
    a = m.substr(0, at);
    b = m.substr(at + sep.size());
    return true;
  };
  std::string a, b;
  if (dynamic_cast<const CLI::RequiresError*>(&e) && split(" requires ", a, b)) return a + " needs " + b;
  if (dynamic_cast<const CLI::ExcludesError*>(&e) && split(" excludes ", a, b)) {
    return fmt::format("{} and {} cannot be given together", a, b);
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && split(": ", a, b)) {
    const CLI::Option* o = find_option(cmd, a);
    return o ? fmt::format("{} needs a value: {}", a, option_words(*o)) : "";
  }
  if (dynamic_cast<const CLI::ValidationError*>(&e) && split(": ", a, b)) {
    const CLI::Option* o = find_option(cmd, a);
    if (o && o->get_positional() && o->get_lnames().empty()) a = o->get_type_name();
    return a + " " + b;
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e)) {
    if (split(" = ", a, b) && a.rfind("Could not convert: ", 0) == 0) {
      a = a.substr(19);
      const CLI::Option* o = find_option(cmd, a);
      return fmt::format("{} {}: expected {}", a, b, o ? o->get_type_name() : "another value");
    }
  }
  return "";
}

// Every usage error CLI11 raises, said as `aup CMD: what; what to do`
// (exit 2); --help and --version as CLI11 prints them (exit 0).
inline int usage_error(CLI::App& app, const CLI::ParseError& e) {
  if (dynamic_cast<const CLI::Success*>(&e)) {
    app.exit(e);
    return kExitOk;
  }
  CLI::App* at = parsing_command(app);
  // Extras belong to the command that could not place them: the one given
  // last, or one before it.
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    while (at->remaining(false).empty() && at->get_parent()) at = at->get_parent();
  }
  CLI::App& cmd = *at;
  std::string words;
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    words = extras_words(cmd);
    if (words.empty() && !cmd.get_subcommands({}).empty() && !cmd.remaining(false).empty()) {
      print_no_command(cmd, cmd.remaining(false)[0]);
      return kExitUsage;
    }
  } else if (dynamic_cast<const CLI::RequiredError*>(&e)) {
    // What could not be placed explains more than what is missing: `aup
    // cluster stauts` (the command required is that word), `aupc check
    // --bogus`.
    if (!cmd.remaining(false).empty()) words = extras_words(cmd);
    if (words.empty() && !cmd.get_subcommands({}).empty() && !cmd.remaining(false).empty()) {
      print_no_command(cmd, cmd.remaining(false)[0]);
      return kExitUsage;
    }
    if (words.empty()) words = required_words(cmd);
  } else {
    words = relation_words(cmd, e);
  }
  if (words.empty()) words = fmt::format("{} (`{} --help` says more)", e.what(), command_words(cmd));
  fmt::print(stderr, "{}: {}\n", command_words(cmd), words);
  return kExitUsage;
}

}  // namespace aup

// Runs `.aup` programs through the front end and compares the diagnostics
// with what each file says it expects. One file is one case:
//
//   tests/check/pass/NAME.aup   must check without any error;
//   tests/check/fail/NAME.aup   lists its expected errors in comments,
//                               `// expect: LINE:COL: fragment`, one per
//                               error, and must produce exactly those (each
//                               at that position, its message containing
//                               the fragment), nothing more.
//
// Usage: check_corpus (--pass | --fail) FILE...   exit 0 when all match.
#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/compiler.h"

namespace {

struct Expectation {
  uint32_t line = 0;
  uint32_t col = 0;
  std::string fragment;
};

std::vector<Expectation> expectations(const std::string& text, std::string& problem) {
  std::vector<Expectation> out;
  const std::string marker = "// expect: ";
  size_t at = 0;
  while ((at = text.find(marker, at)) != std::string::npos) {
    size_t end = text.find('\n', at);
    std::string spec = text.substr(at + marker.size(), end == std::string::npos ? std::string::npos
                                                                                 : end - at - marker.size());
    at += marker.size();
    Expectation e;
    int consumed = 0;
    if (std::sscanf(spec.c_str(), "%u:%u: %n", &e.line, &e.col, &consumed) < 2 || consumed == 0) {
      problem = fmt::format("malformed expectation `{}` (want `LINE:COL: fragment`)", spec);
      return {};
    }
    e.fragment = spec.substr(static_cast<size_t>(consumed));
    out.push_back(e);
  }
  return out;
}

bool run_case(const std::string& path, bool must_pass) {
  std::string text, problem;
  if (!aup::read_source_file(path, text, problem)) {
    fmt::print("FAIL {}: {}\n", path, problem);
    return false;
  }
  std::vector<Expectation> want = expectations(text, problem);
  if (!problem.empty()) {
    fmt::print("FAIL {}: {}\n", path, problem);
    return false;
  }
  if (!must_pass && want.empty()) {
    fmt::print("FAIL {}: a must-fail case needs at least one `// expect: LINE:COL: fragment`\n", path);
    return false;
  }
  auto m = aup::check_source(path, std::move(text));
  const auto& got = m->diags.list();
  bool ok = true;
  auto dump = [&] {
    for (const auto& d : got) fmt::print("  got {}:{}: {}\n", d.pos.line, d.pos.col, d.message);
  };
  if (must_pass) {
    if (!got.empty()) {
      fmt::print("FAIL {}: expected no errors\n", path);
      dump();
      return false;
    }
    fmt::print("ok   {}\n", path);
    return true;
  }
  if (got.size() != want.size()) {
    fmt::print("FAIL {}: expected {} error(s), got {}\n", path, want.size(), got.size());
    ok = false;
  } else {
    for (size_t i = 0; i < want.size(); ++i) {
      const auto& d = got[i];
      const auto& w = want[i];
      if (d.pos.line != w.line || d.pos.col != w.col ||
          d.message.find(w.fragment) == std::string::npos) {
        fmt::print("FAIL {}: error {} expected at {}:{} containing \"{}\"\n", path, i + 1, w.line,
                   w.col, w.fragment);
        ok = false;
      }
    }
  }
  if (!ok) {
    dump();
    return false;
  }
  fmt::print("ok   {}\n", path);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || (std::strcmp(argv[1], "--pass") != 0 && std::strcmp(argv[1], "--fail") != 0)) {
    fmt::print(stderr, "usage: check_corpus (--pass | --fail) FILE...\n");
    return 2;
  }
  bool must_pass = std::strcmp(argv[1], "--pass") == 0;
  int failures = 0;
  for (int i = 2; i < argc; ++i) failures += !run_case(argv[i], must_pass);
  return failures == 0 ? 0 : 1;
}

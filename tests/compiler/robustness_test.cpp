// The front end on damaged input: every prefix of every example file, and
// random mutations of them, must end in success or diagnostics, never in a
// crash, a hang or an assertion. Bounded for CI: AUP_MUTATIONS (default
// 1500 per file) sets how many mutants are tried; the seed is fixed so a
// failure reproduces.
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "compiler/compiler.h"

namespace aup {
namespace {

const char* const kExamples[] = {
    AUP_SOURCE_DIR "/examples/bank/bank.aup",
    AUP_SOURCE_DIR "/examples/tpcc/tpcc.aup",
};

std::string load(const char* path) {
  std::string text, error;
  REQUIRE_MESSAGE(read_source_file(path, text, error), error);
  return text;
}

// Every diagnostic must point inside the file (or just past its end).
void check_sane(const CheckedModule& m) {
  for (const Diagnostic& d : m.diags.list()) {
    REQUIRE(d.pos.line >= 1);
    REQUIRE(d.pos.line <= m.file.line_count());
    REQUIRE(d.pos.col >= 1);
    REQUIRE(d.pos.offset <= m.file.text().size());
    REQUIRE(!d.message.empty());
  }
}

size_t mutation_count() {
  const char* s = std::getenv("AUP_MUTATIONS");
  return s ? std::strtoul(s, nullptr, 10) : 1500;
}

// One random edit of the kind a typist or a broken disk makes.
std::string mutate(const std::string& text, std::mt19937_64& rng) {
  static const char* const kPieces[] = {"{", "}", "(", ")", "[", "]", ",", ":", ";", ".", "..",
                                        "\n", "\"", "\\", "let ", "if ", "for x in ", "return ",
                                        "fail ", "record ", "table ", "on ", "fn ", "query ",
                                        "1e999", "not ", "==", "=", "-", "\xFF", "\xC3", "//"};
  std::string s = text;
  auto pick = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    size_t at = pick(s.size() + 1);
    switch (rng() % 6) {
      case 0:  // replace a byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng());
        break;
      case 1:  // delete a run
        if (!s.empty()) s.erase(at == s.size() ? at - 1 : at, 1 + pick(16));
        break;
      case 2:  // insert a piece of syntax
        s.insert(at, kPieces[pick(std::size(kPieces))]);
        break;
      case 3: {  // duplicate a chunk elsewhere
        size_t from = pick(s.size());
        std::string chunk = s.substr(from, 1 + pick(64));
        s.insert(pick(s.size() + 1), chunk);
        break;
      }
      case 4:  // truncate
        s.resize(at);
        break;
      default:  // insert random bytes
        for (size_t i = 0, n = 1 + pick(4); i < n; ++i) {
          s.insert(s.begin() + static_cast<std::ptrdiff_t>(std::min(at, s.size())), static_cast<char>(rng()));
        }
        break;
    }
  }
  return s;
}

TEST_SUITE("robustness") {
  TEST_CASE("the examples check clean") {
    for (const char* path : kExamples) {
      auto m = check_source(path, load(path));
      CAPTURE(path);
      CHECK_MESSAGE(m->ok(), (m->ok() ? "" : m->diags.list()[0].message));
    }
  }

  TEST_CASE("every prefix of every example") {
    for (const char* path : kExamples) {
      std::string text = load(path);
      for (size_t n = 0; n <= text.size(); ++n) {
        auto m = check_source(path, text.substr(0, n));
        check_sane(*m);
      }
    }
  }

  TEST_CASE("random mutations of every example") {
    std::mt19937_64 rng(20261129);
    size_t count = mutation_count();
    for (const char* path : kExamples) {
      std::string text = load(path);
      for (size_t i = 0; i < count; ++i) {
        std::string mutant = mutate(text, rng);
        auto m = check_source(path, mutant);
        check_sane(*m);
      }
    }
  }
}

}  // namespace
}  // namespace aup

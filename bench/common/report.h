// What every benchmark's report shares: the machine and build a run was
// made on, JSON and Markdown formatting of figures, and writing result files
// (through a .tmp file and a rename, so a half-written result never
// replaces a whole one).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aup::bench {

struct Environment {
  std::string date;         // UTC, ISO 8601
  std::string machine;      // CPU model, online CPUs, kernel
  std::string compiler;     // the compiler that built the benchmarks
  std::string build_type;   // meson build type
  std::string build;        // meson build type, asserts on or off
  double load_average = 0;  // 1-minute load when the run started
};

// Read when called: take it before measuring, so the load average is the
// one the run started under.
Environment environment();

// `s` as a JSON string literal, quotes included.
std::string json_string(const std::string& s);
// `v` as a JSON array, three decimals each.
std::string json_numbers(const std::vector<double>& v);
// 1000000 -> "1,000,000".
std::string grouped(uint64_t n);

// The opening of a result's JSON object: "{" and the fields every
// benchmark writes first (bench, date, command, machine), one a line, each
// with its comma.
std::string json_opening(const std::string& bench, const Environment& env, const std::string& command);
// The opening of a Markdown summary: the title, and when and by what
// command it was made.
std::string markdown_opening(const std::string& title, const Environment& env, const std::string& command);

// Writes `text` to dir/name atomically; throws std::runtime_error on failure.
void write_file(const std::string& dir, const std::string& name, const std::string& text);

// Writes NAME.json and NAME.md to `out_dir` (nowhere when it is empty), then
// the Markdown to stdout. Throws std::runtime_error when a file cannot be
// written.
void publish(const std::string& out_dir, const std::string& name, const std::string& json, const std::string& md);

}  // namespace aup::bench

// Fuzz target: request lines (docs/protocol.md) as `aup run --memory`
// handles them, against fixed modules compiled once at start: the bank and
// every golden program (tests/programs, for arrays, records, defaults and
// text keys in arguments). The input is split into lines as the stdio
// loop splits them (a trailing `\r` dropped, blank lines skipped); the bank
// and each module the input names an event or query of answer every line
// on a fresh in-memory state, so events run the VM on fuzzed arguments and
// later lines see what earlier ones changed.
// Every answer must be one line of JSON.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tests/fuzz/fuzz_common.h"
#include "runtime/durability.h"
#include "runtime/pipeline.h"
#include "runtime/service.h"
#include "vm/state.h"

namespace {

using namespace aup;

// An event may loop; a fuzzer's input is not a workload.
constexpr uint64_t kSteps = 20000;
constexpr double kNow = 1.7e12;

const std::vector<std::unique_ptr<vm::Module>>& modules() {
  static const auto* all = [] {
    auto* v = new std::vector<std::unique_ptr<vm::Module>>;
    for (const char* path : {"examples/bank/bank.aup", "tests/programs/protocol.aup", "tests/programs/values.aup",
                             "tests/programs/tables.aup", "tests/programs/error_codes.aup",
                             "tests/programs/numbers.aup", "tests/programs/statements.aup",
                             "tests/programs/helpers.aup", "tests/programs/rollback.aup",
                             "tests/programs/conditions.aup"}) {
      v->push_back(fuzz::compile_project_file(path));
    }
    return v;
  }();
  return *all;
}

// Whether module `i` answers this input: the bank answers every input;
// another module only one that names (as a JSON string) one of its events
// or queries, so each input costs one or two fresh states, not ten.
bool answers(size_t i, std::string_view input) {
  if (i == 0) return true;
  const vm::Module& m = *modules()[i];
  auto named = [&](const std::string& name) { return input.find('"' + name + '"') != std::string_view::npos; };
  for (const vm::EventDesc& e : m.events) {
    if (named(e.name)) return true;
  }
  for (const vm::Function& f : m.functions) {
    if (f.kind == vm::FnKind::Query && named(f.name)) return true;
  }
  return false;
}

// The lines of one input, as the stdio loop hands them to the service.
std::vector<std::string_view> request_lines(std::string_view input) {
  std::vector<std::string_view> lines;
  while (!input.empty()) {
    size_t nl = input.find('\n');
    std::string_view line = input.substr(0, nl);
    input.remove_prefix(nl == std::string_view::npos ? input.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) lines.push_back(line);
  }
  return lines;
}

// Through the request pipeline as the stdio loop uses it: a query commits
// the events before it, the rest commits at the end (--memory: at once),
// and every answer is one line.
void answer(const vm::Module& m, const std::vector<std::string_view>& lines) {
  vm::State state(m);
  runtime::ServiceOptions o;
  o.step_budget = kSteps;
  runtime::Service service(m, state, o);
  runtime::MemoryDurability memory(state);
  runtime::Committer batch(service, memory, 0);
  auto deliver = [](uint64_t, std::string& answer) {
    if (fuzz::check_answers(answer) != 1) fuzz::oracle_failed("not one answer a line");
  };
  for (std::string_view line : lines) {
    bool query = service.prepare(line);
    if (query && batch.events() > 0) batch.commit(deliver);
    batch.take(0, kNow);
  }
  batch.commit(deliver);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;  // requests are small; keeps each run short
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> lines = request_lines(input);
  for (size_t i = 0; i < modules().size(); ++i) {
    if (answers(i, input)) answer(*modules()[i], lines);
  }
  return 0;
}

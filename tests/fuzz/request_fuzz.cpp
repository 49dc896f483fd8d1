// Fuzz target: request lines (docs/protocol.md) as `aup run --memory`
// handles them, against fixed modules compiled once at start: the bank and
// every golden program (tests/programs, for arrays, records, defaults and
// text keys in arguments). The input is split into lines as the stdio
// loop splits them (a trailing `\r` dropped, blank lines skipped); the bank
// and each module the input names an event or query of answer every line
// on a fresh in-memory state, so events run the VM on fuzzed arguments and
// later lines see what earlier ones changed.
// Every answer must be one line of JSON.
//
// Each module's Service (and its VM, whose register file is 400 KiB) is
// made once and given a new, empty state for every input: making them per
// input took two thirds of the time. What a Service keeps from one input to
// the next is what it keeps from one line to the next (its parse buffers,
// the VM's registers and temporaries, each written before it is read), so
// an input's answers must not depend on the inputs before it. That is
// checked, not assumed: for one input in 64 (chosen by its hash, so the
// same ones each time) the answers are formed again by a Service made for
// it alone and must be the same bytes.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tests/fuzz/fuzz_common.h"
#include "runtime/durability.h"
#include "runtime/committer.h"
#include "runtime/service.h"
#include "vm/state.h"

namespace {

using namespace aup;

// An event may loop; a fuzzer's input is not a workload.
constexpr uint64_t kSteps = 20000;
constexpr double kNow = 1.7e12;

// One module, compiled at start, with the Service that answers its inputs.
struct Answerer {
  explicit Answerer(const char* path)
      : module(fuzz::compile_project_file(path)), idle(*module), service(*module, idle, options()) {}
  static runtime::ServiceOptions options() {
    runtime::ServiceOptions o;
    o.step_budget = kSteps;
    return o;
  }
  std::unique_ptr<vm::Module> module;
  vm::State idle;  // what the service is bound to between inputs (never changed)
  runtime::Service service;
};

const std::vector<std::unique_ptr<Answerer>>& answerers() {
  static const auto* all = [] {
    auto* v = new std::vector<std::unique_ptr<Answerer>>;
    for (const char* path : {"examples/bank/bank.aup", "tests/programs/protocol.aup", "tests/programs/values.aup",
                             "tests/programs/tables.aup", "tests/programs/error_codes.aup",
                             "tests/programs/numbers.aup", "tests/programs/statements.aup",
                             "tests/programs/helpers.aup", "tests/programs/rollback.aup",
                             "tests/programs/conditions.aup", "tests/programs/results.aup",
                             "tests/programs/text_keys.aup", "tests/programs/text_order.aup"}) {
      v->push_back(std::make_unique<Answerer>(path));
    }
    return v;
  }();
  return *all;
}

// The modules (a bit each) that have an event or query of each name.
const std::unordered_map<std::string_view, uint32_t>& named_modules() {
  static const auto* all = [] {
    auto* m = new std::unordered_map<std::string_view, uint32_t>;
    if (answerers().size() > 32) fuzz::oracle_failed("more modules than bits in a mask");
    for (size_t i = 0; i < answerers().size(); ++i) {
      const vm::Module& mod = *answerers()[i]->module;
      for (const vm::EventDesc& e : mod.events) (*m)[e.name] |= uint32_t{1} << i;
      for (const vm::Function& f : mod.functions) {
        if (f.kind == vm::FnKind::Query) (*m)[f.name] |= uint32_t{1} << i;
      }
    }
    return m;
  }();
  return *all;
}

// The modules that answer this input: the bank answers every input;
// another module only one that names (as a JSON string: between two
// quotes, anywhere) one of its events or queries, so each input costs one
// or two modules' runs, not thirteen. Names hold no quote, so the text up
// to the next quote is the only name a quote can open.
uint32_t answering(std::string_view input) {
  uint32_t modules = 1;
  for (size_t q = input.find('"'); q != std::string_view::npos;) {
    size_t end = input.find('"', q + 1);
    if (end == std::string_view::npos) break;
    auto it = named_modules().find(input.substr(q + 1, end - q - 1));
    if (it != named_modules().end()) modules |= it->second;
    q = end;
  }
  return modules;
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
// and every answer is one line. Returns the answers, in order.
std::string answer(runtime::Service& service, vm::State& state, const std::vector<std::string_view>& lines) {
  runtime::MemoryDurability memory(state);
  runtime::Committer batch(service, memory, 0);
  std::string answers;
  auto deliver = [&](uint64_t, runtime::Answer& a) {
    size_t before = answers.size();
    runtime::append_answer_line(answers, a);
    if (fuzz::check_answers(std::string_view(answers).substr(before)) != 1) {
      fuzz::oracle_failed("not one answer a line");
    }
  };
  runtime::JsonDoc doc;
  for (std::string_view line : lines) {
    runtime::RequestText text = runtime::RequestText::of_line(line);
    runtime::Request r = service.prepare(text, doc);
    if (r.kind == runtime::RequestKind::Query && batch.events() > 0) batch.commit(deliver);
    batch.take(0, r, text, kNow);
  }
  batch.commit(deliver);
  return answers;
}

// The module's kept Service on a fresh state; for some inputs, again on a
// Service made for this input alone, which must answer the same.
void answer_on(Answerer& a, const std::vector<std::string_view>& lines, bool recheck) {
  std::string answers;
  {
    vm::State state(*a.module);
    a.service.rebind(state);
    answers = answer(a.service, state, lines);
    a.service.rebind(a.idle);
  }
  if (!recheck) return;
  vm::State state(*a.module);
  runtime::Service alone(*a.module, state, Answerer::options());
  if (answer(alone, state, lines) != answers) {
    fuzz::oracle_failed("a kept Service answered otherwise than a new one: state carried over from an earlier input");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;  // requests are small; keeps each run short
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> lines = request_lines(input);
  bool recheck = XXH3_64bits(data, size) % 64 == 0;
  uint32_t modules = answering(input);
  for (size_t i = 0; i < answerers().size(); ++i) {
    if (modules & (uint32_t{1} << i)) answer_on(*answerers()[i], lines, recheck);
  }
  return 0;
}

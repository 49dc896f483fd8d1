// Fuzz target: a source text through the lexer, parser and checker to its
// diagnostics (each must point inside the file and render); when it checks,
// code generation, the module verifier (the compiler's output must pass
// it), the module file round trip, the disassembler, and a short run of
// every event and query that needs no arguments.
#include <cstdint>
#include <string>
#include <vector>

#include "vm/disasm.h"
#include "tests/fuzz/fuzz_common.h"
#include "vm/module_file.h"
#include "runtime/committer.h"
#include "runtime/service.h"
#include "vm/state.h"

namespace {

using namespace aup;

// Runs are short: straight-line code plus a few loops of some hundred rounds.
constexpr uint64_t kSteps = 2000;
constexpr size_t kMaxRuns = 32;

void check_diagnostics(const CheckedModule& m) {
  size_t shown = 0;
  for (const Diagnostic& d : m.diags.list()) {
    if (d.pos.line < 1 || d.pos.line > m.file.line_count() || d.pos.col < 1 ||
        d.pos.offset > m.file.text().size() || d.message.empty()) {
      fuzz::oracle_failed("a diagnostic outside the file: " + d.message);
    }
    if (shown++ < 8) {
      (void)render_text(m.file, d, true);
      (void)render_json(m.file, d);
    }
  }
}

// Every event (with no arguments: those whose fields all have defaults
// run) and every query without parameters, on a fresh in-memory state.
void run_module(const vm::Module& m) {
  vm::State state(m);
  runtime::ServiceOptions o;
  o.step_budget = kSteps;
  runtime::Service service(m, state, o);
  std::vector<std::string> lines;
  for (const vm::EventDesc& e : m.events) {
    std::string line = "{\"event\":";
    runtime::json_append_string(line, e.name);
    lines.push_back(line + "}");
  }
  for (const vm::Function& f : m.functions) {
    if (f.kind != vm::FnKind::Query || !f.param_names.empty()) continue;
    std::string line = "{\"query\":";
    runtime::json_append_string(line, f.name);
    lines.push_back(line + "}");
  }
  runtime::MemoryDurability memory(state);
  runtime::Committer batch(service, memory, 0);
  std::string out;
  runtime::JsonDoc doc;
  for (size_t i = 0; i < lines.size() && i < kMaxRuns; ++i) {
    runtime::RequestText text = runtime::RequestText::of_line(lines[i]);
    batch.take(0, service.prepare(text, doc), text, 1.7e12);
    batch.commit([&out](uint64_t, runtime::Answer& a) { runtime::append_answer_line(out, a); });
  }
  fuzz::check_answers(out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxSourceBytes) return 0;
  auto checked = check_source("fuzz.aup", std::string(reinterpret_cast<const char*>(data), size));
  check_diagnostics(*checked);
  if (!checked->ok()) return 0;
  Diagnostics codegen;
  std::unique_ptr<vm::Module> m = generate(*checked, codegen);
  if (!m) {
    if (codegen.empty()) fuzz::oracle_failed("code generation failed without saying why");
    return 0;
  }
  std::string error;
  if (!vm::verify_module(*m, error)) fuzz::oracle_failed("the compiler's output fails the verifier: " + error);
  std::vector<uint8_t> bytes = vm::encode_module(*m);
  vm::Module back;
  if (!vm::decode_module(bytes, back, error)) fuzz::oracle_failed("the compiler's output does not decode: " + error);
  if (vm::encode_module(back) != bytes) fuzz::oracle_failed("the module file does not round-trip");
  (void)vm::disassemble(*m);
  m->prepare();
  run_module(*m);
  return 0;
}

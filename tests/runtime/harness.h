// A module running in-process for tests: compiled from source, with a State
// and a Service, answering request lines like `aup run --memory`.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "compiler/codegen.h"
#include "compiler/compiler.h"
#include "runtime/committer.h"
#include "runtime/durability.h"
#include "runtime/json.h"
#include "runtime/service.h"
#include "vm/jit/jit.h"
#include "vm/state.h"

namespace aup::testing {

// One request line prepared and run on `service`, not committed (as the
// events of a batch are, before its commit): what it did, and its answer
// as the line protocol writes it (an applied event's as if committed).
inline runtime::Outcome apply_line(runtime::Service& service, std::string_view line, double now = 0,
                                   std::string* answer = nullptr) {
  runtime::JsonDoc doc;
  runtime::Answer a;
  runtime::Outcome o = service.run(service.prepare(runtime::RequestText::of_line(line), doc), now, a);
  if (answer) {
    answer->clear();
    runtime::append_answer_line(*answer, a);
  }
  return o;
}

class Running {
 public:
  // `metrics`: what the Service counts into and answers stats requests
  // from (runtime/metrics.h), or none.
  explicit Running(const std::string& source, uint64_t steps = vm::kDefaultStepBudget,
                   runtime::Metrics* metrics = nullptr) {
    auto checked = check_source("test.aup", source);
    if (!checked->ok()) FAIL(checked->diags.list()[0].message);
    Diagnostics d;
    module_ = generate(*checked, d);
    REQUIRE(module_);
    module_->prepare();
    state_ = std::make_unique<vm::State>(*module_);
    runtime::ServiceOptions o;
    o.step_budget = steps;
    o.metrics = metrics;
    // AUP_TEST_ENGINE=jit runs the same tests on native code (tests/meson.build
    // registers the model tests both ways).
    const char* engine = std::getenv("AUP_TEST_ENGINE");
    if (engine && std::string_view(engine) == "jit") {
      std::string error;
      native_ = vm::jit::compile(*module_, vm::jit::CompileOptions{}, error);  // no cache: compile each time
      REQUIRE_MESSAGE(native_, error);
      o.native = native_.get();
    }
    service_ = std::make_unique<runtime::Service>(*module_, *state_, o);
    memory_ = std::make_unique<runtime::MemoryDurability>(*state_);
    batch_ = std::make_unique<runtime::Committer>(*service_, *memory_, 0);
  }

  // One request, a batch of its own; the response line (without its
  // newline). Committed, as --memory commits.
  std::string call(const std::string& line, double now = 1.7e12) {
    std::string out;
    runtime::RequestText text = runtime::RequestText::of_line(line);
    runtime::JsonDoc doc;
    batch_->take(0, service_->prepare(text, doc), text, now);
    batch_->commit([&out](uint64_t, runtime::Answer& a) { runtime::append_answer_line(out, a); });
    REQUIRE(!out.empty());
    REQUIRE(out.back() == '\n');
    out.pop_back();
    return out;
  }

  // The response parsed; `ok()`, `code()` and `result_num()` read it.
  struct Reply {
    std::string text;
    runtime::JsonDoc doc;
    bool ok() const { return text.find("\"ok\":true") != std::string::npos; }
    std::string code() const {
      auto at = text.find("\"code\":\"");
      if (at == std::string::npos) return "";
      at += 8;
      return text.substr(at, text.find('"', at) - at);
    }
  };
  Reply reply(const std::string& line) {
    Reply r;
    r.text = call(line);
    std::string error;
    REQUIRE_MESSAGE(r.doc.parse(r.text, error), error);
    return r;
  }

  vm::State& state() { return *state_; }
  const vm::Module& module() const { return *module_; }
  runtime::Service& service() { return *service_; }

 private:
  std::unique_ptr<vm::Module> module_;
  std::unique_ptr<vm::State> state_;
  std::unique_ptr<vm::NativeCode> native_;  // --engine jit's code, or null
  std::unique_ptr<runtime::Service> service_;
  std::unique_ptr<runtime::MemoryDurability> memory_;
  std::unique_ptr<runtime::Committer> batch_;
};

// The text of a source file of the project.
inline std::string source(const char* path) {
  std::string text, error;
  REQUIRE_MESSAGE(read_source_file(path, text, error), error);
  return text;
}

}  // namespace aup::testing

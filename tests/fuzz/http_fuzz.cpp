// Fuzz target: the bytes of one HTTP connection (runtime/http.h) as
// `aup run --listen http://...` frames them, and the bank answering what
// they ask. The input's first byte chooses how many bytes each read brings
// (1 to 256), so requests split at any point; the rest is what the client
// sends, then its end of input.
//
// Oracles: every request line the framer makes is one the Service could
// have had over the line protocol: `{"event":NAME,"args":BODY}` (with a
// `"key"` after the args when an Idempotency-Key header came),
// `{"query":...}`, `{"schema":{}}` or `{"stats":{}}`, and when it is JSON
// its object has only those keys (a body never adds one); every refusal is a `bad_request`
// answer; no piece comes once the framer said the connection is done; and
// the responses framed for the pieces, read back by the client's reader,
// are one per piece, in order, each with its answer as the body and the
// status the table gives its code.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/durability.h"
#include "runtime/http.h"
#include "runtime/pipeline.h"
#include "runtime/service.h"
#include "tests/fuzz/fuzz_common.h"
#include "vm/state.h"

namespace {

using namespace aup;
using namespace std::chrono_literals;

constexpr uint64_t kSteps = 20000;
constexpr double kNow = 1.7e12;
constexpr size_t kMaxBody = 4096;

struct Bank {
  Bank() : module(fuzz::compile_project_file("examples/bank/bank.aup")), idle(*module), service(*module, idle, options()) {}
  static runtime::ServiceOptions options() {
    runtime::ServiceOptions o;
    o.step_budget = kSteps;
    return o;
  }
  std::unique_ptr<vm::Module> module;
  vm::State idle;
  runtime::Service service;
};

Bank& bank() {
  static Bank* b = new Bank;
  return *b;
}

void check_request_line(std::string_view line) {
  bool fixed = line == R"({"schema":{}})" || line == R"({"stats":{}})";
  bool shaped = line.rfind(R"({"event":")", 0) == 0 || line.rfind(R"({"query":")", 0) == 0 || fixed;
  if (!shaped || line.back() != '}') fuzz::oracle_failed("a request line of another shape: " + std::string(line));
  if (fixed) return;
  runtime::JsonDoc doc;
  std::string error;
  if (!doc.parse(line, error)) return;  // a body that is not JSON: the Service says bad_request
  const runtime::JsonNode& root = doc.node(doc.root());
  if (root.kind != runtime::JsonNode::Kind::Object) fuzz::oracle_failed("a request line that is not an object");
  uint32_t keys = doc.member(doc.root(), "key") != 0 ? 3u : 2u;
  if (root.count != keys || doc.member(doc.root(), "args") == 0) {
    fuzz::oracle_failed("a body added keys to its request line: " + std::string(line));
  }
}

// The answers of one connection's pieces, through the pipeline as the
// owner server runs it, each framed as its response.
void serve(std::string_view bytes, size_t step) {
  Bank& b = bank();
  vm::State state(*b.module);
  b.service.rebind(state);
  runtime::MemoryDurability memory(state);
  runtime::Committer batch(b.service, memory, 0);
  runtime::HttpFramer framer(kMaxBody, 10s);
  std::vector<std::string> answers;
  std::string_view request;
  std::string refusal;
  auto take = [&] {
    for (runtime::HttpFramer::Piece p; (p = framer.next(request, refusal)) != runtime::HttpFramer::Piece::None;) {
      if (p == runtime::HttpFramer::Piece::Answer) {
        if (refusal.rfind(R"({"ok":false,"error":{"code":"bad_request")", 0) != 0) {
          fuzz::oracle_failed("a refusal that is not bad_request: " + refusal);
        }
        batch.add(0, refusal);
        continue;
      }
      check_request_line(request);
      b.service.prepare(request);
      batch.take(0, kNow, request);
    }
    batch.commit([&](uint64_t, std::string& answer) { answers.push_back(answer); });
  };
  for (size_t at = 0; at < bytes.size() && !framer.eof();) {
    size_t n = framer.feed(bytes.substr(at, std::min(step, bytes.size() - at)));
    at += n;
    take();
    if (n == 0 && !framer.eof()) fuzz::oracle_failed("the framer took nothing and is not done");
  }
  framer.set_eof();
  take();
  b.service.rebind(b.idle);

  std::string responses;
  for (const std::string& a : answers) framer.frame(a, responses);
  runtime::HttpAnswerReader reader;
  std::string error, body;
  if (!reader.feed(responses, error)) fuzz::oracle_failed("framed responses do not read back: " + error);
  int status = 0;
  for (const std::string& a : answers) {
    if (!reader.next(status, body) || body != a) fuzz::oracle_failed("a response lost or out of order");
    if (fuzz::check_answers(body) != 1) fuzz::oracle_failed("a response's body is not one answer");
    int from_code = runtime::http_status_of_answer(a);
    // A refusal has a status of its own (404, 405, 408, 413, 431, 400).
    if (status != from_code && a.find(R"("code":"bad_request")") == std::string::npos) {
      fuzz::oracle_failed("a status other than its code's");
    }
  }
  if (reader.next(status, body)) fuzz::oracle_failed("more responses than pieces");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 64 * 1024) return 0;
  size_t step = size_t{data[0]} + 1;
  serve(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), step);
  return 0;
}

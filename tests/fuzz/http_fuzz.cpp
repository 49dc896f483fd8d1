// Fuzz target: the bytes of one HTTP connection (runtime/http.h) as
// `aup run --listen http://...` frames them, and the bank answering what
// they ask. The input's first byte chooses how many bytes each read brings
// (1 to 256), so requests split at any point; the rest is what the client
// sends, then its end of input.
//
// Oracles: every request the framer makes is a route's: an event or a
// query with a name (no `/` in it) and its body, the schema or the stats,
// and the Service prepares it to that kind or refuses it; every refusal is
// a `bad_request` answer; no piece comes once the framer said the
// connection is done; and the responses framed for the pieces, read back
// by the client's reader, are one per piece, in order, each with its
// answer as the body and the status the table gives its code. And a framer
// that reuses heads seen before (runtime/http.h) makes the same pieces and
// responses as one that runs the parser over every request.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/durability.h"
#include "runtime/http.h"
#include "runtime/committer.h"
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

void check_request(const runtime::RequestText& r, const runtime::Request& prepared) {
  using runtime::RequestKind;
  if (r.form != runtime::RequestText::Form::Route) fuzz::oracle_failed("a request that is not a route's");
  bool named = r.kind == RequestKind::Event || r.kind == RequestKind::Query;
  if (named && (r.name.empty() || r.name.find('/') != std::string_view::npos)) {
    fuzz::oracle_failed("a route's name that is no name: " + std::string(r.name));
  }
  if (!named && (r.kind == RequestKind::Refused || !r.body.empty() || r.has_key)) {
    fuzz::oracle_failed("a schema or stats request with a body or key");
  }
  if (prepared.kind != RequestKind::Refused && prepared.kind != r.kind) {
    fuzz::oracle_failed("a route prepared to another kind of request");
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
  std::vector<runtime::Answer> answers;
  runtime::RequestText request;
  runtime::Answer refusal;
  runtime::JsonDoc doc;
  auto take = [&] {
    for (runtime::HttpFramer::Piece p; (p = framer.next(request, refusal)) != runtime::HttpFramer::Piece::None;) {
      if (p == runtime::HttpFramer::Piece::Answer) {
        if (refusal.code != runtime::Code::BadRequest) fuzz::oracle_failed("a refusal that is not bad_request");
        std::swap(batch.add(0), refusal);
        continue;
      }
      runtime::Request r = b.service.prepare(request, doc);
      check_request(request, r);
      batch.take(0, r, request, kNow);
    }
    batch.commit([&](uint64_t, runtime::Answer& a) { answers.push_back(std::move(a)); });
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

  // A HEAD's response is its head alone (no client reads it as GET's):
  // checked here, and left out of what the reader reads back.
  std::string responses;
  std::vector<bool> head_only;
  for (const runtime::Answer& a : answers) {
    head_only.push_back(framer.head_only_next());
    if (!head_only.back()) {
      framer.frame(a, responses);
      continue;
    }
    std::string one;
    framer.frame(a, one);
    size_t end = one.find("\r\n\r\n");
    std::string_view after = end == std::string::npos ? std::string_view{} : std::string_view(one).substr(end + 4);
    bool interim_only = after.empty() || after == "HTTP/1.1 100 Continue\r\n\r\n";
    if (one.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos || !interim_only) {
      fuzz::oracle_failed("a HEAD's response is not a head alone");
    }
    responses += after;  // an interim 100 Continue owed after it
  }
  runtime::HttpAnswerReader reader;
  std::string error, body;
  if (!reader.feed(responses, error)) fuzz::oracle_failed("framed responses do not read back: " + error);
  int status = 0;
  for (size_t i = 0; i < answers.size(); ++i) {
    if (head_only[i]) continue;
    const runtime::Answer& a = answers[i];
    std::string want;
    runtime::append_answer(want, a, false);
    want += '\n';
    if (!reader.next(status, body) || body != want) fuzz::oracle_failed("a response lost or out of order");
    if (fuzz::check_answers(body) != 1) fuzz::oracle_failed("a response's body is not one answer");
    // A refusal has a status of its own (404, 405, 408, 413, 431, 400).
    if (status != runtime::http_status_for_code(a.code) && a.code != runtime::Code::BadRequest) {
      fuzz::oracle_failed("a status other than its code's");
    }
  }
  if (reader.next(status, body)) fuzz::oracle_failed("more responses than pieces");
}

// What a framer makes of `bytes` read `step` at a time: each piece, then
// the response owed to each (to one fixed answer), then whether it ended.
std::string transcript(std::string_view bytes, size_t step, bool reuse_heads) {
  runtime::HttpFramer framer(kMaxBody, 10s, reuse_heads);
  std::string out;
  runtime::RequestText request;
  runtime::Answer refusal, fixed;
  size_t owed = 0;
  auto take = [&] {
    for (runtime::HttpFramer::Piece p; (p = framer.next(request, refusal)) != runtime::HttpFramer::Piece::None;) {
      ++owed;
      if (p == runtime::HttpFramer::Piece::Answer) {
        out += "refused " + refusal.text + "\n";
        continue;
      }
      out += std::to_string(static_cast<int>(request.kind)) + " " + std::string(request.name) + " " +
             std::string(request.body) + (request.has_key ? " key " + std::string(request.key) : "") +
             (request.query.empty() ? "" : " ?" + std::string(request.query)) + "\n";
    }
  };
  for (size_t at = 0; at < bytes.size() && !framer.eof();) {
    size_t n = framer.feed(bytes.substr(at, std::min(step, bytes.size() - at)));
    at += n;
    take();
    if (n == 0) break;
  }
  framer.set_eof();
  take();
  for (; owed > 0; --owed) framer.frame(fixed, out);
  return out + (framer.eof() ? "eof" : "open");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 64 * 1024) return 0;
  size_t step = size_t{data[0]} + 1;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  serve(bytes, step);
  if (transcript(bytes, step, true) != transcript(bytes, step, false)) {
    fuzz::oracle_failed("heads reused made other pieces or responses than the parser");
  }
  return 0;
}

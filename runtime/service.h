// Requests against one state of a module (docs/protocol.md): a request's
// text is prepared once into a typed Request, which run() applies or
// answers.
//
//   {"event": "transfer", "args": {...}, "id": 17}
//   {"query": "balance", "args": {"id": 1}, "id": 18}
//   {"schema": {}}   (the module's events, queries and tables: runtime/schema.h)
//   {"event": "transfer", "args": {...}, "key": "t-81"}   (at most once: runtime/keys.h)
//   {"stats": {}}    (the server's counters and gauges: runtime/metrics.h)
//   {"read": {"table": "accounts", "key": [1]}}   (rows without a query: runtime/read.h)
//
// or the same over HTTP, where the route says what the request is and the
// body holds the arguments (runtime/http.h). `id` is optional, any JSON
// scalar, echoed exactly as it was written. A request's problems are
// answered, never fatal: bad_request (not JSON, not an object, unknown
// keys, neither or both of event/query), unknown_event, unknown_query,
// bad_args (with the path), and the codes an event's code can fail with
// (vm/interp.h).
//
// The Service applies events to the State but does not commit them: the
// Committer (runtime/committer.h) commits a batch once it is durable and
// settles each applied event's answer by the batch's fate.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/answer.h"
#include "runtime/convert.h"
#include "runtime/json.h"
#include "runtime/metrics.h"
#include "runtime/request.h"
#include "vm/interp.h"

namespace aup::runtime {

struct ServiceOptions {
  uint64_t step_budget = vm::kDefaultStepBudget;
  // Native code for the module (`--engine jit`, vm/jit/), or null to
  // interpret. It must outlive every Service given it.
  const vm::NativeCode* native = nullptr;
  // What a stats request answers from; every Service given it counts into
  // it. Null: stats requests are answered `unavailable`. It must outlive
  // every Service given it.
  Metrics* metrics = nullptr;
};

class KeyTable;

// What running a request did, for the Committer.
enum class Outcome : uint8_t {
  EventApplied,  // changed the state: its answer waits for the batch's fate
  EventFailed,   // rolled back, or refused
  Query,         // a query, read, schema or stats request: answered
  Invalid,       // answered bad_request, unknown_*, bad_args
};

class Service {
 public:
  // `m` (prepared) and `s` must outlive the Service.
  Service(const vm::Module& m, vm::State& s, ServiceOptions o);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Parses `text` into `doc` (once) and resolves it against the module:
  // the Request views `doc` and the text, which must outlive it. Changes
  // and counts nothing, so any thread may prepare.
  Request prepare(const RequestText& text, JsonDoc& doc) const;
  // Runs `r` and answers it in `out`. An applied event's answer is ok
  // (with its result) until the Committer settles its batch's fate. `now`:
  // the request's accept time in milliseconds since the Unix epoch.
  Outcome run(const Request& r, double now, Answer& out);
  // Answers event `r` without running it, with `code`: `unavailable` (the
  // store takes no events: not written) or `not_primary` (a replica), and
  // why.
  void refuse_event(const Request& r, Code code, std::string_view why, Answer& out);

  // The idempotency keys of the state this Service applies events to
  // (runtime/keys.h), or null: then a request with a `key` is refused.
  // Set once, before the first request; must outlive the Service.
  void set_keys(KeyTable* keys) { keys_ = keys; }

  // One thread increments them (the one using this Service); any reads.
  const ServiceCounters& counters() const { return counters_; }
  Metrics* metrics() const { return metrics_; }
  const vm::State& state() const { return *state_; }
  const vm::Module& module() const { return module_; }
  // Answers later requests from another state of the module (an I/O
  // thread moving to the newest snapshot). Between requests only.
  void rebind(vm::State& s) {
    state_ = &s;
    vm_.rebind(s);
  }

 private:
  Request prepare_line(std::string_view line, JsonDoc& doc) const;
  Request prepare_route(const RequestText& text, JsonDoc& doc) const;
  Request prepare_query_string(const RequestText& text, bool has_body, JsonDoc& doc) const;
  void resolve(RequestKind kind, std::string_view name, const JsonDoc& doc, uint32_t args, Request& r) const;
  Outcome invalid(Code code, std::string_view why, Answer& out);
  void event_failed(Code code, std::string_view message, Answer& out);
  Outcome event(const Request& r, double now, Answer& out);
  // An event with a key: answered again, refused, or applied and kept.
  Outcome keyed_event(const Request& r, vm::Value rec, double now, Answer& out);
  Outcome apply(const vm::EventDesc& ed, vm::Value rec, double now, Answer& out, size_t max_answer = SIZE_MAX);
  Outcome query(const Request& r, double now, Answer& out);
  Outcome read(const Request& r, Answer& out);
  bool query_params(const Request& r, const vm::Function& f, std::vector<vm::Value>& params, Answer& out);
  // Without the memory walk for GET /health (a probe asked often).
  Outcome stats(Answer& out, bool with_memory);
  // A result `writer` could not write, answered with where `f` returns.
  void result_failed(const ValueToJson& writer, const vm::Function& f, Answer& out);

  const vm::Module& module_;
  vm::State* state_;
  vm::Vm vm_;
  ServiceCounters counters_;
  std::string schema_body_;  // schema_json(module_), made at the first schema request
  KeyTable* keys_ = nullptr;
  std::string digest_;  // a keyed event's (reused)
  Metrics* metrics_;
};

}  // namespace aup::runtime

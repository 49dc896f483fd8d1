// The request protocol (docs/protocol.md): one JSON object per line in, one
// response line out.
//
//   {"event": "transfer", "args": {...}, "id": 17}
//   {"query": "balance", "args": {"id": 1}, "id": 18}
//   {"schema": {}}   (the module's events, queries and tables: runtime/schema.h)
//   {"event": "transfer", "args": {...}, "key": "t-81"}   (at most once: runtime/keys.h)
//   {"stats": {}}    (the server's counters and gauges: runtime/metrics.h)
//   -> {"id":17,"ok":true,"result":{...}}
//   -> {"id":18,"ok":false,"error":{"code":"not_found","message":"..."}}
//
// `id` is optional, any JSON scalar, echoed exactly as it was written. A
// handler that returns nothing answers without "result". Responses are
// compact JSON (no spaces). A request's problems are answered, never
// fatal: bad_request (not JSON, not an object, unknown keys, neither or
// both of event/query), unknown_event, unknown_query, bad_args (with the
// path), and the codes an event's code can fail with (interp.h).
//
// Service applies events to the State but does not commit them: the caller
// commits a batch once it is durable (storage/) or at once (--memory). An
// event refused because the store cannot write is answered `unavailable`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/convert.h"
#include "runtime/json.h"
#include "runtime/metrics.h"
#include "vm/interp.h"

namespace aup::runtime {

struct ServiceOptions {
  uint64_t step_budget = vm::kDefaultStepBudget;
  // Native code for the module (`--engine jit`, vm/jit/), or null to
  // interpret. It must outlive every Service given it.
  const vm::NativeCode* native = nullptr;
  // What `{"stats":{}}` answers from; every Service given it counts into
  // it. Null: stats requests are answered `unavailable`. It must outlive
  // every Service given it.
  Metrics* metrics = nullptr;
};

class Durability;
class KeyTable;

// A request line with its parse, so a line read on one thread (an I/O
// thread) is parsed there, once, and applied on another (the owner). The
// document's views point into the line and into its own scratch, so a
// ParsedLine never moves once made: it is handed over by unique_ptr.
class ParsedLine {
 public:
  explicit ParsedLine(std::string_view text) : line_(text) { ok_ = doc_.parse(line_, error_); }
  ParsedLine(const ParsedLine&) = delete;
  ParsedLine& operator=(const ParsedLine&) = delete;
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }  // why it is not JSON
  const JsonDoc& doc() const { return doc_; }

 private:
  std::string line_;
  JsonDoc doc_;
  std::string error_;
  bool ok_ = false;
};

// What handling a request did, for the loop that batches commits.
enum class Outcome : uint8_t {
  EventApplied,  // changed the state (answered once the batch is durable)
  EventFailed,   // rolled back, or refused
  Query,
  Invalid,       // answered bad_request, unknown_*, bad_args
};

class Service {
 public:
  // `m` (prepared) and `s` must outlive the Service.
  Service(const vm::Module& m, vm::State& s, ServiceOptions o);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Handles one request line (without its newline) and appends the
  // response line, newline included, to `out`, an applied event's too (for
  // callers that commit each event at once). `now`: the accept time in
  // milliseconds since the Unix epoch.
  Outcome handle(std::string_view line, double now, std::string& out);
  // The same in two steps, so a loop can commit pending events before a
  // query runs: prepare parses the line (once) and says whether it is a
  // query; finish applies or answers it. An applied event's answer waits
  // for its batch's fate: finish appends only its result's JSON (nothing
  // when has_result() is false), and the Committer (pipeline.h) forms the
  // answer once the commit says what it is.
  bool prepare(std::string_view line);  // true: a well-formed query request
  // The same for a line parsed elsewhere; it must outlive finish().
  bool prepare(const ParsedLine& parsed);
  Outcome finish(double now, std::string& out);
  // The raw JSON of the prepared request's id ("" when it has none).
  std::string_view id() const { return id_; }
  // Whether the event finish() applied returned a result.
  bool has_result() const { return has_result_; }
  bool prepared_query() const { return !is_event_ && problem_.empty() && parse_error_.empty(); }

  // While set, events are refused with code `unavailable` and this reason.
  void set_refusing(const std::string* reason) { refusing_ = reason; }
  // The idempotency keys of the state this Service applies events to
  // (runtime/keys.h), or null: then a request with a `key` is refused.
  void set_keys(KeyTable* keys) { keys_ = keys; }

  // One thread increments them (the one using this Service); any reads.
  const ServiceCounters& counters() const { return counters_; }
  Metrics* metrics() const { return metrics_; }
  const vm::State& state() const { return *state_; }
  vm::Vm& vm() { return vm_; }
  // Answers later requests from another state of the module (a query
  // thread moving to the newest snapshot). Between requests only.
  void rebind(vm::State& s) {
    state_ = &s;
    vm_.rebind(s);
  }
  // What the prepared request is: an event goes to the owner thread; a
  // query or an invalid request can be finished where it was read.
  bool prepared_event() const { return is_event_ && problem_.empty() && parse_error_.empty(); }

 private:
  void reset();
  bool classify(const JsonDoc& doc);
  std::string schema_problem() const;
  std::string key_problem() const;
  std::string stats_problem() const;
  void event_failed(std::string_view code, size_t code_index, std::string_view message);
  Outcome event(std::string_view name, uint32_t args, double now);
  // An event with a key: answered again, refused, or applied and kept.
  Outcome keyed_event(std::string_view name, uint32_t args, const vm::EventDesc& ed, vm::Value rec, double now);
  Outcome apply(const vm::EventDesc& ed, vm::Value rec, double now, size_t max_answer = SIZE_MAX);
  Outcome query(std::string_view name, uint32_t args, double now);
  void reply_ok(const std::string* body);
  void applied(const std::string* body);
  void reply_error(std::string_view code, std::string_view message);
  // A result `writer` could not write, answered with where `f` returns.
  void result_failed(const ValueToJson& writer, const vm::Function& f);

  const vm::Module& module_;
  vm::State* state_;
  vm::Vm vm_;
  JsonDoc own_doc_;             // what prepare(line) parses into (reused)
  const JsonDoc* doc_ = nullptr;  // the prepared request's parse
  ServiceCounters counters_;
  // The response being built, and the id to echo (raw JSON, or empty).
  std::string* out_ = nullptr;
  std::string_view id_;
  std::string body_;  // a result being written (reused)
  // The prepared request.
  std::string parse_error_;
  std::string problem_;
  uint32_t event_ = 0, query_ = 0, schema_ = 0, stats_ = 0, args_ = 0, key_ = 0;
  std::string schema_body_;  // schema_json(module_), made at the first schema request
  bool is_event_ = false;
  bool has_result_ = false;
  const std::string* refusing_ = nullptr;
  KeyTable* keys_ = nullptr;
  std::string digest_, kept_answer_;  // a keyed event's (reused)
  Metrics* metrics_;
};

}  // namespace aup::runtime

#include "runtime/service.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <chrono>

#include "runtime/convert.h"
#include "runtime/keys.h"
#include "runtime/read.h"
#include "runtime/schema.h"
#include "compiler/suggest.h"

namespace aup::runtime {

namespace {
// A short list of names for "no event `x`" messages.
template <class List, class Keep>
std::string known_names(const List& list, Keep keep) {
  std::string s;
  size_t shown = 0;
  for (const auto& item : list) {
    if (!keep(item)) continue;
    if (shown == 10) {
      s += ", ...";
      break;
    }
    s += shown++ ? ", " : "";
    s += item.name;
  }
  return s.empty() ? "none" : s;
}
// The same names, for did_you_mean (compiler/suggest.h).
template <class List, class Keep>
std::vector<std::string_view> names_of(const List& list, Keep keep) {
  std::vector<std::string_view> names;
  for (const auto& item : list) {
    if (keep(item)) names.emplace_back(item.name);
  }
  return names;
}
// Where function `f` returns a value, as a failure message ends: a result
// that cannot be sent (a number that is not finite, a removed row) fails
// at its return. The line table gives a return the position of the last
// operation of its expression (`/` in `return a / b`), or of the return
// itself when that made no instruction. Neither engine says which return
// ran, so a function with several names each ("a.aup:3:5 or a.aup:7:3").
std::string return_positions(const vm::Module& m, const vm::Function& f) {
  std::string s;
  size_t shown = 0;
  for (uint32_t pc = 0; pc < f.code.size(); ++pc) {
    if (vm::op_of(f.code[pc]) != vm::Op::RET) continue;
    if (shown++ == 4) {
      s += " or another return";
      break;
    }
    vm::LineEntry e = f.position(pc);
    s += fmt::format("{}{}:{}:{}", s.empty() ? "" : " or ", m.source_name, e.line, e.col);
  }
  return s;
}

// An idempotency key (runtime/keys.h): a text of 1 to
// kMaxIdempotencyKeyBytes bytes, on an event (a query changes nothing).
std::string key_problem(RequestKind kind, const JsonNode* n, std::string_view key) {
  if (kind != RequestKind::Event) return "`key` is for events: a query or a schema request changes nothing";
  if (n && n->kind != JsonNode::Kind::String) return "`key` must be a string";
  if (key.empty()) return "`key` must not be empty";
  if (key.size() > kMaxIdempotencyKeyBytes) {
    return fmt::format("`key` is {} bytes; at most {}", key.size(), kMaxIdempotencyKeyBytes);
  }
  return {};
}

// `after` (docs/protocol.md, "Saves"): a query's, a whole save number.
std::string after_problem(RequestKind kind, const JsonNode& n, uint64_t& after) {
  if (!reads_state(kind)) return "`after` is a query's or a read's: the save it must read";
  if (n.kind != JsonNode::Kind::Number || n.num < 0 || n.num > 9007199254740992.0 ||
      n.num != static_cast<double>(static_cast<uint64_t>(n.num))) {
    return "`after` must be a save number: a whole number, 0 or more";
  }
  after = static_cast<uint64_t>(n.num);
  return "";
}

// The members of a request object, by name; the first problem found.
struct Members {
  static constexpr uint32_t kNone = kNoArgs;
  uint32_t event = kNone, query = kNone, schema = kNone, stats = kNone, replicate = kNone, read_body = kNone,
           args = kNone, id = kNone, key = kNone, after = kNone;
  bool stats_memory = false;  // `{"stats": {"memory": true}}`
  std::string problem;

  void read(const JsonDoc& doc) {
    const JsonNode& root = doc.node(doc.root());
    uint32_t k = doc.first_child(doc.root());
    for (uint32_t i = 0; i < root.count; ++i, k = doc.after(k + 1)) {
      std::string_view name = doc.node(k).str;
      uint32_t* slot = name == "event"    ? &event
                       : name == "query"  ? &query
                       : name == "schema" ? &schema
                       : name == "stats"  ? &stats
                       : name == "replicate" ? &replicate
                       : name == "read"   ? &read_body
                       : name == "args"   ? &args
                       : name == "id"     ? &id
                       : name == "key"    ? &key
                       : name == "after"  ? &after
                                          : nullptr;
      if (!slot) {
        note(fmt::format("unknown key `{}`{}; a request has `event` or `query`, `args`, `id`, `key` and `after`", name,
                         did_you_mean(name, {"event", "query", "read", "args", "id", "key", "after", "schema", "stats"})));
      } else if (*slot != kNone) {
        note(fmt::format("key `{}` appears twice", name));
      } else {
        *slot = k + 1;
      }
    }
  }
  void note(std::string p) {
    if (problem.empty()) problem = std::move(p);
  }
  // `{"schema": {}}` and `{"stats": {}}`: nothing else beside them but an
  // id, and an empty object, so that options can be added later without
  // changing what today's requests mean; the one option so far is
  // `{"stats": {"memory": true}}`. `{"replicate": {...}}` (a
  // replica's first request, runtime/replication_stream.h): an object,
  // which the primary reads.
  uint32_t special() const { return schema != kNone ? schema : stats != kNone ? stats : replicate; }
  void check_special(const JsonDoc& doc) {
    std::string_view what = schema != kNone ? "schema" : stats != kNone ? "stats" : "replicate";
    int count = (schema != kNone) + (stats != kNone) + (replicate != kNone);
    if (event != kNone || query != kNone || args != kNone) {
      note(what == "stats" ? "a `stats` request has no `event`, `query`, `schema` or `args`"
                           : fmt::format("a `{}` request has no `event`, `query` or `args`", what));
    } else if (count > 1) {
      note(replicate == kNone ? "a request has `schema` or `stats`, not both"
                              : "a request has one of `schema`, `stats` and `replicate`");
    }
    const JsonNode& n = doc.node(special());
    if (replicate != kNone) {
      if (n.kind != JsonNode::Kind::Object) note("`replicate` must be an object");
    } else if (stats != kNone && n.kind == JsonNode::Kind::Object && n.count == 1 &&
               doc.member(stats, "memory") != 0) {
      JsonNode::Kind v = doc.node(doc.member(stats, "memory")).kind;
      if (v != JsonNode::Kind::True && v != JsonNode::Kind::False) note("`stats`'s `memory` must be true or false");
      stats_memory = v == JsonNode::Kind::True;
    } else if (n.kind != JsonNode::Kind::Object || n.count != 0) {
      note(what == "stats" ? std::string("`stats` must be {} or {\"memory\": true}")
                           : fmt::format("`{}` must be the empty object {{}}", what));
    }
  }
  // `{"read": {...}}` (runtime/read.h): an id and `after` beside it, nothing else.
  void check_read() {
    if (event != kNone || query != kNone || args != kNone || schema != kNone || stats != kNone ||
        replicate != kNone || key != kNone) {
      note("a `read` request has `read`, and perhaps `id` and `after`: no `event`, `query`, `args`, `key`, `schema` "
           "or `stats`");
    }
  }
  void check_target(const JsonDoc& doc) {
    if (event != kNone && query != kNone) {
      note("a request has `event` or `query`, not both");
    } else if (event == kNone && query == kNone) {
      note("a request needs `event` or `query`");
    } else if (doc.node(event != kNone ? event : query).kind != JsonNode::Kind::String) {
      note(fmt::format("`{}` must be a string", event != kNone ? "event" : "query"));
    }
  }
};

// `{"read": {...}}`: its members checked, then the read itself (runtime/read.h).
void prepare_read_line(const vm::Module& module, const JsonDoc& doc, Members& m, Request& r) {
  if (m.problem.empty()) m.check_read();
  if (m.problem.empty() && m.after != Members::kNone) {
    m.note(after_problem(RequestKind::Read, doc.node(m.after), r.after));
  }
  if (!m.problem.empty()) {
    r.refuse(Code::BadRequest, std::move(m.problem));
    return;
  }
  prepare_read(module, doc, m.read_body, r);
}

}  // namespace

Service::Service(const vm::Module& m, vm::State& s, ServiceOptions o)
    : module_(m), state_(&s), vm_(m, s), metrics_(o.metrics) {
  vm_.set_step_budget(o.step_budget);
  vm_.set_native(o.native);
  if (metrics_) metrics_->watch(&counters_);
}

Service::~Service() {
  if (metrics_) metrics_->unwatch(&counters_);
}

// ---- prepare ----------------------------------------------------------------------------

Request Service::prepare(const RequestText& text, JsonDoc& doc) const {
  return text.form == RequestText::Form::Line ? prepare_line(text.line, doc) : prepare_route(text, doc);
}

// Each of these fills one Request, returned from every path, so it is
// made in the caller's place (no copy of it, on the path of every request).
Request Service::prepare_line(std::string_view line, JsonDoc& doc) const {
  Request r;
  std::string error;
  if (!doc.parse(line, error)) {
    r.refuse(Code::BadRequest, "not JSON: " + error);
    return r;
  }
  if (doc.node(doc.root()).kind != JsonNode::Kind::Object) {
    r.refuse(Code::BadRequest, "a request is a JSON object: {\"event\": ..., \"args\": {...}}");
    return r;
  }
  Members m;
  m.read(doc);
  if (m.id != Members::kNone) {
    JsonNode::Kind k = doc.node(m.id).kind;
    if (k == JsonNode::Kind::Array || k == JsonNode::Kind::Object) {
      m.note("`id` must be a number, a string, a bool or null");
    } else {
      r.id = doc.node(m.id).raw;
    }
  }
  if (m.read_body != Members::kNone) {
    prepare_read_line(module_, doc, m, r);
    return r;
  }
  bool special = m.special() != Members::kNone;
  if (m.problem.empty()) special ? m.check_special(doc) : m.check_target(doc);
  RequestKind kind = m.schema != Members::kNone      ? RequestKind::Schema
                     : m.stats != Members::kNone     ? RequestKind::Stats
                     : m.replicate != Members::kNone ? RequestKind::Replicate
                     : m.event != Members::kNone     ? RequestKind::Event
                                                     : RequestKind::Query;
  if (m.problem.empty() && m.key != Members::kNone) {
    const JsonNode& n = doc.node(m.key);
    m.note(key_problem(kind, &n, n.str));
    r.key = n.str;
  }
  if (m.problem.empty() && m.after != Members::kNone) m.note(after_problem(kind, doc.node(m.after), r.after));
  if (!m.problem.empty()) {
    r.refuse(Code::BadRequest, std::move(m.problem));
  } else if (m.args != Members::kNone && doc.node(m.args).kind != JsonNode::Kind::Object) {
    r.refuse(Code::BadArgs, "`args` must be an object");
  } else {
    std::string_view name;
    if (!special) name = doc.node(m.event != Members::kNone ? m.event : m.query).str;
    if (m.stats_memory) name = "memory";
    resolve(kind, name, doc, kind == RequestKind::Replicate ? m.replicate : m.args, r);
  }
  return r;
}

namespace {
// Where in a body of several lines a parse stopped, as editors count
// (" (line 3, column 7)"); nothing for a body of one line, whose byte
// offset says it.
std::string body_position(std::string_view body, size_t at) {
  std::string_view text = body;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  if (text.find('\n') == std::string_view::npos) return "";
  std::string_view before = body.substr(0, std::min(at, body.size()));
  size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
  size_t newline = before.rfind('\n');
  size_t column = newline == std::string_view::npos ? before.size() + 1 : before.size() - newline;
  return fmt::format(" (line {}, column {})", line, column);
}
}  // namespace

// An HTTP request: the route gave its kind and name; the body, parsed on
// its own, is its arguments.
Request Service::prepare_route(const RequestText& text, JsonDoc& doc) const {
  Request r;
  if (text.has_key) {
    std::string problem = key_problem(text.kind, nullptr, text.key);
    if (!problem.empty()) {
      r.refuse(Code::BadRequest, std::move(problem));
      return r;
    }
  }
  uint32_t args = kNoArgs;
  bool named = text.kind == RequestKind::Event || text.kind == RequestKind::Query;
  bool has_body = named && text.body.find_first_not_of(" \t\r\n") != std::string_view::npos;
  if (!text.query.empty()) return prepare_query_string(text, has_body, doc);
  if (has_body) {
    std::string error;
    if (!doc.parse(text.body, error)) {
      r.refuse(Code::BadRequest, "the body is not JSON: " + error + body_position(text.body, doc.error_at()));
      return r;
    }
    if (doc.node(doc.root()).kind != JsonNode::Kind::Object) {
      r.refuse(Code::BadArgs, fmt::format("the body must be a JSON object of arguments (`{{\"name\": value, ...}}`), "
                                          "not {} {}",
                                          json_kind_name(doc.node(doc.root())) == "array" ? "an" : "a",
                                          json_kind_name(doc.node(doc.root()))));
      return r;
    }
    args = doc.root();
  }
  resolve(text.kind, text.name, doc, args, r);
  if (text.has_key) r.key = text.key;
  return r;
}

// GET /queries/NAME?ARGS: the arguments from the query string, made the
// JSON object a body would be (runtime/convert.h), kept by `doc`.
Request Service::prepare_query_string(const RequestText& text, bool has_body, JsonDoc& doc) const {
  Request r;
  resolve(text.kind, text.name, doc, kNoArgs, r);
  if (r.kind == RequestKind::Refused) return r;
  if (has_body) {
    r.refuse(Code::BadRequest, "the arguments come in the query string or in the body, not both");
    return r;
  }
  std::string json, error;
  if (!query_string_args(text.query, module_, module_.functions[r.target], json, error)) {
    r.refuse(Code::BadArgs, std::move(error));
    return r;
  }
  // Each value was read on its own already: the object is JSON.
  bool parsed = doc.parse_copy(json, error);
  assert(parsed);
  (void)parsed;
  r.args = doc.root();
  return r;
}

// The event or query a name means (into `r`), or an unknown_* refusal.
void Service::resolve(RequestKind kind, std::string_view name, const JsonDoc& doc, uint32_t args, Request& r) const {
  r.kind = kind;
  r.doc = &doc;
  r.args = args;
  if (kind == RequestKind::Stats && name == "memory") r.target = kStatsMemory;
  if (kind == RequestKind::Event) {
    int e = module_.event_index(name);
    if (e < 0) {
      auto all = [](const auto&) { return true; };
      r.refuse(Code::UnknownEvent, fmt::format("no event `{}`{}; events: {}", name,
                                               did_you_mean(name, names_of(module_.events, all)),
                                               known_names(module_.events, all)));
      return;
    }
    r.target = static_cast<uint32_t>(e);
  } else if (kind == RequestKind::Query) {
    int q = module_.query_index(name);
    if (q < 0) {
      auto queries = [](const vm::Function& f) { return f.kind == vm::FnKind::Query; };
      r.refuse(Code::UnknownQuery, fmt::format("no query `{}`{}; queries: {}", name,
                                               did_you_mean(name, names_of(module_.functions, queries)),
                                               known_names(module_.functions, queries)));
      return;
    }
    r.target = static_cast<uint32_t>(q);
  }
}

// ---- run ----------------------------------------------------------------------------------

Outcome Service::invalid(Code code, std::string_view why, Answer& out) {
  counters_.bad_requests.inc();
  out.fail(code, why);
  return Outcome::Invalid;
}

// An event that failed (undone) or was refused, counted by its code.
void Service::event_failed(Code code, std::string_view message, Answer& out) {
  counters_.events_failed.inc();
  counters_.failed_by_code[static_cast<size_t>(code)].inc();
  out.fail(code, message);
}

void Service::result_failed(const ValueToJson& writer, const vm::Function& f, Answer& out) {
  out.fail(code_of(writer.code()), fmt::format("{} ({})", writer.error(), return_positions(module_, f)));
}

Outcome Service::run(const Request& r, double now, Answer& out) {
  out.reset();
  out.id.assign(r.id);
  Outcome o = Outcome::Invalid;
  switch (r.kind) {
    case RequestKind::Refused: return invalid(r.refusal, r.why, out);
    case RequestKind::Schema:
      counters_.schemas.inc();
      if (schema_body_.empty()) schema_body_ = schema_json(module_);
      out.has_result = true;
      out.text = schema_body_;
      return Outcome::Query;
    case RequestKind::Stats: return stats(out, r.target == kStatsMemory);
    case RequestKind::Replicate:
      // The server hands a connection whose first request this is to its
      // shipper (runtime/shipper.h); anywhere else it is out of place.
      return invalid(Code::BadRequest,
                     "`replicate` is a replica's first request on a connection to a server that keeps a store "
                     "(aup run --data DIR --listen ADDRESS)",
                     out);
    case RequestKind::Event:
    case RequestKind::Query: {
      // Two clock readings a request for the duration histograms:
      // steady_clock::now() took 27 ns a call in a loop of 10^7 on the
      // 2-core build machine, against microseconds a request.
      auto began = std::chrono::steady_clock::now();
      o = r.kind == RequestKind::Event ? event(r, now, out) : query(r, now, out);
      auto ns = static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - began).count());
      (r.kind == RequestKind::Event ? counters_.event_latency : counters_.query_latency).add(ns);
      break;
    }
    case RequestKind::Read: o = read(r, out); break;
  }
  vm_.reset_arena();
  return o;
}

void Service::refuse_event(const Request& r, Code code, std::string_view why, Answer& out) {
  out.reset();
  out.id.assign(r.id);
  event_failed(code, why, out);
  // Refused before it ran: certainly not written (a replica's refusal
  // names the primary instead).
  if (code == Code::Unavailable) out.fate = storage::Fate::NotWritten;
}

// Not counted among the queries: watching the server does not move what
// it shows.
Outcome Service::stats(Answer& out, bool with_memory) {
  if (!metrics_) {
    out.fail(Code::Unavailable, "this server keeps no stats");
    return Outcome::Query;
  }
  out.stats = std::make_unique<MetricSample>(metrics_->sample());
  if (with_memory) metrics_->add_memory(*state_, *out.stats);
  return Outcome::Query;
}

Outcome Service::event(const Request& r, double now, Answer& out) {
  if (!r.key.empty() && !keys_) {
    return invalid(Code::BadRequest, "this store keeps no idempotency keys: start `aup run` with --keys N to keep them",
                   out);
  }
  const vm::EventDesc& ed = module_.events[r.target];
  JsonToValue reader(*r.doc, vm_);
  vm::Value rec;
  if (!reader.record(r.args, ed.record, &rec)) return invalid(reader.code(), reader.error(), out);
  if (!r.key.empty()) return keyed_event(r, rec, now, out);
  return apply(ed, rec, now, out);
}

// The first request with a key applies and keeps it; a later one with the
// same event and args is answered the kept result (an applied event again:
// its answer, too, leaves once its batch is durable, so it never claims
// more than the first one's); anything else under the key is refused.
Outcome Service::keyed_event(const Request& r, vm::Value rec, double now, Answer& out) {
  const vm::EventDesc& ed = module_.events[r.target];
  digest_ = KeyTable::digest(ed.name, *r.doc, r.args);
  switch (keys_->find(r.key, digest_, out.text)) {
    case KeyTable::Seen::Same:
      counters_.events_ok.inc();
      counters_.events_replayed.inc();
      out.has_result = !out.text.empty();
      return Outcome::EventApplied;
    case KeyTable::Seen::Other:
      event_failed(Code::Duplicate,
                   fmt::format("key \"{}\" was used by another request (another event, or other args); "
                               "a retry sends the same event and args",
                               r.key),
                   out);
      return Outcome::EventFailed;
    case KeyTable::Seen::New: break;
  }
  Outcome o = apply(ed, rec, now, out, kMaxKeptAnswerBytes);
  if (o == Outcome::EventApplied) keys_->keep(r.key, digest_, out.has_result ? out.text : std::string_view{}, now);
  return o;
}

// `max_answer`: the longest answer the event may have (a keyed event's is
// kept with its key); a longer one fails it with `budget`.
Outcome Service::apply(const vm::EventDesc& ed, vm::Value rec, double now, Answer& out, size_t max_answer) {
  size_t mark = state_->mark();
  vm::Value result = 0;
  if (!vm_.run(ed.handler, &rec, 1, now, &result)) {
    state_->rollback(mark);
    event_failed(code_of(vm_.failure().code), vm_.failure().message, out);
    return Outcome::EventFailed;
  }
  const vm::Function& handler = module_.functions[ed.handler];
  if (handler.result_type == vm::kTypeVoid) {
    counters_.events_ok.inc();
    return Outcome::EventApplied;
  }
  // The result is written before the event counts as done: one that cannot
  // be sent (a number that is not finite) fails the event and undoes it.
  out.text.clear();
  ValueToJson writer(vm_);
  if (!writer.write(result, handler.result_type, out.text)) {
    state_->rollback(mark);
    counters_.events_failed.inc();
    counters_.failed_by_code[static_cast<size_t>(writer.code())].inc();
    result_failed(writer, handler, out);
    return Outcome::EventFailed;
  }
  if (out.text.size() > max_answer) {
    state_->rollback(mark);
    event_failed(Code::Budget,
                 fmt::format("the answer is {} bytes of JSON, and a keyed event's answer, kept with its key, "
                             "is at most {} ({})",
                             out.text.size(), max_answer, return_positions(module_, handler)),
                 out);
    return Outcome::EventFailed;
  }
  counters_.events_ok.inc();
  out.has_result = true;
  return Outcome::EventApplied;
}

// Parameters come by name from `args`, each once, none unknown; false
// with the refusal answered.
bool Service::query_params(const Request& r, const vm::Function& f, std::vector<vm::Value>& params, Answer& out) {
  params.assign(f.param_names.size(), 0);
  std::vector<bool> seen(params.size(), false);
  JsonToValue reader(*r.doc, vm_);
  const JsonDoc& doc = *r.doc;
  uint32_t count = r.args == kNoArgs ? 0 : doc.node(r.args).count;
  uint32_t key = r.args == kNoArgs ? 0 : doc.first_child(r.args);
  for (uint32_t k = 0; k < count; ++k, key = doc.after(key + 1)) {
    std::string_view pname = doc.node(key).str;
    size_t p = 0;
    while (p < params.size() && f.param_names[p] != pname) ++p;
    if (p == params.size() || seen[p]) {
      invalid(Code::BadArgs,
              p == params.size() ? unknown_field_message(pname, {f.param_names.begin(), f.param_names.end()})
                                 : twice_field_message(pname),
              out);
      return false;
    }
    seen[p] = true;
    if (!reader.value(key + 1, f.param_types[p], &params[p], pname)) {
      invalid(reader.code(), reader.error(), out);
      return false;
    }
  }
  for (size_t p = 0; p < params.size(); ++p) {
    if (!seen[p]) {
      invalid(Code::BadArgs, missing_field_message(f.param_names[p]), out);
      return false;
    }
  }
  return true;
}

// A read (runtime/read.h): answered as a query is, counted as a read.
Outcome Service::read(const Request& r, Answer& out) {
  if (!answer_read(r, vm_, out)) {
    counters_.bad_requests.inc();
    return Outcome::Invalid;
  }
  counters_.reads.inc();
  return Outcome::Query;
}

Outcome Service::query(const Request& r, double now, Answer& out) {
  const vm::Function& f = module_.functions[r.target];
  std::vector<vm::Value> params;
  if (!query_params(r, f, params, out)) return Outcome::Invalid;
  counters_.queries.inc();
  vm::Value result = 0;
  if (!vm_.run(r.target, params.data(), static_cast<uint32_t>(params.size()), now, &result)) {
    out.fail(code_of(vm_.failure().code), vm_.failure().message);
    return Outcome::Query;
  }
  out.text.clear();
  ValueToJson writer(vm_);
  if (!writer.write(result, f.result_type, out.text)) {
    result_failed(writer, f, out);
    return Outcome::Query;
  }
  out.has_result = true;
  return Outcome::Query;
}

}  // namespace aup::runtime

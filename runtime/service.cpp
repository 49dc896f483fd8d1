#include "runtime/service.h"

#include <fmt/format.h>

#include "runtime/convert.h"
#include "runtime/keys.h"
#include "runtime/reply.h"
#include "runtime/schema.h"

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

void Service::reply_ok(const std::string* body) { append_ok(*out_, id_, body); }

void Service::reply_error(std::string_view code, std::string_view message) {
  append_error(*out_, id_, code, message);
}

void Service::result_failed(const ValueToJson& writer, const vm::Function& f) {
  reply_error(vm::error_code_name(writer.code()),
              fmt::format("{} ({})", writer.error(), return_positions(module_, f)));
}

// An event that failed (undone) or was refused, counted by its code.
void Service::event_failed(std::string_view code, size_t code_index, std::string_view message) {
  counters_.events_failed.inc();
  counters_.failed_by_code[code_index].inc();
  reply_error(code, message);
}

// An applied event: only its result for now (see finish()).
void Service::applied(const std::string* body) {
  has_result_ = body != nullptr;
  if (body) *out_ += *body;
}

Outcome Service::handle(std::string_view line, double now, std::string& out) {
  prepare(line);
  std::string result;
  Outcome o = finish(now, result);
  if (o == Outcome::EventApplied) {
    append_ok(out, id_, has_result_ ? &result : nullptr);
  } else {
    out += result;
  }
  return o;
}

bool Service::prepare(std::string_view line) {
  std::string error;
  if (!own_doc_.parse(line, error)) {
    reset();
    parse_error_ = "not JSON: " + error;
    return false;
  }
  return classify(own_doc_);
}

bool Service::prepare(const ParsedLine& parsed) {
  if (!parsed.ok()) {
    reset();
    parse_error_ = "not JSON: " + parsed.error();
    return false;
  }
  return classify(parsed.doc());
}

void Service::reset() {
  id_ = {};
  parse_error_.clear();
  problem_.clear();
  constexpr uint32_t kNone = JsonToValue::kNoNode;
  event_ = query_ = schema_ = stats_ = args_ = key_ = kNone;
  is_event_ = false;
}

// What the parsed request asks for, or what is wrong with it.
bool Service::classify(const JsonDoc& doc) {
  reset();
  doc_ = &doc;
  constexpr uint32_t kNone = JsonToValue::kNoNode;
  const JsonNode& root = doc_->node(doc_->root());
  if (root.kind != JsonNode::Kind::Object) {
    parse_error_ = "a request is a JSON object: {\"event\": ..., \"args\": {...}}";
    return false;
  }
  uint32_t id = kNone;
  uint32_t key = doc_->first_child(doc_->root());
  for (uint32_t k = 0; k < root.count; ++k) {
    std::string_view name = doc_->node(key).str;
    uint32_t* slot = name == "event"    ? &event_
                     : name == "query"  ? &query_
                     : name == "schema" ? &schema_
                     : name == "stats"  ? &stats_
                     : name == "args"   ? &args_
                     : name == "id"     ? &id
                     : name == "key"    ? &key_
                                        : nullptr;
    if (!slot) {
      if (problem_.empty()) {
        problem_ = fmt::format("unknown key `{}`; a request has `event` or `query`, `args`, `id` and `key`", name);
      }
    } else if (*slot != kNone) {
      if (problem_.empty()) problem_ = fmt::format("key `{}` appears twice", name);
    } else {
      *slot = key + 1;
    }
    key = doc_->after(key + 1);
  }
  if (id != kNone) {
    JsonNode::Kind k = doc_->node(id).kind;
    if (k == JsonNode::Kind::Array || k == JsonNode::Kind::Object) {
      if (problem_.empty()) problem_ = "`id` must be a number, a string, a bool or null";
    } else {
      id_ = doc_->node(id).raw;
    }
  }
  if (problem_.empty() && schema_ != kNone) {
    problem_ = schema_problem();
  } else if (problem_.empty() && stats_ != kNone) {
    problem_ = stats_problem();
  } else if (problem_.empty()) {
    if (event_ != kNone && query_ != kNone) {
      problem_ = "a request has `event` or `query`, not both";
    } else if (event_ == kNone && query_ == kNone) {
      problem_ = "a request needs `event` or `query`";
    } else if (doc_->node(event_ != kNone ? event_ : query_).kind != JsonNode::Kind::String) {
      problem_ = fmt::format("`{}` must be a string", event_ != kNone ? "event" : "query");
    }
  }
  if (problem_.empty() && key_ != kNone) problem_ = key_problem();
  is_event_ = event_ != kNone;
  return problem_.empty() && !is_event_;
}

// An idempotency key (runtime/keys.h): a text of 1 to
// kMaxIdempotencyKeyBytes bytes, on an event (a query changes nothing).
std::string Service::key_problem() const {
  if (event_ == JsonToValue::kNoNode) return "`key` is for events: a query or a schema request changes nothing";
  const JsonNode& n = doc_->node(key_);
  if (n.kind != JsonNode::Kind::String) return "`key` must be a string";
  if (n.str.empty()) return "`key` must not be empty";
  if (n.str.size() > kMaxIdempotencyKeyBytes) {
    return fmt::format("`key` is {} bytes; at most {}", n.str.size(), kMaxIdempotencyKeyBytes);
  }
  return {};
}

// `{"schema": {}}` asks for the module's description (runtime/schema.h):
// nothing else beside it but an id, and an empty object, so that options
// can be added later without changing what today's requests mean.
std::string Service::schema_problem() const {
  constexpr uint32_t kNone = JsonToValue::kNoNode;
  if (event_ != kNone || query_ != kNone || args_ != kNone) {
    return "a `schema` request has no `event`, `query` or `args`";
  }
  if (stats_ != kNone) return "a request has `schema` or `stats`, not both";
  const JsonNode& n = doc_->node(schema_);
  if (n.kind != JsonNode::Kind::Object || n.count != 0) return "`schema` must be the empty object {}";
  return {};
}

// `{"stats": {}}` asks for the server's figures (runtime/metrics.h), with
// the same rules as a schema request.
std::string Service::stats_problem() const {
  constexpr uint32_t kNone = JsonToValue::kNoNode;
  if (event_ != kNone || query_ != kNone || args_ != kNone) {
    return "a `stats` request has no `event`, `query`, `schema` or `args`";
  }
  const JsonNode& n = doc_->node(stats_);
  if (n.kind != JsonNode::Kind::Object || n.count != 0) return "`stats` must be the empty object {}";
  return {};
}

Outcome Service::finish(double now, std::string& out) {
  out_ = &out;
  if (!parse_error_.empty() || !problem_.empty()) {
    counters_.bad_requests.inc();
    reply_error("bad_request", parse_error_.empty() ? problem_ : parse_error_);
    return Outcome::Invalid;
  }
  if (args_ != JsonToValue::kNoNode && doc_->node(args_).kind != JsonNode::Kind::Object) {
    counters_.bad_requests.inc();
    reply_error("bad_args", "`args` must be an object");
    return Outcome::Invalid;
  }
  if (schema_ != JsonToValue::kNoNode) {
    counters_.queries.inc();
    if (schema_body_.empty()) schema_body_ = schema_json(module_);
    reply_ok(&schema_body_);
    return Outcome::Query;
  }
  if (stats_ != JsonToValue::kNoNode) {
    // Not counted among the queries: watching the server does not move
    // what it shows.
    if (!metrics_) {
      reply_error("unavailable", "this server keeps no stats");
      return Outcome::Query;
    }
    body_.clear();
    stats_json(metrics_->sample(), body_);
    reply_ok(&body_);
    return Outcome::Query;
  }
  Outcome o = is_event_ ? event(doc_->node(event_).str, args_, now) : query(doc_->node(query_).str, args_, now);
  vm_.reset_arena();
  return o;
}

Outcome Service::event(std::string_view name, uint32_t args, double now) {
  int e = module_.event_index(name);
  if (e < 0) {
    counters_.bad_requests.inc();
    reply_error("unknown_event", fmt::format("no event `{}`; events: {}", name,
                                             known_names(module_.events, [](const auto&) { return true; })));
    return Outcome::Invalid;
  }
  if (refusing_) {
    event_failed("unavailable", kUnavailableCode, *refusing_);
    return Outcome::EventFailed;
  }
  if (key_ != JsonToValue::kNoNode && !keys_) {
    counters_.bad_requests.inc();
    reply_error("bad_request", "this store keeps no idempotency keys: start `aup run` with --keys N to keep them");
    return Outcome::Invalid;
  }
  const vm::EventDesc& ed = module_.events[static_cast<size_t>(e)];
  JsonToValue reader(*doc_, vm_);
  vm::Value rec;
  if (!reader.record(args, ed.record, &rec)) {
    counters_.bad_requests.inc();
    reply_error(reader.code(), reader.error());
    return Outcome::Invalid;
  }
  if (key_ != JsonToValue::kNoNode) return keyed_event(name, args, ed, rec, now);
  return apply(ed, rec, now);
}

// The first request with a key applies and keeps it; a later one with the
// same event and args is answered the kept result (an applied event again:
// its answer, too, leaves once its batch is durable, so it never claims
// more than the first one's); anything else under the key is refused.
Outcome Service::keyed_event(std::string_view name, uint32_t args, const vm::EventDesc& ed, vm::Value rec,
                             double now) {
  std::string_view key = doc_->node(key_).str;
  digest_ = KeyTable::digest(name, *doc_, args);
  switch (keys_->find(key, digest_, kept_answer_)) {
    case KeyTable::Seen::Same:
      counters_.events_ok.inc();
      counters_.events_replayed.inc();
      applied(kept_answer_.empty() ? nullptr : &kept_answer_);
      return Outcome::EventApplied;
    case KeyTable::Seen::Other:
      event_failed("duplicate", static_cast<size_t>(vm::ErrorCode::Duplicate),
                   fmt::format("key \"{}\" was used by another request (another event, or other args); "
                               "a retry sends the same event and args",
                               key));
      return Outcome::EventFailed;
    case KeyTable::Seen::New: break;
  }
  Outcome o = apply(ed, rec, now, kMaxKeptAnswerBytes);
  if (o == Outcome::EventApplied) keys_->keep(key, digest_, has_result_ ? body_ : std::string_view{}, now);
  return o;
}

// `max_answer`: the longest answer the event may have (a keyed event's is
// kept with its key); a longer one fails it with `budget`.
Outcome Service::apply(const vm::EventDesc& ed, vm::Value rec, double now, size_t max_answer) {
  size_t mark = state_->mark();
  vm::Value result = 0;
  if (!vm_.run(ed.handler, &rec, 1, now, &result)) {
    state_->rollback(mark);
    vm::ErrorCode code = vm_.failure().code;
    event_failed(vm::error_code_name(code), static_cast<size_t>(code), vm_.failure().message);
    return Outcome::EventFailed;
  }
  uint32_t type = module_.functions[ed.handler].result_type;
  if (type == vm::kTypeVoid) {
    counters_.events_ok.inc();
    applied(nullptr);
    return Outcome::EventApplied;
  }
  // The result is written before the event counts as done: one that cannot
  // be sent (a number that is not finite) fails the event and undoes it.
  body_.clear();
  ValueToJson writer(vm_);
  if (!writer.write(result, type, body_)) {
    state_->rollback(mark);
    counters_.events_failed.inc();
    counters_.failed_by_code[static_cast<size_t>(writer.code())].inc();
    result_failed(writer, module_.functions[ed.handler]);
    return Outcome::EventFailed;
  }
  if (body_.size() > max_answer) {
    state_->rollback(mark);
    event_failed(vm::error_code_name(vm::ErrorCode::Budget), static_cast<size_t>(vm::ErrorCode::Budget),
                 fmt::format("the answer is {} bytes of JSON, and a keyed event's answer, kept with its key, "
                             "is at most {} ({})",
                             body_.size(), max_answer, return_positions(module_, module_.functions[ed.handler])));
    return Outcome::EventFailed;
  }
  counters_.events_ok.inc();
  applied(&body_);
  return Outcome::EventApplied;
}

Outcome Service::query(std::string_view name, uint32_t args, double now) {
  int q = module_.query_index(name);
  if (q < 0) {
    counters_.bad_requests.inc();
    reply_error("unknown_query", fmt::format("no query `{}`; queries: {}", name,
                                             known_names(module_.functions, [](const vm::Function& f) {
                                               return f.kind == vm::FnKind::Query;
                                             })));
    return Outcome::Invalid;
  }
  const vm::Function& f = module_.functions[static_cast<size_t>(q)];
  // Parameters come by name from `args`, each once, none unknown.
  std::vector<vm::Value> params(f.param_names.size(), 0);
  std::vector<bool> seen(params.size(), false);
  JsonToValue reader(*doc_, vm_);
  if (args != JsonToValue::kNoNode) {
    const JsonNode& obj = doc_->node(args);
    uint32_t key = doc_->first_child(args);
    for (uint32_t k = 0; k < obj.count; ++k, key = doc_->after(key + 1)) {
      std::string_view pname = doc_->node(key).str;
      size_t p = 0;
      while (p < params.size() && f.param_names[p] != pname) ++p;
      if (p == params.size()) {
        counters_.bad_requests.inc();
        reply_error("bad_args", fmt::format("unknown field `{}`", pname));
        return Outcome::Invalid;
      }
      if (seen[p]) {
        counters_.bad_requests.inc();
        reply_error("bad_args", fmt::format("field `{}` appears twice", pname));
        return Outcome::Invalid;
      }
      seen[p] = true;
      if (!reader.value(key + 1, f.param_types[p], &params[p], pname)) {
        counters_.bad_requests.inc();
        reply_error(reader.code(), reader.error());
        return Outcome::Invalid;
      }
    }
  }
  for (size_t p = 0; p < params.size(); ++p) {
    if (!seen[p]) {
      counters_.bad_requests.inc();
      reply_error("bad_args", fmt::format("missing field `{}`", f.param_names[p]));
      return Outcome::Invalid;
    }
  }
  counters_.queries.inc();
  vm::Value result = 0;
  if (!vm_.run(static_cast<uint32_t>(q), params.data(), static_cast<uint32_t>(params.size()), now, &result)) {
    reply_error(vm::error_code_name(vm_.failure().code), vm_.failure().message);
    return Outcome::Query;
  }
  body_.clear();
  ValueToJson writer(vm_);
  if (!writer.write(result, f.result_type, body_)) {
    result_failed(writer, f);
    return Outcome::Query;
  }
  reply_ok(&body_);
  return Outcome::Query;
}

}  // namespace aup::runtime

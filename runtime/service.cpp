#include "service.h"

#include <fmt/format.h>

#include "convert.h"

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
}  // namespace

Service::Service(const vm::Module& m, vm::State& s, ServiceOptions o) : module_(m), state_(s), vm_(m, s) {
  vm_.set_step_budget(o.step_budget);
}

// {"id":...,"ok":true[,"result":body]}
void Service::reply_ok(const std::string* body) {
  std::string& out = *out_;
  out += '{';
  if (!id_.empty()) {
    out += "\"id\":";
    out += id_;
    out += ',';
  }
  out += "\"ok\":true";
  if (body) {
    out += ",\"result\":";
    out += *body;
  }
  out += "}\n";
}

void Service::reply_error(std::string_view code, std::string_view message) {
  std::string& out = *out_;
  out += '{';
  if (!id_.empty()) {
    out += "\"id\":";
    out += id_;
    out += ',';
  }
  out += "\"ok\":false,\"error\":{\"code\":";
  json_append_string(out, code);
  out += ",\"message\":";
  json_append_string(out, message);
  out += "}}\n";
}

void Service::handle(std::string_view line, double now, std::string& out) {
  out_ = &out;
  id_ = {};
  std::string error;
  if (!doc_.parse(line, error)) {
    ++counters_.bad_requests;
    return reply_error("bad_request", "not JSON: " + error);
  }
  const JsonNode& root = doc_.node(doc_.root());
  if (root.kind != JsonNode::Kind::Object) {
    ++counters_.bad_requests;
    return reply_error("bad_request", "a request is a JSON object: {\"event\": ..., \"args\": {...}}");
  }
  uint32_t event = JsonToValue::kNoNode, query = JsonToValue::kNoNode, args = JsonToValue::kNoNode,
           id = JsonToValue::kNoNode;
  std::string problem;
  uint32_t key = doc_.first_child(doc_.root());
  for (uint32_t k = 0; k < root.count; ++k) {
    std::string_view name = doc_.node(key).str;
    uint32_t* slot = name == "event" ? &event : name == "query" ? &query : name == "args" ? &args
                     : name == "id"  ? &id
                                     : nullptr;
    if (!slot) {
      if (problem.empty()) {
        problem = fmt::format("unknown key `{}`; a request has `event` or `query`, `args` and `id`", name);
      }
    } else if (*slot != JsonToValue::kNoNode) {
      if (problem.empty()) problem = fmt::format("key `{}` appears twice", name);
    } else {
      *slot = key + 1;
    }
    key = doc_.after(key + 1);
  }
  if (id != JsonToValue::kNoNode) {
    JsonNode::Kind k = doc_.node(id).kind;
    if (k == JsonNode::Kind::Array || k == JsonNode::Kind::Object) {
      if (problem.empty()) problem = "`id` must be a number, a string, a bool or null";
    } else {
      id_ = doc_.node(id).raw;
    }
  }
  if (problem.empty()) {
    if (event != JsonToValue::kNoNode && query != JsonToValue::kNoNode) {
      problem = "a request has `event` or `query`, not both";
    } else if (event == JsonToValue::kNoNode && query == JsonToValue::kNoNode) {
      problem = "a request needs `event` or `query`";
    } else if (doc_.node(event != JsonToValue::kNoNode ? event : query).kind != JsonNode::Kind::String) {
      problem = fmt::format("`{}` must be a string", event != JsonToValue::kNoNode ? "event" : "query");
    }
  }
  if (!problem.empty()) {
    ++counters_.bad_requests;
    return reply_error("bad_request", problem);
  }
  if (args != JsonToValue::kNoNode && doc_.node(args).kind != JsonNode::Kind::Object) {
    ++counters_.bad_requests;
    return reply_error("bad_args", "`args` must be an object");
  }
  if (event != JsonToValue::kNoNode) {
    this->event(doc_.node(event).str, args, now);
  } else {
    this->query(doc_.node(query).str, args, now);
  }
  vm_.reset_arena();
}

void Service::event(std::string_view name, uint32_t args, double now) {
  int e = module_.event_index(name);
  if (e < 0) {
    ++counters_.bad_requests;
    return reply_error("unknown_event",
                       fmt::format("no event `{}`; events: {}", name,
                                   known_names(module_.events, [](const auto&) { return true; })));
  }
  const vm::EventDesc& ed = module_.events[static_cast<size_t>(e)];
  JsonToValue reader(doc_, vm_);
  vm::Value rec;
  if (!reader.record(args, ed.record, &rec)) {
    ++counters_.bad_requests;
    return reply_error("bad_args", reader.error());
  }
  size_t mark = state_.mark();
  vm::Value result = 0;
  if (!vm_.run(ed.handler, &rec, 1, now, &result)) {
    state_.rollback(mark);
    ++counters_.events_failed;
    return reply_error(vm::error_code_name(vm_.failure().code), vm_.failure().message);
  }
  uint32_t type = module_.functions[ed.handler].result_type;
  if (type == vm::kTypeVoid) {
    ++counters_.events_ok;
    return reply_ok(nullptr);
  }
  // The result is written before the event counts as done: one that cannot
  // be sent (a number that is not finite) fails the event and undoes it.
  body_.clear();
  ValueToJson writer(vm_);
  if (!writer.write(result, type, body_)) {
    state_.rollback(mark);
    ++counters_.events_failed;
    return reply_error(vm::error_code_name(writer.code()), writer.error());
  }
  ++counters_.events_ok;
  reply_ok(&body_);
}

void Service::query(std::string_view name, uint32_t args, double now) {
  int q = module_.query_index(name);
  if (q < 0) {
    ++counters_.bad_requests;
    return reply_error("unknown_query",
                       fmt::format("no query `{}`; queries: {}", name,
                                   known_names(module_.functions, [](const vm::Function& f) {
                                     return f.kind == vm::FnKind::Query;
                                   })));
  }
  const vm::Function& f = module_.functions[static_cast<size_t>(q)];
  // Parameters come by name from `args`, each once, none unknown.
  std::vector<vm::Value> params(f.param_names.size(), 0);
  std::vector<bool> seen(params.size(), false);
  JsonToValue reader(doc_, vm_);
  if (args != JsonToValue::kNoNode) {
    const JsonNode& obj = doc_.node(args);
    uint32_t key = doc_.first_child(args);
    for (uint32_t k = 0; k < obj.count; ++k, key = doc_.after(key + 1)) {
      std::string_view pname = doc_.node(key).str;
      size_t p = 0;
      while (p < params.size() && f.param_names[p] != pname) ++p;
      if (p == params.size()) {
        ++counters_.bad_requests;
        return reply_error("bad_args", fmt::format("unknown field `{}`", pname));
      }
      if (seen[p]) {
        ++counters_.bad_requests;
        return reply_error("bad_args", fmt::format("field `{}` appears twice", pname));
      }
      seen[p] = true;
      if (!reader.value(key + 1, f.param_types[p], &params[p])) {
        ++counters_.bad_requests;
        return reply_error("bad_args", fmt::format("{}: {}", pname, reader.error()));
      }
    }
  }
  for (size_t p = 0; p < params.size(); ++p) {
    if (!seen[p]) {
      ++counters_.bad_requests;
      return reply_error("bad_args", fmt::format("missing field `{}`", f.param_names[p]));
    }
  }
  ++counters_.queries;
  vm::Value result = 0;
  if (!vm_.run(static_cast<uint32_t>(q), params.data(), static_cast<uint32_t>(params.size()), now, &result)) {
    return reply_error(vm::error_code_name(vm_.failure().code), vm_.failure().message);
  }
  body_.clear();
  ValueToJson writer(vm_);
  if (!writer.write(result, f.result_type, body_)) {
    return reply_error(vm::error_code_name(writer.code()), writer.error());
  }
  reply_ok(&body_);
}

}  // namespace aup::runtime

#include "cli/call.h"

#include <fmt/format.h>

#include <csignal>

#include "cli/client.h"
#include "cli/pretty_json.h"
#include "compiler/driver.h"
#include "runtime/json.h"
#include "runtime/metrics.h"

namespace aup::cli {

namespace {

using runtime::JsonDoc;
using runtime::JsonNode;

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

// The request line for `words`: a raw JSON request as it is, else the
// short form checked against the server's schema.
bool request_line(Client& client, const CallOptions& o, std::string& line, std::string& error) {
  const std::vector<std::string>& words = o.words;
  if (words.size() == 1 && !words[0].empty() && words[0].front() == '{') {
    if (!o.key.empty()) {
      error = "--key goes with a request written NAME ARG ...; a JSON request carries its own \"key\"";
      return false;
    }
    line = words[0];  // the server checks it
    return true;
  }
  Schema schema;
  std::string json;
  if (!fetch_schema(client, o.timeout_seconds, schema, json, error) || !build_request(schema, words, line, error)) {
    return false;
  }
  if (o.key.empty()) return true;
  if (!schema.find(words[0])->event) {
    error = fmt::format("--key: `{}` is a query; an idempotency key is for an event (a query changes nothing, so "
                        "asking again is safe)",
                        words[0]);
    return false;
  }
  std::string key = ",\"key\":";
  runtime::json_append_string(key, o.key);
  line.insert(line.size() - 1, key);  // inside the request's closing brace
  return true;
}

}  // namespace

Answer read_answer(std::string_view line) {
  Answer a;
  JsonDoc doc;
  std::string why;
  if (line.rfind("HTTP/", 0) == 0) {
    // An HTTP server's answer to a line-protocol request: the address was
    // an HTTP one written without its scheme.
    a.error = "the server answered in HTTP: it listens with --listen http://...; write the address "
              "http://HOST:PORT";
    return a;
  }
  if (!doc.parse(line, why) || doc.node(doc.root()).kind != JsonNode::Kind::Object) {
    a.error = "the answer is not a JSON object: " + (why.empty() ? std::string(line) : why);
    return a;
  }
  a.parsed = true;
  uint32_t ok = doc.member(doc.root(), "ok");
  a.ok = ok && doc.node(ok).kind == JsonNode::Kind::True;
  if (uint32_t r = doc.member(doc.root(), "result")) a.result = doc.node(r).raw;
  if (uint32_t e = doc.member(doc.root(), "error"); e && doc.node(e).kind == JsonNode::Kind::Object) {
    uint32_t code = doc.member(e, "code"), message = doc.member(e, "message");
    if (code) a.code = doc.node(code).str;
    a.error = fmt::format("{}: {}", code ? doc.node(code).str : "?", message ? doc.node(message).str : "");
  } else if (!a.ok) {
    a.error = "the request failed";
  }
  return a;
}

bool fetch_schema(Client& client, double timeout_seconds, Schema& schema, std::string& json, std::string& error) {
  std::string line;
  if (!client.exchange("{\"schema\":{}}", to_ms(timeout_seconds), line, error)) return false;
  Answer a = read_answer(line);
  if (!a.ok) {
    error = a.parsed ? "the server refused a schema request (" + a.error + ")" : a.error;
    return false;
  }
  json = a.result;
  return parse_schema(json, schema, error);
}

int call(const CallOptions& o, std::FILE* out, std::FILE* err) {
  std::signal(SIGPIPE, SIG_IGN);  // a server gone mid-request is an error to report, not a signal
  Client client;
  std::string error, line, answer;
  if (!client.connect(o.address, error) || !request_line(client, o, line, error) ||
      !client.exchange(line, to_ms(o.timeout_seconds), answer, error)) {
    fmt::print(err, "aup call: {}\n", error);
    return kExitUsage;
  }
  fmt::print(out, "{}\n", answer);
  Answer a = read_answer(answer);
  if (a.ok) return kExitOk;
  fmt::print(err, "aup call: {}\n", a.error);
  return a.parsed ? kExitErrors : kExitUsage;
}

int stats(const StatsOptions& o, std::FILE* out, std::FILE* err) {
  std::signal(SIGPIPE, SIG_IGN);
  Client client;
  std::string error, answer;
  if (!client.connect(o.address, error) ||
      !client.exchange(o.memory ? "{\"stats\":{\"memory\":true}}" : "{\"stats\":{}}", to_ms(o.timeout_seconds),
                       answer, error)) {
    fmt::print(err, "aup stats: {}\n", error);
    return kExitUsage;
  }
  Answer a = read_answer(answer);
  if (o.json || !a.ok) fmt::print(out, "{}\n", answer);
  if (!a.ok) {
    fmt::print(err, "aup stats: {}\n", a.error);
    return a.parsed ? kExitErrors : kExitUsage;
  }
  if (o.json) return kExitOk;
  // Each value in its unit; a result this build cannot read (a server of
  // another version) laid out as JSON instead.
  runtime::MetricSample sample;
  std::string text, why;
  if (runtime::sample_from_json(a.result, sample, why)) {
    runtime::stats_text(sample, text);
    fmt::print(out, "{}", text);
  } else {
    fmt::print(out, "{}\n", pretty_json(a.result));
  }
  return kExitOk;
}

}  // namespace aup::cli

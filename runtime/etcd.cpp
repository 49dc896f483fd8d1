// The etcd client (runtime/etcd.h): requests written as the gateway's JSON,
// sent through one curl multi handle per client, answers read with JsonDoc.
#include "runtime/etcd.h"

#include <curl/curl.h>

#include <cassert>
#include <charconv>
#include <chrono>
#include <mutex>
#include <utility>

#include "runtime/json.h"

namespace aup::runtime {

// One request's answer: its text and the JSON read from it, whose strings
// are views into the text (so an Answer never moves).
struct EtcdAnswer {
  std::string text;
  JsonDoc doc;
  std::string refusal;  // etcd's error text, when it answered one
  EtcdAnswer() = default;
  EtcdAnswer(const EtcdAnswer&) = delete;
  EtcdAnswer& operator=(const EtcdAnswer&) = delete;
};

// One transfer on an easy handle: curl holds pointers to it (the answer
// buffer, the error buffer) until the handle leaves the multi handle.
struct EtcdAttempt {
  std::string url, text;
  bool too_long = false;  // the answer passed kMaxEtcdAnswerBytes
  bool done = false;
  CURLcode code = CURLE_OK;
  char error[CURL_ERROR_SIZE] = {};
};

namespace {

using Clock = std::chrono::steady_clock;

// Whether etcd's error says this member cannot serve the call now (no
// leader, a proposal lost with a dead leader, stopping), so another member
// may: gRPC's Unavailable (14), or one of those texts, which the election
// service sends as Unknown (2). A campaign sent to a follower just after
// the raft leader died waits out etcd's request timeout (5 s + 2 election
// timeouts) and fails so: "etcdserver: request timed out", code 2.
bool member_unavailable(int64_t code, std::string_view text) {
  static constexpr std::string_view kTexts[] = {
      "etcdserver: request timed out",  // also "..., possibly due to previous leader failure"
      "etcdserver: leader changed", "etcdserver: no leader", "etcdserver: server stopped",
      "etcdserver: too many requests", "raft proposal dropped"};
  if (code == 14) return true;
  for (std::string_view t : kTexts) {
    if (text.starts_with(t)) return true;
  }
  return false;
}

CURLM* as_multi(void* p) { return static_cast<CURLM*>(p); }
CURL* as_easy(void* p) { return static_cast<CURL*>(p); }

// curl_global_init must come before any other curl call, and is not safe
// while another thread calls curl unless libcurl was built thread-safe (a
// build option). curl_easy_init would run it implicitly, unguarded, so the
// first client runs it, once for the process. It is never undone with
// curl_global_cleanup: another client may be alive in another thread.
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    [[maybe_unused]] CURLcode code = curl_global_init(CURL_GLOBAL_DEFAULT);
    assert(code == CURLE_OK);
  });
}

// curl's write callback: appends to the attempt's answer up to the limit;
// past it, returning less than given makes curl stop with a write error.
size_t take_answer(char* data, size_t size, size_t count, void* to) {
  auto& a = *static_cast<EtcdAttempt*>(to);
  size_t bytes = size * count;
  if (a.text.size() + bytes > kMaxEtcdAnswerBytes) {
    a.too_long = true;
    return 0;
  }
  a.text.append(data, bytes);
  return bytes;
}

CURL* new_handle(curl_slist* headers, long connect_ms, bool long_poll) {
  CURL* h = curl_easy_init();
  assert(h != nullptr);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for timeouts: other threads run
  curl_easy_setopt(h, CURLOPT_PROXY, "");     // etcd is reached directly, whatever http_proxy says
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, take_answer);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
  if (long_poll) {
    // A member that vanishes without closing the connection (a partition,
    // a dead host) ends a campaign after about idle + 9 probes x interval;
    // the caller's cancel covers it sooner.
    long seconds = connect_ms >= 2000 ? connect_ms / 1000 : 1;
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, seconds);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, seconds);
  }
  return h;
}

// A JSON object written member by member, in the gateway's encodings.
class Body {
 public:
  Body& bytes(std::string_view name, std::string_view value) { return quoted(name, base64_encode(value)); }
  Body& quoted(std::string_view name, std::string_view text) {
    key(name);
    json_append_string(text_, text);
    return *this;
  }
  Body& integer(std::string_view name, int64_t value) { return quoted(name, std::to_string(value)); }
  Body& json(std::string_view name, std::string_view text) {
    key(name);
    text_ += text;
    return *this;
  }
  std::string done() const { return text_ + "}"; }

 private:
  void key(std::string_view name) {
    if (text_.size() > 1) text_ += ',';
    json_append_string(text_, name);
    text_ += ':';
  }
  std::string text_ = "{";
};

// A 64-bit integer member: a JSON string ("7") as the gateway writes them,
// or a number; left out, it is 0. False when it is neither.
bool read_int(const JsonDoc& d, uint32_t obj, std::string_view name, int64_t& out) {
  out = 0;
  uint32_t i = d.member(obj, name);
  if (i == 0) return true;
  const JsonNode& n = d.node(i);
  if (n.kind == JsonNode::Kind::Number) {
    out = static_cast<int64_t>(n.num);
    return n.finite && static_cast<double>(out) == n.num;
  }
  if (n.kind != JsonNode::Kind::String) return false;
  auto [end, ec] = std::from_chars(n.str.data(), n.str.data() + n.str.size(), out);
  return ec == std::errc() && end == n.str.data() + n.str.size();
}

// A bytes member (base64); left out, it is empty.
bool read_bytes(const JsonDoc& d, uint32_t obj, std::string_view name, std::string& out) {
  out.clear();
  uint32_t i = d.member(obj, name);
  if (i == 0) return true;
  return d.node(i).kind == JsonNode::Kind::String && base64_decode(d.node(i).str, out);
}

// kv -> {"key", "value", "create_revision", "mod_revision", "version", "lease"}
bool read_kv(const JsonDoc& d, uint32_t obj, EtcdKv& kv) {
  return d.node(obj).kind == JsonNode::Kind::Object && read_bytes(d, obj, "key", kv.key) &&
         read_bytes(d, obj, "value", kv.value) && read_int(d, obj, "create_revision", kv.create_revision) &&
         read_int(d, obj, "mod_revision", kv.mod_revision) && read_int(d, obj, "version", kv.version) &&
         read_int(d, obj, "lease", kv.lease);
}

// etcd's error in an answer: {"error":TEXT,"code":N}, or a stream's
// {"error":{"message":TEXT,"grpc_code":N}}. False when there is none.
bool read_error(const JsonDoc& d, std::string& text, int64_t& code) {
  uint32_t e = d.member(d.root(), "error");
  if (e == 0) return false;
  const JsonNode& n = d.node(e);
  if (n.kind == JsonNode::Kind::Object) {
    uint32_t m = d.member(e, "message");
    text = m != 0 && d.node(m).kind == JsonNode::Kind::String ? std::string(d.node(m).str) : "(no message)";
    read_int(d, e, "grpc_code", code);
    return true;
  }
  if (n.kind == JsonNode::Kind::String && n.str.empty()) return false;  // LeaseGrantResponse's unused "error"
  text = n.kind == JsonNode::Kind::String ? std::string(n.str) : std::string(n.raw);
  read_int(d, d.root(), "code", code);
  return true;
}

// The end of the range of keys that start with `prefix`: the prefix up to
// its last byte below 0xff, that byte incremented; "\0" (every key from the
// start on) when it has none.
std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (end.empty()) return std::string(1, '\0');
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

EtcdStatus failure(EtcdError e, std::string message) { return EtcdStatus{e, std::move(message)}; }

const char* compare_target(EtcdClient::Compare::Target t) {
  using T = EtcdClient::Compare::Target;
  switch (t) {
    case T::CreateRevision: return "CREATE";
    case T::ModRevision: return "MOD";
    case T::Version: return "VERSION";
    case T::Value: return "VALUE";
  }
  return "";
}

const char* compare_result(EtcdClient::Compare::Result r) {
  using R = EtcdClient::Compare::Result;
  switch (r) {
    case R::Equal: return "EQUAL";
    case R::NotEqual: return "NOT_EQUAL";
    case R::Greater: return "GREATER";
    case R::Less: return "LESS";
  }
  return "";
}

// Compare -> {"result", "target", "key", and the member the target names}
std::string compare_json(const EtcdClient::Compare& c) {
  using T = EtcdClient::Compare::Target;
  Body b;
  b.quoted("result", compare_result(c.result)).quoted("target", compare_target(c.target)).bytes("key", c.key);
  switch (c.target) {
    case T::CreateRevision: b.integer("create_revision", c.number); break;
    case T::ModRevision: b.integer("mod_revision", c.number); break;
    case T::Version: b.integer("version", c.number); break;
    case T::Value: b.bytes("value", c.value); break;
  }
  return b.done();
}

// Op -> {"request_put":{"key","value","lease"}} | {"request_delete_range":{"key"}}
std::string op_json(const EtcdClient::Op& op) {
  Body inner;
  inner.bytes("key", op.key);
  if (op.kind == EtcdClient::Op::Kind::Delete) return Body().json("request_delete_range", inner.done()).done();
  inner.bytes("value", op.value);
  if (op.lease != 0) inner.integer("lease", op.lease);
  return Body().json("request_put", inner.done()).done();
}

template <typename T, typename F>
std::string array_json(const std::vector<T>& items, F item_json) {
  std::string out = "[";
  for (const T& item : items) out += (out.size() > 1 ? "," : "") + item_json(item);
  return out + "]";
}

// Campaign's answer: {"leader":{"name", "key", "rev", "lease"}}.
bool read_won(const JsonDoc& d, EtcdLeader& won) {
  uint32_t l = d.member(d.root(), "leader");
  return l != 0 && d.node(l).kind == JsonNode::Kind::Object && read_bytes(d, l, "name", won.name) &&
         read_bytes(d, l, "key", won.key) && read_int(d, l, "rev", won.rev) && read_int(d, l, "lease", won.lease) &&
         !won.key.empty() && won.rev > 0;
}

}  // namespace

EtcdClient::EtcdClient(std::vector<std::string> endpoints, int timeout_ms)
    : endpoints_(std::move(endpoints)), timeout_ms_(timeout_ms) {
  assert(!endpoints_.empty() && timeout_ms_ > 0);
  init_curl_once();
  multi_ = curl_multi_init();
  assert(multi_ != nullptr);
  // The body is JSON; "Expect:" drops curl's Expect: 100-continue on larger
  // bodies, which costs a round trip.
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Expect:");
  assert(headers != nullptr);
  headers_ = headers;
  call_ = new_handle(headers, timeout_ms_, false);
  poll_ = new_handle(headers, timeout_ms_, true);
}

EtcdClient::~EtcdClient() {
  for (void* h : {call_, poll_}) {
    curl_multi_remove_handle(as_multi(multi_), as_easy(h));
    curl_easy_cleanup(as_easy(h));
  }
  curl_multi_cleanup(as_multi(multi_));
  curl_slist_free_all(static_cast<curl_slist*>(headers_));
}

void EtcdClient::start(void* handle, EtcdAttempt& a, size_t endpoint, std::string_view path, const std::string& body,
                       long timeout_ms) {
  CURL* h = as_easy(handle);
  a.url = "http://" + endpoints_[endpoint] + std::string(path);
  curl_easy_setopt(h, CURLOPT_URL, a.url.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(h, CURLOPT_WRITEDATA, static_cast<void*>(&a));
  curl_easy_setopt(h, CURLOPT_PRIVATE, static_cast<void*>(&a));
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, a.error);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);  // 0: none
  [[maybe_unused]] CURLMcode code = curl_multi_add_handle(as_multi(multi_), h);
  assert(code == CURLM_OK);
}

void EtcdClient::stop(void* handle) { curl_multi_remove_handle(as_multi(multi_), as_easy(handle)); }

void EtcdClient::turn() {
  int running = 0;
  curl_multi_perform(as_multi(multi_), &running);
  int left = 0;
  bool ended = false;
  while (CURLMsg* m = curl_multi_info_read(as_multi(multi_), &left)) {
    if (m->msg != CURLMSG_DONE) continue;
    char* attempt = nullptr;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &attempt);
    auto* a = reinterpret_cast<EtcdAttempt*>(attempt);
    a->code = m->data.result;  // read before the removal frees the message
    a->done = ended = true;
    curl_multi_remove_handle(as_multi(multi_), m->easy_handle);
  }
  // An ended attempt returns to its caller at once; otherwise wait for the
  // sockets, curl's own timers, or kEtcdPollMs (the cancel check).
  if (!ended) curl_multi_poll(as_multi(multi_), nullptr, 0, kEtcdPollMs, nullptr);
}

std::optional<EtcdStatus> EtcdClient::judge(void* handle, EtcdAttempt& a, size_t endpoint, Resend resend,
                                            EtcdAnswer& answer, std::string& failures) {
  const std::string& at = endpoints_[endpoint];
  if (a.too_long) {
    std::string limit = std::to_string(kMaxEtcdAnswerBytes);
    return failure(EtcdError::BadAnswer, "etcd " + at + ": answer over " + limit + " bytes");
  }
  long sent = 0, http = 0;
  curl_easy_getinfo(as_easy(handle), CURLINFO_REQUEST_SIZE, &sent);
  if (a.code != CURLE_OK) {
    std::string why = at + ": " + (a.error[0] != '\0' ? a.error : curl_easy_strerror(a.code));
    if (resend == Resend::BeforeArrival && sent > 0) return failure(EtcdError::Unreachable, why + "; outcome unknown");
    failures += (failures.empty() ? "" : "; ") + why;
    return std::nullopt;
  }
  curl_easy_getinfo(as_easy(handle), CURLINFO_RESPONSE_CODE, &http);
  answer.text = std::move(a.text);
  std::string error;
  if (!answer.doc.parse(answer.text, error) || answer.doc.node(answer.doc.root()).kind != JsonNode::Kind::Object) {
    return failure(EtcdError::BadAnswer, "etcd " + at + ": HTTP " + std::to_string(http) +
                                             ", not the gateway's JSON: " + answer.text.substr(0, 200));
  }
  int64_t code = 0;
  if (read_error(answer.doc, answer.refusal, code)) {
    std::string why = at + ": " + answer.refusal;
    if (!member_unavailable(code, answer.refusal)) {
      current_ = endpoint;
      return failure(EtcdError::Refused, "etcd " + why);
    }
    if (resend == Resend::BeforeArrival) return failure(EtcdError::Unreachable, why + "; outcome unknown");
    failures += (failures.empty() ? "" : "; ") + why;
    return std::nullopt;
  }
  current_ = endpoint;
  if (http != 200) return failure(EtcdError::BadAnswer, "etcd " + at + ": HTTP " + std::to_string(http));
  return EtcdStatus{};
}

EtcdStatus EtcdClient::call(std::string_view path, const std::string& body, Resend resend, EtcdAnswer& answer) {
  std::string failures;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    size_t endpoint = (current_ + i) % endpoints_.size();
    EtcdAttempt a;
    start(call_, a, endpoint, path, body, timeout_ms_);
    while (!a.done) turn();  // curl's timeouts end it
    if (auto status = judge(call_, a, endpoint, resend, answer, failures)) return *status;
  }
  return failure(EtcdError::Unreachable, "no etcd endpoint answered: " + failures);
}

EtcdStatus EtcdClient::grant(int64_t ttl_seconds, int64_t& lease, int64_t& granted_ttl) {
  EtcdAnswer a;
  EtcdStatus s = call("/v3/lease/grant", Body().integer("TTL", ttl_seconds).done(), Resend::Yes, a);
  if (!s.ok()) return s;
  uint32_t root = a.doc.root();
  if (!read_int(a.doc, root, "ID", lease) || !read_int(a.doc, root, "TTL", granted_ttl) || lease == 0) {
    return failure(EtcdError::BadAnswer, "etcd " + endpoint() + ": a grant without a lease: " + a.text);
  }
  return s;
}

// keepalive is a stream in the gateway: each renewal answers
// {"result":{"ID", "TTL"}}, without a TTL when the lease is gone.
EtcdStatus EtcdClient::keepalive(int64_t lease, int64_t& ttl_left) {
  EtcdAnswer a;
  ttl_left = 0;
  EtcdStatus s = call("/v3/lease/keepalive", Body().integer("ID", lease).done(), Resend::Yes, a);
  if (!s.ok()) return s;
  uint32_t result = a.doc.member(a.doc.root(), "result");
  if (result == 0 || !read_int(a.doc, result, "TTL", ttl_left)) {
    return failure(EtcdError::BadAnswer, "etcd " + endpoint() + ": a keepalive without a result: " + a.text);
  }
  if (ttl_left <= 0) {
    ttl_left = 0;
    return failure(EtcdError::Refused, "etcd " + endpoint() + ": lease " + std::to_string(lease) +
                                           " is gone (keepalive renewed nothing)");
  }
  return s;
}

EtcdStatus EtcdClient::revoke(int64_t lease) {
  EtcdAnswer a;
  return call("/v3/lease/revoke", Body().integer("ID", lease).done(), Resend::Yes, a);
}

EtcdStatus EtcdClient::put(std::string_view key, std::string_view value, int64_t lease) {
  Body b;
  b.bytes("key", key).bytes("value", value);
  if (lease != 0) b.integer("lease", lease);
  EtcdAnswer a;
  return call("/v3/kv/put", b.done(), Resend::Yes, a);
}

EtcdStatus EtcdClient::get(std::string_view key, std::optional<EtcdKv>& kv) {
  kv.reset();
  EtcdAnswer a;
  EtcdStatus s = call("/v3/kv/range", Body().bytes("key", key).done(), Resend::Yes, a);
  if (!s.ok()) return s;
  uint32_t kvs = a.doc.member(a.doc.root(), "kvs");
  if (kvs == 0) return s;  // no such key: the member is left out
  if (a.doc.node(kvs).kind != JsonNode::Kind::Array || a.doc.node(kvs).count != 1 ||
      !read_kv(a.doc, a.doc.first_child(kvs), kv.emplace())) {
    kv.reset();
    return failure(EtcdError::BadAnswer, "etcd " + endpoint() + ": a range of one key answered: " + a.text);
  }
  return s;
}

EtcdStatus EtcdClient::get_prefix(std::string_view prefix, std::vector<EtcdKv>& kvs, int64_t& revision) {
  kvs.clear();
  revision = 0;
  EtcdAnswer a;
  // etcd refuses an empty key; "\0" to "\0" is every key.
  std::string from = prefix.empty() ? std::string(1, '\0') : std::string(prefix);
  EtcdStatus s = call("/v3/kv/range", Body().bytes("key", from).bytes("range_end", prefix_end(prefix)).done(),
                      Resend::Yes, a);
  if (!s.ok()) return s;
  const JsonDoc& d = a.doc;
  uint32_t header = d.member(d.root(), "header"), list = d.member(d.root(), "kvs");
  bool good = header != 0 && read_int(d, header, "revision", revision) &&
              (list == 0 || d.node(list).kind == JsonNode::Kind::Array);
  if (good && list != 0) {
    for (uint32_t i = d.first_child(list); good && i < d.after(list); i = d.after(i)) {
      good = read_kv(d, i, kvs.emplace_back());
    }
  }
  if (!good) {
    return failure(EtcdError::BadAnswer, "etcd " + endpoint() + ": a bad range answer: " + a.text.substr(0, 200));
  }
  return s;
}

EtcdStatus EtcdClient::remove(std::string_view key) {
  EtcdAnswer a;
  return call("/v3/kv/deleterange", Body().bytes("key", key).done(), Resend::Yes, a);
}

EtcdStatus EtcdClient::txn(const std::vector<Compare>& compares, const std::vector<Op>& success,
                           const std::vector<Op>& failure_ops, bool& succeeded) {
  succeeded = false;
  std::string body = Body()
                         .json("compare", array_json(compares, compare_json))
                         .json("success", array_json(success, op_json))
                         .json("failure", array_json(failure_ops, op_json))
                         .done();
  EtcdAnswer a;
  EtcdStatus s = call("/v3/kv/txn", body, Resend::BeforeArrival, a);
  if (!s.ok()) return s;
  uint32_t i = a.doc.member(a.doc.root(), "succeeded");  // left out when false
  succeeded = i != 0 && a.doc.node(i).kind == JsonNode::Kind::True;
  return s;
}

EtcdStatus EtcdClient::campaign(std::string_view election, std::string_view value, int64_t lease, EtcdLeader& won,
                                const std::atomic<bool>* cancel) {
  std::string body = Body().bytes("name", election).bytes("value", value).integer("lease", lease).done();
  std::string failures;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    size_t endpoint = (current_ + i) % endpoints_.size();
    EtcdAnswer a;
    std::optional<EtcdStatus> s = campaign_at(endpoint, body, lease, a, cancel, failures);
    if (!s) continue;  // another endpoint resumes the same candidacy
    if (!s->ok()) return *s;
    if (!read_won(a.doc, won)) {
      return failure(EtcdError::BadAnswer, "etcd " + endpoints_[endpoint] + ": a campaign answered: " + a.text);
    }
    won.value = std::string(value);
    return confirm_win(won);
  }
  return failure(EtcdError::Unreachable, "no etcd endpoint answered the campaign: " + failures);
}

// The campaign's long poll at one endpoint (no time limit but the
// connect's). Every kEtcdLeaseCheckMs the other handle asks the same
// endpoint whether the lease lives: etcd 3.4 keeps a candidate whose lease
// expired waiting. A check the endpoint does not answer in time moves the
// campaign on to the next: the long poll alone would wait forever on a
// member that accepts connections but no longer answers.
std::optional<EtcdStatus> EtcdClient::campaign_at(size_t endpoint, const std::string& body, int64_t lease,
                                                  EtcdAnswer& answer, const std::atomic<bool>* cancel,
                                                  std::string& failures) {
  EtcdAttempt poll, check;
  std::string check_body = Body().integer("ID", lease).done();
  bool checking = false;
  Clock::time_point next_check = Clock::now() + std::chrono::milliseconds(kEtcdLeaseCheckMs);
  start(poll_, poll, endpoint, "/v3/election/campaign", body, 0);
  std::optional<EtcdStatus> ended;
  while (!poll.done && !ended) {
    if (cancel != nullptr && cancel->load()) {
      ended = failure(EtcdError::Cancelled, "campaign cancelled at etcd " + endpoints_[endpoint]);
    } else if (checking && check.done) {
      checking = false;
      next_check = Clock::now() + std::chrono::milliseconds(kEtcdLeaseCheckMs);
      ended = judge_check(check, lease, endpoint, failures);
      if (ended && ended->ok()) break;  // unanswered: on to the next endpoint
    } else if (!checking && Clock::now() >= next_check) {
      check = EtcdAttempt();
      start(call_, check, endpoint, "/v3/lease/timetolive", check_body, timeout_ms_);
      checking = true;
    } else {
      turn();
    }
  }
  // Closing the connection of a waiting campaign makes etcd withdraw the
  // candidate (delete its key), a moment later.
  stop(poll_);
  stop(call_);
  if (ended) return ended->ok() ? std::nullopt : ended;
  return judge(poll_, poll, endpoint, Resend::Yes, answer, failures);
}

// A lease check's verdict: nothing (the lease lives, or the answer says
// nothing sure), an error (the lease is gone: timetolive answers TTL -1),
// or ok: the endpoint did not answer, the campaign moves on.
std::optional<EtcdStatus> EtcdClient::judge_check(const EtcdAttempt& check, int64_t lease, size_t endpoint,
                                                  std::string& failures) const {
  if (check.code != CURLE_OK) {
    const char* why = check.error[0] != '\0' ? check.error : curl_easy_strerror(check.code);
    failures += (failures.empty() ? "" : "; ") + endpoints_[endpoint] + ": a lease check went unanswered (" + why +
                ")";
    return EtcdStatus{};
  }
  JsonDoc d;
  std::string error;
  int64_t ttl = 0;
  bool read = d.parse(check.text, error) && d.member(d.root(), "error") == 0 && read_int(d, d.root(), "TTL", ttl);
  if (read && ttl < 0) {
    return lease_ended(lease, endpoint, "its lease expired or was revoked");
  }
  return std::nullopt;
}

EtcdStatus EtcdClient::lease_ended(int64_t lease, size_t endpoint, std::string_view why) const {
  return failure(EtcdError::Refused, "etcd " + endpoints_[endpoint] + ": lease " + std::to_string(lease) +
                                         " ended while campaigning: " + std::string(why));
}

// etcd 3.4 answers a campaign as won when the candidates before it are
// gone, even when its own key went with its lease meanwhile: a win counts
// only while the key is there with the revision it won with.
EtcdStatus EtcdClient::confirm_win(const EtcdLeader& won) {
  std::optional<EtcdKv> kv;
  EtcdStatus s = get(won.key, kv);
  if (!s.ok()) return s;
  if (!kv || kv->create_revision != won.rev || kv->lease != won.lease) {
    return lease_ended(won.lease, current_, "etcd answered it won, but its key " + won.key + " is gone");
  }
  return s;
}

EtcdStatus EtcdClient::leader(std::string_view election, std::optional<EtcdLeader>& leader) {
  leader.reset();
  EtcdAnswer a;
  EtcdStatus s = call("/v3/election/leader", Body().bytes("name", election).done(), Resend::Yes, a);
  if (s.error == EtcdError::Refused && a.refusal == "election: no leader") return EtcdStatus{};
  if (!s.ok()) return s;
  EtcdKv kv;
  uint32_t i = a.doc.member(a.doc.root(), "kv");
  if (i == 0 || !read_kv(a.doc, i, kv) || kv.key.empty()) {
    return failure(EtcdError::BadAnswer, "etcd " + endpoint() + ": a leader answered: " + a.text);
  }
  leader = EtcdLeader{std::string(election), std::move(kv.key), std::move(kv.value), kv.create_revision, kv.lease};
  return s;
}

EtcdStatus EtcdClient::resign(const EtcdLeader& l) {
  // {"leader":{"name", "key", "rev", "lease"}}
  Body leader;
  leader.bytes("name", l.name).bytes("key", l.key).integer("rev", l.rev).integer("lease", l.lease);
  EtcdAnswer a;
  return call("/v3/election/resign", Body().json("leader", leader.done()).done(), Resend::Yes, a);
}

// RFC 4648 base64: each 3 bytes as 4 characters of 6 bits, the last group
// padded with '='.
std::string base64_encode(std::string_view bytes) {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    size_t n = bytes.size() - i < 3 ? bytes.size() - i : 3;
    uint32_t group = 0;
    for (size_t j = 0; j < 3; ++j) group = (group << 8) | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0u);
    for (size_t j = 0; j < 4; ++j) out += j <= n ? kDigits[(group >> (18 - 6 * j)) & 63] : '=';
  }
  return out;
}

namespace {
int base64_digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  return c == '+' ? 62 : c == '/' ? 63 : -1;
}
}  // namespace

bool base64_decode(std::string_view text, std::string& bytes) {
  bytes.clear();
  if (text.size() % 4 != 0) return false;
  size_t pad = text.ends_with("==") ? 2 : text.ends_with("=") ? 1 : 0;
  bytes.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    bool last = i + 4 == text.size();
    size_t digits = last ? 4 - pad : 4;
    uint32_t group = 0;
    for (size_t j = 0; j < 4; ++j) {
      int d = j < digits ? base64_digit(text[i + j]) : 0;
      if (d < 0) return false;
      group = (group << 6) | static_cast<uint32_t>(d);
    }
    if (last && (group & ((1u << (8 * pad)) - 1)) != 0) return false;  // bits past the last byte
    for (size_t j = 0; j < digits - 1; ++j) bytes += static_cast<char>((group >> (16 - 8 * j)) & 0xff);
  }
  return true;
}

}  // namespace aup::runtime

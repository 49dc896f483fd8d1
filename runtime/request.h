// A request, from the text its protocol carried to the value the Service
// runs (docs/protocol.md, "Requests"; the way SQLite's prepare makes a
// statement that step runs):
//
//   RequestText   what a framer cut out: a line of the line protocol (the
//                 request object), or what an HTTP request's route and body
//                 say (runtime/http.h). Views into the framer's buffer.
//   Request       the text parsed once and resolved against the module
//                 (Service::prepare): its kind, its event or query, its
//                 arguments as a parsed JSON node, its id and key; or why it
//                 is refused. Views into the JsonDoc it was parsed into.
//   HeldRequest   a RequestText copied to keep: handed to another thread (an
//                 I/O thread's event for the owner), or kept to run again (a
//                 query whose batch's commit failed).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/code.h"
#include "runtime/json.h"

namespace aup::runtime {

// Replicate: a replica's first request (runtime/replication_stream.h),
// which hands its connection to the primary's shipper. Read: rows by key
// or by range, without a query (runtime/read.h).
enum class RequestKind : uint8_t { Event, Query, Schema, Stats, Replicate, Read, Refused };

// Whether a request reads the state: answered where queries are, run again
// after a failed commit of events it may have read, and waiting for its
// `after` save.
constexpr bool reads_state(RequestKind k) { return k == RequestKind::Query || k == RequestKind::Read; }

// A read request, resolved (runtime/read.h): what Service::prepare checked
// of its shape; the key values are read when it runs.
struct ReadSpec {
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t index = kNone;  // the index scanned, or kNone: the table's key order
  uint32_t key = kNone;    // nodes of the request: `key` (a get), `from`, `to` (arrays)
  uint32_t from = kNone;
  uint32_t to = kNone;
  uint32_t limit = 0;  // rows at most (the default when not given)
  uint32_t bytes = 0;  // bytes of rows at most (the default when not given)
};

struct RequestText {
  enum class Form : uint8_t { Line, Route };
  Form form = Form::Line;
  std::string_view line;  // Line: the request object
  // Route (HTTP): the kind and name its method and path say, its body (the
  // arguments; blank: none), and its Idempotency-Key.
  RequestKind kind = RequestKind::Event;
  std::string_view name;
  std::string_view body;
  std::string_view query;  // a query's query string, as sent (`id=3&owner=ann`), or empty
  bool has_key = false;
  std::string_view key;

  static RequestText of_line(std::string_view line) {
    RequestText t;
    t.line = line;
    return t;
  }
};

// No node: a request without `args` (or an HTTP request without a body).
inline constexpr uint32_t kNoArgs = UINT32_MAX;

// A stats request that asks for the memory breakdown (`{"stats":
// {"memory": true}}`, GET /stats?memory, GET /metrics?memory): a walk of
// every row and text, so only when asked (docs/operations.md, *Memory*).
inline constexpr uint32_t kStatsMemory = 1;

struct Request {
  RequestKind kind = RequestKind::Refused;
  // Event: the event's number; Query: the query's function; Read: the
  // table; Stats: kStatsMemory when the memory breakdown is asked for, else 0.
  uint32_t target = 0;
  const JsonDoc* doc = nullptr;
  uint32_t args = kNoArgs;  // Event, Query: the arguments' object node; Replicate: its object
  std::string_view id;      // the id as written (raw JSON), or ""
  std::string_view key;     // Event: the idempotency key, or "" (none)
  uint64_t after = 0;       // Query, Read: run once the state holds this save (0: at once)
  ReadSpec read;            // Read
  // Refused: its code and why.
  Code refusal = Code::BadRequest;
  std::string why;

  void refuse(Code code, std::string reason) {
    kind = RequestKind::Refused;
    refusal = code;
    why = std::move(reason);
  }
};

class Service;

// A request's text kept, and parsed when it is needed. It never moves once
// it has been prepared (its Request views its own buffers): keep it where
// it was made, or by pointer.
class HeldRequest {
 public:
  HeldRequest() = default;
  explicit HeldRequest(const RequestText& t) { hold(t); }
  HeldRequest(const HeldRequest&) = delete;
  HeldRequest& operator=(const HeldRequest&) = delete;

  // Copies `t` (reusing this one's buffers); forgets any earlier parse.
  void hold(const RequestText& t);
  RequestText text() const;
  // Parses the copy and resolves it (the first time only).
  const Request& prepare(const Service& service);

 private:
  RequestText::Form form_ = RequestText::Form::Line;
  RequestKind kind_ = RequestKind::Event;
  bool has_key_ = false;
  std::string text_;  // the line, or the body
  std::string name_, key_, query_;
  JsonDoc doc_;
  Request request_;
  bool prepared_ = false;
};

}  // namespace aup::runtime

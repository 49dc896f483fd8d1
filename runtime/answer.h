// What a request comes to: an answer as a value, made by the Service and
// the Committer, and written as protocol text only where it leaves the
// process (docs/protocol.md, "Responses"):
//
//   line protocol   {"id":17,"ok":true,"result":{...}}
//                   {"id":18,"ok":false,"error":{"code":"not_found","message":"..."}}
//   HTTP            the same without the id, as the body of a response whose
//                   status the code says (runtime/http.h)
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/code.h"
#include "runtime/metrics.h"
#include "storage/status.h"

namespace aup::runtime {

struct Answer {
  Code code = Code::Ok;
  // An event answered unavailable: what became of it (not written, or
  // perhaps), said first in its message. None for anything else.
  std::optional<storage::Fate> fate;
  bool has_result = false;  // Ok: `text` is the result (else no "result")
  // An event on a store: the save whose log entry holds it (docs/protocol.md,
  // "Saves"), once it is durable; and an event whose batch's replicas did
  // not confirm it in time (perhaps written: in the log at this save).
  std::optional<uint64_t> save;
  std::string id;           // the request's id as it was written (raw JSON), or ""
  std::string text;         // Ok: the result's JSON; an error: its message
  std::string primary;      // not_primary: the primary's address, when known (the error's "primary")
  // A stats request's figures: written as JSON, or as Prometheus text for
  // GET /metrics, at the edge.
  std::unique_ptr<MetricSample> stats;

  bool ok() const { return code == Code::Ok; }
  // Clears it for reuse, keeping the strings' capacity.
  void reset() {
    code = Code::Ok;
    fate.reset();
    has_result = false;
    save.reset();
    id.clear();
    text.clear();
    primary.clear();
    stats.reset();
  }
  void fail(Code c, std::string_view message) {
    code = c;
    has_result = false;
    text.assign(message);
  }
};

// The answer's JSON object, without id: {"ok":true,"result":...} or the
// error, then its "save" when it has one; `id` (raw JSON) goes first when
// given. No newline.
void append_answer(std::string& out, const Answer& a, bool with_id);
// The line protocol's answer line: the object with its id, and a newline.
inline void append_answer_line(std::string& out, const Answer& a) {
  append_answer(out, a, true);
  out += '\n';
}

}  // namespace aup::runtime

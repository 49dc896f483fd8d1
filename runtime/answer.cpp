#include "runtime/answer.h"

#include "runtime/json.h"

namespace aup::runtime {

void append_answer(std::string& out, const Answer& a, bool with_id) {
  out += '{';
  if (with_id && !a.id.empty()) {
    out += "\"id\":";
    out += a.id;
    out += ',';
  }
  if (a.ok()) {
    out += "\"ok\":true";
    if (a.stats) {
      out += ",\"result\":";
      stats_json(*a.stats, out);
    } else if (a.has_result) {
      out += ",\"result\":";
      out += a.text;
    }
    out += '}';
    return;
  }
  out += "\"ok\":false,\"error\":{\"code\":\"";
  out += code_name(a.code);  // a plain word: nothing to escape
  out += "\",\"message\":";
  if (a.fate) {
    // The fate first, so a client can tell a retry that may apply twice.
    std::string message(storage::fate_text(*a.fate));
    message += ": ";
    message += a.text;
    json_append_string(out, message);
  } else {
    json_append_string(out, a.text);
  }
  out += "}}";
}

}  // namespace aup::runtime

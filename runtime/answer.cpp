#include "runtime/answer.h"

#include <fmt/format.h>

#include <iterator>

#include "runtime/json.h"

namespace aup::runtime {

namespace {

void append_save(std::string& out, const Answer& a) {
  if (a.save) fmt::format_to(std::back_inserter(out), ",\"save\":{}", *a.save);
}

}  // namespace

void append_answer(std::string& out, const Answer& a, bool with_id) {
  // A few appends of whole pieces: this runs once for every answer.
  if (with_id && !a.id.empty()) {
    out += "{\"id\":";
    out += a.id;
    out += ",\"ok\":";
  } else {
    out += "{\"ok\":";
  }
  if (a.ok()) {
    if (a.stats) {
      out += "true,\"result\":";
      stats_json(*a.stats, out);
    } else if (a.has_result) {
      out += "true,\"result\":";
      out += a.text;
    } else {
      out += "true";
    }
    append_save(out, a);
    out += '}';
    return;
  }
  out += "false,\"error\":{\"code\":\"";
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
  if (!a.primary.empty()) {
    out += ",\"primary\":";
    json_append_string(out, a.primary);
  }
  out += '}';
  append_save(out, a);
  out += '}';
}

}  // namespace aup::runtime

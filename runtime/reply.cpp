#include "runtime/reply.h"

#include "runtime/json.h"

namespace aup::runtime {

namespace {
void open_answer(std::string& out, std::string_view id) {
  out += '{';
  if (!id.empty()) {
    out += "\"id\":";
    out += id;
    out += ',';
  }
}
}  // namespace

void append_ok(std::string& out, std::string_view id, const std::string* result) {
  open_answer(out, id);
  out += "\"ok\":true";
  if (result) {
    out += ",\"result\":";
    out += *result;
  }
  out += "}\n";
}

void append_error(std::string& out, std::string_view id, std::string_view code, std::string_view message) {
  open_answer(out, id);
  out += "\"ok\":false,\"error\":{\"code\":";
  json_append_string(out, code);
  out += ",\"message\":";
  json_append_string(out, message);
  out += "}}\n";
}

}  // namespace aup::runtime

// Diagnostics: what the front end tells a user about their source.
//
// Every stage appends to one Diagnostics list; nothing is printed until the
// run ends, when the list is sorted by position so a user reads the errors
// top to bottom, whichever stage found them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/source.h"

namespace aup {

struct Diagnostic {
  Pos pos;
  uint32_t width = 1;  // code points to underline, at least 1
  std::string message;
};

class Diagnostics {
 public:
  void error(Pos pos, uint32_t width, std::string message);
  void error(Pos pos, std::string message) { error(pos, 1, std::move(message)); }

  bool empty() const { return list_.empty(); }
  size_t size() const { return list_.size(); }
  const std::vector<Diagnostic>& list() const { return list_; }
  // Sorts by position and drops exact repeats (same place, same words).
  void finish();

 private:
  std::vector<Diagnostic> list_;
};

// `file:line:col: error: message`, the source line, and a caret (with `~`
// under the rest of the token). Tabs in the source line are kept in the
// caret line so the caret lands under the right character.
std::string render_text(const SourceFile& file, const Diagnostic& d, bool color);
// One JSON object, no trailing newline:
// {"file":..,"line":..,"col":..,"width":..,"severity":"error","message":..}
std::string render_json(const SourceFile& file, const Diagnostic& d);
// A JSON string literal (quotes included) for arbitrary UTF-8 bytes.
std::string json_quote(std::string_view s);

}  // namespace aup

// Source text and positions.
//
// A position is a byte offset plus a 1-based line and a 1-based column.
// Columns count Unicode code points from the start of the line (not bytes,
// not UTF-16 units): a caret printed under a line of ASCII, Latin or Hangul
// text lands under the right character, and the number a user reads in
// `bank.aup:3:17` is the one their editor shows in its "column" field for
// code-point editors. Tabs count as one column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace aup {

struct Pos {
  uint32_t offset = 0;  // bytes from the start of the file
  uint32_t line = 0;    // 1-based; 0 means "no position"
  uint32_t col = 0;     // 1-based, in code points
};

// Largest source file accepted: offsets are 32-bit, and a module larger
// than this is not hand-written code.
inline constexpr size_t kMaxSourceBytes = size_t{64} << 20;

class SourceFile {
 public:
  SourceFile(std::string name, std::string text);

  const std::string& name() const { return name_; }
  std::string_view text() const { return text_; }
  // The text followed by a NUL byte, so a lexer may read one past the end.
  const char* c_str() const { return text_.c_str(); }

  // The line holding `line` (1-based), without its line ending.
  std::string_view line_text(uint32_t line) const;
  uint32_t line_count() const { return static_cast<uint32_t>(line_starts_.size()); }
  // Position of a byte offset (slow path: binary search plus a count).
  Pos pos_at(uint32_t offset) const;

 private:
  std::string name_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

// Number of code points in a UTF-8 byte range (continuation bytes skipped).
uint32_t count_code_points(std::string_view bytes);

}  // namespace aup

#include "compiler/diag.h"

#include <fmt/format.h>

#include <algorithm>

namespace aup {

void Diagnostics::error(Pos pos, uint32_t width, std::string message) {
  list_.push_back(Diagnostic{pos, width == 0 ? 1 : width, std::move(message)});
}

void Diagnostics::finish() {
  std::stable_sort(list_.begin(), list_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return a.pos.offset < b.pos.offset;
  });
  auto same = [](const Diagnostic& a, const Diagnostic& b) {
    return a.pos.offset == b.pos.offset && a.message == b.message;
  };
  list_.erase(std::unique(list_.begin(), list_.end(), same), list_.end());
}

std::string render_text(const SourceFile& file, const Diagnostic& d, bool color) {
  const char* bold = color ? "\x1b[1m" : "";
  const char* red = color ? "\x1b[1;31m" : "";
  const char* green = color ? "\x1b[1;32m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  std::string out = fmt::format("{}{}:{}:{}: {}error:{} {}{}{}\n", bold, file.name(), d.pos.line,
                                d.pos.col, red, reset, bold, d.message, reset);
  std::string_view line = file.line_text(d.pos.line);
  if (d.pos.line == 0) return out;
  out += line;
  out += '\n';
  // Walk the line by code points so the caret sits under column `col`.
  std::string caret;
  uint32_t col = 1;
  for (size_t i = 0; i < line.size() && col < d.pos.col; ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    if ((c & 0xC0) == 0x80) continue;
    caret += c == '\t' ? '\t' : ' ';
    ++col;
  }
  while (col < d.pos.col) {  // a position just past the end of the line
    caret += ' ';
    ++col;
  }
  caret += green;
  caret += '^';
  uint32_t line_cps = count_code_points(line);
  uint32_t room = line_cps >= d.pos.col ? line_cps - d.pos.col : 0;
  uint32_t tildes = std::min(d.width - 1, room);
  caret.append(tildes, '~');
  caret += reset;
  out += caret;
  out += '\n';
  return out;
}

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string render_json(const SourceFile& file, const Diagnostic& d) {
  return fmt::format(
      R"({{"file":{},"line":{},"col":{},"width":{},"severity":"error","message":{}}})",
      json_quote(file.name()), d.pos.line, d.pos.col, d.width, json_quote(d.message));
}

}  // namespace aup

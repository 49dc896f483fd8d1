// A small exact JSON reader and writer for request lines and responses.
//
// Reading parses one whole text into a flat tape of nodes (RFC 8259:
// strict grammar, UTF-8 validated, `\u` escapes with surrogate pairs,
// numbers rounded correctly by std::from_chars). A node's subtree is the
// nodes up to its `next`, so a reader walks members without recursion and
// skips a subtree in one step. Strings without escapes are views into the
// input; escaped ones are decoded into the document's scratch buffer,
// which is sized once per line so its views stay put.
//
// Limits: nesting depth kMaxDepth (deeper input is an error, not a deep
// recursion); the caller bounds the line length.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace aup::runtime {

inline constexpr uint32_t kMaxJsonDepth = 64;

struct JsonNode {
  enum class Kind : uint8_t { Null, False, True, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool finite = true;    // Number: representable as a finite binary64
  uint32_t next = 0;     // index of the first node after this subtree
  uint32_t count = 0;    // Array: items; Object: members
  double num = 0;        // Number
  std::string_view str;  // String: decoded value
  std::string_view raw;  // the node's source text (for echoing ids)
};

class JsonDoc {
 public:
  // Parses `text`; false with a message (and byte offset) on bad JSON.
  bool parse(std::string_view text, std::string& error);
  // The same of a copy of `text` the document keeps (text made for the
  // parse: a query string's arguments as JSON, runtime/convert.h).
  bool parse_copy(std::string_view text, std::string& error);
  // Where the last parse that failed stopped: a byte offset into its text.
  size_t error_at() const { return error_at_; }
  const JsonNode& node(uint32_t i) const { return nodes_[i]; }
  uint32_t root() const { return 0; }
  // Object members: the key node is at i, the value at i + 1; the next
  // member's key at node(i + 1).next.
  uint32_t first_child(uint32_t i) const { return i + 1; }
  uint32_t after(uint32_t i) const { return nodes_[i].next; }
  // The value of member `key` of node `obj` (the first such), or 0 (the
  // root, never a member's value) when it has none or is not an object.
  uint32_t member(uint32_t obj, std::string_view key) const;

 private:
  friend class JsonParser;
  std::vector<JsonNode> nodes_;
  std::string scratch_;
  std::string copy_;
  size_t error_at_ = 0;
};

// A request's integers beyond 2^53 follow stdlib/numbers.h's rule
// (integer_rounded), as `num(t)` and source literals do.

// Appends `s` as a JSON string literal (quotes, escapes; UTF-8 kept).
void json_append_string(std::string& out, std::string_view s);
// Appends a finite number as the shortest text that reads back to the
// same bits (std::to_chars): 0.1, 100, 1e+21, -0, 5e-324.
void json_append_number(std::string& out, double d);

// Whether the characters of JSON text, taken one at a time, lie inside a
// string: for code that must find the structure of text it does not parse
// (the shell's words).
class JsonStrings {
 public:
  // Takes the next character: true when it is outside every string and
  // not a quote (a bracket, a comma, a space of the text itself).
  bool outside(char c) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      return false;
    }
    in_string_ = c == '"';
    return !in_string_;
  }
  bool in_string() const { return in_string_; }

 private:
  bool in_string_ = false, escaped_ = false;
};

}  // namespace aup::runtime

// One JSON line from aup (an answer of `aup run --listen`, a row of `aup
// replay --dump`) parsed with runtime/json.h, and accessors that check the
// shape as they read: a missing member, a number that is not whole, a text
// where a number belongs all throw std::runtime_error with a sentence that
// names aup, says what was being read and quotes the line. The backend
// reads every answer through this, so a server that answers something
// unexpected stops the run instead of being measured.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/json.h"  // runtime/json.h (runtime_dep)

namespace aup::tpcc {

// Longest part of a line quoted in an error message: enough to see the
// error or the field, short enough for a terminal (a dump row or a load
// answer is short; an Order-Status answer can be 2 KB).
constexpr size_t kMaxQuotedBytes = 2000;

// Reused for every line of a connection (the parser keeps its node
// buffers), so reading an answer allocates nothing once warm.
class JsonLine {
 public:
  // Parses `line`, which must stay valid while this line is read; `what`
  // says what it is for messages ("the answer to new_order"). Throws when
  // it is not JSON or not an object.
  void parse(std::string_view line, std::string_view what);

  uint32_t root() const { return doc_.root(); }
  const runtime::JsonNode& node(uint32_t i) const { return doc_.node(i); }

  // The value of `key` in the object at `object`; throws when absent.
  uint32_t member(uint32_t object, std::string_view key) const;
  // The value of `key`, or 0 (never a value: the root is node 0) when absent.
  uint32_t find(uint32_t object, std::string_view key) const;

  // A number with no fraction, within ±2^53 (where binary64 is exact).
  int64_t whole(uint32_t value) const;
  int64_t whole(uint32_t object, std::string_view key) const { return whole(member(object, key)); }
  bool boolean(uint32_t value) const;
  std::string_view text(uint32_t value) const;
  // The items of the array at `array`: the first item's index (walk on
  // with node(i).next); throws when it is not an array.
  uint32_t first_item(uint32_t array) const;

  // Throws "aup: WHAT: WHY: LINE".
  [[noreturn]] void fail(std::string_view why) const;

 private:
  runtime::JsonDoc doc_;
  std::string error_;      // the parser's message, reused
  std::string_view line_;  // the line being read
  std::string_view what_;
};

// An answer {"id":ID,"ok":true,"result":{...}}: the result's node. Throws
// (quoting the answer) when the id is not `id`, it is not ok, or it has no
// result.
uint32_t ok_result(const JsonLine& answer, uint64_t id);

// The answer's id (a whole number, as every request of the backend has);
// throws when it is not `id`.
void check_id(const JsonLine& answer, uint64_t id);

}  // namespace aup::tpcc

// RESP2, the Redis protocol, as much as the benchmark speaks: commands go
// out as arrays of bulk strings; replies come back as simple strings (+),
// errors (-), integers (:), bulk strings ($) and arrays (*).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/peers/stream.h"

namespace aup::bench::peers::resp {

// Appends one command: *N\r\n then $LEN\r\nARG\r\n for each argument.
void append_command(std::string& out, const std::vector<std::string_view>& args);

struct Reply {
  char type = 0;              // '+', '-', ':', '$' or '*'
  std::string text;           // of '+', '-' and '$' (a nil bulk string is empty)
  int64_t integer = 0;        // of ':'
  std::vector<Reply> items;   // of '*'
  bool is_error() const { return type == '-'; }
};

// One reply at the front of `in`: the reply and the bytes it took, or
// nothing when `in` holds only part of it. Throws std::runtime_error on
// bytes that are not RESP. Arrays nest at most 8 deep (the replies here
// nest 1).
std::optional<Reply> parse(std::string_view in, size_t& used);

// Reads `count` replies from `s`, in order.
std::vector<Reply> receive(Stream& s, size_t count);

// Sends one command and returns its reply.
Reply call(Stream& s, const std::vector<std::string_view>& args);

}  // namespace aup::bench::peers::resp

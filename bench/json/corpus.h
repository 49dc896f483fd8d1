// Request lines for the JSON benchmark, all in one buffer so that every
// line is followed by readable bytes (simdjson reads up to
// SIMDJSON_PADDING bytes past a document; the buffer ends with that much).
//
//   transfer   {"event":"transfer","args":{"from":..,"to":..,"amount":..},"id":..}
//   new_order  {"event":"new_order","args":{"w":1,"d":3,"c":17,"lines":[
//                {"item":..,"supply":1,"quantity":5}, ... 10 lines]},"id":..}
//              (the request examples/tpcc/tpcc.aup's new_order expects)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace aup::bench::json {

struct Corpus {
  std::string name;
  std::string buffer;  // lines joined by '\n', then padding
  struct Span {
    size_t begin, size;
  };
  std::vector<Span> lines;

  std::string_view line(size_t i) const { return std::string_view(buffer).substr(lines[i].begin, lines[i].size); }
  // Bytes readable from the start of line i: its own and all after it.
  size_t capacity(size_t i) const { return buffer.size() - lines[i].begin; }
  size_t text_bytes() const;  // the lines without newlines and padding
};

// `padding` bytes of spaces end the buffer.
Corpus make_transfers(size_t count, uint64_t seed, size_t padding);
Corpus make_new_orders(size_t count, uint64_t seed, size_t padding);

}  // namespace aup::bench::json

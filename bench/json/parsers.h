// The parsers compared, behind one interface. Each keeps its state (aup's
// JsonDoc, simdjson's parser) across lines, as a server would.
//
// walk(): parses one line and folds every value into a checksum, visiting
// every field: each number's binary64 bits and each string's (member names
// included) length and first byte, added up so the order of visiting does
// not matter. The parsers must agree on every line.
// read_v(): the number of member "v" of a line {"v":NUMBER}.
//
// simdjson compiles On-Demand for one instruction set chosen when the
// including file is compiled (its "builtin implementation"): with this
// project's flags (plain x86-64) that is its scalar `fallback` kernel. So
// On-Demand is measured twice: as this project would get it, and compiled
// with -march=x86-64-v3 -mpclmul (AVX2, simdjson's `haswell` kernel) in a separate
// shared library whose symbols are hidden, so its AVX2 copies of
// simdjson's inline functions cannot replace the plain ones. DOM picks its
// kernel at run time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/json.h"

namespace aup::bench::json {

// Folds into a checksum; shared so that every parser folds alike.
inline void fold_number(uint64_t& sum, uint64_t bits) { sum += bits; }
inline void fold_string(uint64_t& sum, std::string_view s) {
  sum += s.size() * 0x9E3779B97F4A7C15ull + (s.empty() ? 0 : static_cast<unsigned char>(s[0]));
}

class Parser {
 public:
  virtual ~Parser() = default;
  // A stable name for results ("aup", "ondemand", "ondemand_v3", "dom").
  virtual std::string id() const = 0;
  // What it is, for people ("simdjson On-Demand (haswell kernel)").
  virtual std::string label() const = 0;
  // `capacity`: readable bytes from line.data() (at least line.size()).
  virtual bool walk(std::string_view line, size_t capacity, uint64_t& sum) = 0;
  virtual bool read_v(std::string_view line, size_t capacity, double& out) = 0;
};

// aup::runtime::JsonDoc::parse, then a pass over its nodes.
class AupParser final : public Parser {
 public:
  std::string id() const override { return "aup"; }
  std::string label() const override { return "aup JsonDoc::parse"; }
  bool walk(std::string_view line, size_t capacity, uint64_t& sum) override;
  bool read_v(std::string_view line, size_t capacity, double& out) override;

 private:
  runtime::JsonDoc doc_;
  std::string error_;
};

// simdjson On-Demand compiled with this project's flags: iterate, and visit
// every field of the document.
std::unique_ptr<Parser> make_ondemand_parser();
// simdjson DOM: parse into its tape, then visit every element.
std::unique_ptr<Parser> make_dom_parser();
// Bytes simdjson may read past a document's end.
size_t simdjson_padding();

#ifdef AUP_HAVE_ONDEMAND_V3
// simdjson On-Demand compiled for x86-64-v3 (ondemand_v3 library); null
// when this CPU cannot run it.
[[gnu::visibility("default")]] std::unique_ptr<Parser> make_ondemand_v3_parser();
#endif

}  // namespace aup::bench::json

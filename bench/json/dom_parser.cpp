// simdjson DOM: parse into its tape, then visit every element. DOM picks
// its kernel at run time, so the project's flags do not limit it.
#include <simdjson.h>

#include <bit>

#include "bench/json/parsers.h"

namespace aup::bench::json {

namespace {

bool walk_element(simdjson::dom::element e, uint64_t& sum) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::OBJECT:
      for (auto [key, value] : simdjson::dom::object(e)) {
        fold_string(sum, key);
        if (!walk_element(value, sum)) return false;
      }
      return true;
    case element_type::ARRAY:
      for (simdjson::dom::element x : simdjson::dom::array(e)) {
        if (!walk_element(x, sum)) return false;
      }
      return true;
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE: {
      double d;
      if (e.get_double().get(d)) return false;
      fold_number(sum, std::bit_cast<uint64_t>(d));
      return true;
    }
    case element_type::STRING: {
      std::string_view s;
      if (e.get_string().get(s)) return false;
      fold_string(sum, s);
      return true;
    }
    case element_type::BOOL:
    case element_type::NULL_VALUE:
      return true;
  }
  return false;
}

class DomParser final : public Parser {
 public:
  std::string id() const override { return "dom"; }
  std::string label() const override {
    return "simdjson DOM (" + std::string(simdjson::get_active_implementation()->name()) + " kernel, chosen at run time)";
  }

  bool walk(std::string_view line, size_t capacity, uint64_t& sum) override {
    (void)capacity;  // the corpus pads every line, so parse() need not copy it
    simdjson::dom::element root;
    if (parser_.parse(line.data(), line.size(), false).get(root)) return false;
    return walk_element(root, sum);
  }

  bool read_v(std::string_view line, size_t capacity, double& out) override {
    (void)capacity;
    simdjson::dom::element root;
    if (parser_.parse(line.data(), line.size(), false).get(root)) return false;
    return !root["v"].get_double().get(out);
  }

 private:
  simdjson::dom::parser parser_;
};

}  // namespace

std::unique_ptr<Parser> make_dom_parser() { return std::make_unique<DomParser>(); }

size_t simdjson_padding() { return simdjson::SIMDJSON_PADDING; }

}  // namespace aup::bench::json

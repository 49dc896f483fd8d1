// simdjson On-Demand, visiting every field. Compiled twice (parsers.h):
// into json_bench with the project's flags, and with AUP_ONDEMAND_V3 into
// the ondemand_v3 library with -march=x86-64-v3. simdjson 3.0.1 (Debian's
// libsimdjson-dev), error codes rather than exceptions, as a server that
// must not throw per request would use it.
#include <simdjson.h>

#include <bit>

#include "bench/json/parsers.h"

#define AUP_STR2(x) #x
#define AUP_STR(x) AUP_STR2(x)

namespace aup::bench::json {

namespace {

namespace od = simdjson::SIMDJSON_BUILTIN_IMPLEMENTATION::ondemand;

bool walk_value(od::value v, uint64_t& sum);

bool walk_object(od::object obj, uint64_t& sum) {
  for (auto member : obj) {
    od::field f;
    if (std::move(member).get(f)) return false;
    std::string_view key;
    if (f.unescaped_key().get(key)) return false;
    fold_string(sum, key);
    if (!walk_value(f.value(), sum)) return false;
  }
  return true;
}

// Visits an On-Demand value and everything under it.
bool walk_value(od::value v, uint64_t& sum) {
  od::json_type type;
  if (v.type().get(type)) return false;
  switch (type) {
    case od::json_type::object: {
      od::object obj;
      if (v.get_object().get(obj)) return false;
      return walk_object(obj, sum);
    }
    case od::json_type::array: {
      od::array arr;
      if (v.get_array().get(arr)) return false;
      for (auto item : arr) {
        od::value x;
        if (std::move(item).get(x)) return false;
        if (!walk_value(x, sum)) return false;
      }
      return true;
    }
    case od::json_type::number: {
      double d;
      if (v.get_double().get(d)) return false;
      fold_number(sum, std::bit_cast<uint64_t>(d));
      return true;
    }
    case od::json_type::string: {
      std::string_view s;
      if (v.get_string().get(s)) return false;
      fold_string(sum, s);
      return true;
    }
    case od::json_type::boolean: {
      bool b;
      return !v.get_bool().get(b);
    }
    case od::json_type::null: {
      bool is_null = false;
      return !v.is_null().get(is_null) && is_null;
    }
  }
  return false;
}

class OndemandParser final : public Parser {
 public:
#ifdef AUP_ONDEMAND_V3
  std::string id() const override { return "ondemand_v3"; }
  std::string label() const override {
    return "simdjson On-Demand, -march=x86-64-v3 -mpclmul (" AUP_STR(SIMDJSON_BUILTIN_IMPLEMENTATION) " kernel)";
  }
#else
  std::string id() const override { return "ondemand"; }
  std::string label() const override {
    return "simdjson On-Demand, project flags (" AUP_STR(SIMDJSON_BUILTIN_IMPLEMENTATION) " kernel)";
  }
#endif

  bool walk(std::string_view line, size_t capacity, uint64_t& sum) override {
    od::document doc;
    if (parser_.iterate(simdjson::padded_string_view(line.data(), line.size(), capacity)).get(doc)) return false;
    // Every request line is an object.
    od::object obj;
    if (doc.get_object().get(obj)) return false;
    return walk_object(obj, sum);
  }

  bool read_v(std::string_view line, size_t capacity, double& out) override {
    od::document doc;
    if (parser_.iterate(simdjson::padded_string_view(line.data(), line.size(), capacity)).get(doc)) return false;
    return !doc["v"].get_double().get(out);
  }

 private:
  od::parser parser_;
};

}  // namespace

#ifdef AUP_ONDEMAND_V3
std::unique_ptr<Parser> make_ondemand_v3_parser() {
  if (!__builtin_cpu_supports("x86-64-v3") || !__builtin_cpu_supports("pclmul")) return nullptr;
  return std::make_unique<OndemandParser>();
}
#else
std::unique_ptr<Parser> make_ondemand_parser() { return std::make_unique<OndemandParser>(); }
#endif

}  // namespace aup::bench::json

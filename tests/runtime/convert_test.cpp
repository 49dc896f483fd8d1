// Request JSON to aup values (runtime/convert.h), through a running module:
// an integer no num holds exactly is refused with bad_number wherever a
// request gives a num (event fields, query parameters, and the arrays,
// records and objects in them), naming the argument's path; the event is
// not applied and the next request is answered as usual.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

#include "runtime/convert.h"
#include "tests/runtime/harness.h"

namespace aup::testing {
namespace {

constexpr const char* kSource = R"(
record Item { code: num, qty: num = 1 }
record K { id: num }
table ks: K key id

event add { id: num }
on add { ks.add(K { id: add.id }) }
event order { lines: [Item], tag: {n: num} }
on order { return order.lines.count + order.tag.n }

query count() { return ks.count }
query has(id: num) { return ks.has(id) }
query sum(xs: [[num]]) {
  let s = 0
  for x in xs { for y in x { s = s + y } }
  return s
}
)";

std::string add(Running& run, std::string_view id) {
  return run.call(fmt::format(R"({{"event":"add","args":{{"id":{}}},"id":1}})", id));
}

std::string refused(std::string_view path, std::string_view literal, std::string_view nearest) {
  return fmt::format(
      R"({{"id":1,"ok":false,"error":{{"code":"bad_number","message":"{}: {} is not exactly a number aup can )"
      R"(hold (integers beyond ±2^53 are rounded: it would be {}); send it as text"}}}})",
      path, literal, nearest);
}

TEST_SUITE("convert") {
  TEST_CASE("an event's integer beyond 2^53 that no num holds is refused; the ones either side are kept apart") {
    Running run(kSource);
    CHECK(add(run, "9007199254740992") == R"({"id":1,"ok":true})");
    CHECK(add(run, "9007199254740993") == refused("id", "9007199254740993", "9007199254740992"));
    CHECK(add(run, "9007199254740994") == R"({"id":1,"ok":true})");
    CHECK(add(run, "-9007199254740993") == refused("id", "-9007199254740993", "-9007199254740992"));
    CHECK(add(run, "123456789012345678901") ==
          refused("id", "123456789012345678901", "123456789012345683968"));
    // Written with a fraction of zeros it is the same integer, refused the same.
    CHECK(add(run, "9007199254740995.0") == refused("id", "9007199254740995.0", "9007199254740996"));
    // Not applied: without the refusal, 2^53 + 1 would have been a duplicate
    // of 2^53 (or, in a table without it, silently the key 2^53).
    CHECK(run.call(R"({"query":"count"})") == R"({"ok":true,"result":2})");
    CHECK(run.call(R"({"query":"has","args":{"id":9007199254740994}})") == R"({"ok":true,"result":true})");
    // Exact integers, decimals and exponents go through.
    CHECK(add(run, "1e20") == R"({"id":1,"ok":true})");
    CHECK(add(run, "9007199254740997.5") == R"({"id":1,"ok":true})");  // a decimal: the nearest
    CHECK(add(run, "1e308") == R"({"id":1,"ok":true})");  // scientific notation: the nearest
    CHECK(add(run, "0.1") == R"({"id":1,"ok":true})");
    CHECK(run.call(R"({"query":"count"})") == R"({"ok":true,"result":6})");
  }

  TEST_CASE("the check reaches nums inside arrays, records, objects and query parameters, with their paths") {
    Running run(kSource);
    CHECK(run.call(R"({"event":"order","args":{"lines":[{"code":1},{"code":18446744073709551615}],)"
                   R"("tag":{"n":1}},"id":1})") ==
          refused("lines[1].code", "18446744073709551615", "18446744073709551616"));
    CHECK(run.call(R"({"event":"order","args":{"lines":[{"code":1,"qty":2}],)"
                   R"("tag":{"n":9007199254740993}},"id":1})") ==
          refused("tag.n", "9007199254740993", "9007199254740992"));
    CHECK(run.call(R"({"query":"has","args":{"id":9007199254740993},"id":1})") ==
          refused("id", "9007199254740993", "9007199254740992"));
    CHECK(run.call(R"({"query":"sum","args":{"xs":[[1],[2,-9007199254740995]]},"id":1})") ==
          refused("xs[1][1]", "-9007199254740995", "-9007199254740996"));
    // The same requests with numbers a num holds are answered.
    CHECK(run.call(R"({"event":"order","args":{"lines":[{"code":1},{"code":18446744073709551616}],)"
                   R"("tag":{"n":1}}})") == R"({"ok":true,"result":3})");
    CHECK(run.call(R"({"query":"sum","args":{"xs":[[1],[2,-9007199254740994]]}})") ==
          R"({"ok":true,"result":-9007199254740991})");
  }

  TEST_CASE("other argument errors keep bad_args, before and after a bad_number") {
    Running run(kSource);
    CHECK(run.reply(R"({"event":"add","args":{"id":1e400}})").code() == "bad_args");
    CHECK(run.reply(R"({"event":"add","args":{"id":9007199254740993}})").code() == "bad_number");
    CHECK(run.reply(R"({"event":"add","args":{"id":"9007199254740993"}})").code() == "bad_args");
    CHECK(run.reply(R"({"query":"has","args":{"id":9007199254740993,"x":1}})").code() == "bad_number");
    CHECK(run.reply(R"({"query":"has","args":{"x":1,"id":9007199254740993}})").code() == "bad_args");
    // A query parameter's path starts with its name, as an event field's does.
    CHECK(run.call(R"({"query":"sum","args":{"xs":[[1],["a"]]}})") ==
          R"({"ok":false,"error":{"code":"bad_args","message":"xs[1][0]: expected number, got string"}})");
    // One reader, several values: each failure carries its own code.
    runtime::JsonDoc doc;
    std::string error;
    REQUIRE(doc.parse(R"([9007199254740993, "x", 3])", error));
    vm::Vm machine(run.module(), run.state());
    runtime::JsonToValue reader(doc, machine);
    const uint32_t num_type = vm::kTypeNum;
    vm::Value v;
    CHECK_FALSE(reader.value(1, num_type, &v));
    CHECK(reader.code() == runtime::Code::BadNumber);
    CHECK_FALSE(reader.value(2, num_type, &v));
    CHECK(reader.code() == runtime::Code::BadArgs);
    CHECK(reader.error() == "expected number, got string");
    CHECK(reader.value(3, num_type, &v));
    CHECK(vm::as_num(v) == 3);
  }
}

}  // namespace
}  // namespace aup::testing

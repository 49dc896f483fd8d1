#include "bench/retention/hash.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench/retention/io.h"

namespace aup::retention {
namespace {

std::vector<std::byte> bytes_of(std::string_view s) {
  auto b = std::as_bytes(std::span(s.data(), s.size()));
  return {b.begin(), b.end()};
}

TEST_SUITE("hash") {
  TEST_CASE("the hash does not depend on how the bytes are split") {
    std::vector<std::byte> data(1000);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 7 + 3);
    uint64_t whole = hash_bytes(data);
    for (size_t split : {size_t{1}, size_t{3}, size_t{7}, size_t{8}, size_t{9}, size_t{500}, size_t{999}}) {
      Hasher h;
      h.update(std::span(data).first(split));
      h.update(std::span(data).subspan(split));
      CHECK(h.finish() == whole);
    }
    Hasher bytewise;
    for (std::byte b : data) bytewise.update(std::span(&b, 1));
    CHECK(bytewise.finish() == whole);
  }

  TEST_CASE("one changed byte, or one more zero byte, changes the hash") {
    std::vector<std::byte> data(257, std::byte{0x5a});
    uint64_t base = hash_bytes(data);
    for (size_t at : {size_t{0}, size_t{7}, size_t{128}, size_t{256}}) {
      auto changed = data;
      changed[at] ^= std::byte{1};
      CHECK(hash_bytes(changed) != base);
    }
    auto longer = data;
    longer.push_back(std::byte{0});
    CHECK(hash_bytes(longer) != base);
    CHECK(hash_bytes({}) != hash_bytes(bytes_of(std::string(1, '\0'))));
  }

  TEST_CASE("hash_file reads the whole file; a missing file is an error") {
    std::string path = std::string(P_tmpdir) + "/retention-hash-test-" + std::to_string(::getpid());
    std::vector<std::byte> data((3u << 20) + 5);  // more than one read chunk
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i ^ (i >> 9));
    {
      auto f = File::open_write(path);
      REQUIRE(f.ok());
      REQUIRE(write_all(f.value().fd(), data).ok());
    }
    auto h = hash_file(path);
    REQUIRE(h.ok());
    CHECK(h.value() == hash_bytes(data));
    std::remove(path.c_str());
    auto missing = hash_file(path);
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.message().find("cannot open") != std::string::npos);
  }

  TEST_CASE("hex64 pads to 16 digits") {
    CHECK(hex64(0x1f) == "000000000000001f");
    CHECK(hex64(~uint64_t{0}) == "ffffffffffffffff");
  }
}

}  // namespace
}  // namespace aup::retention

#include "bench/retention/io.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <string>

#include "tests/retention/test_util.h"

namespace aup::retention {
namespace {

std::vector<std::byte> pattern(size_t n) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(i * 13);
  return v;
}

TEST_SUITE("io") {
  TEST_CASE("read_full fills the buffer, and is short only at the end of the input") {
    auto data = pattern(1000);
    test::MemFile f(data);
    std::vector<std::byte> buf(600);
    auto first = read_full(f.fd(), buf);
    REQUIRE(first.ok());
    CHECK(first.value() == 600);
    auto second = read_full(f.fd(), buf);
    REQUIRE(second.ok());
    CHECK(second.value() == 400);
    CHECK(std::equal(buf.begin(), buf.begin() + 400, data.begin() + 600));
    auto third = read_full(f.fd(), buf);
    REQUIRE(third.ok());
    CHECK(third.value() == 0);
  }

  TEST_CASE("read_full gathers a pipe's separate writes") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    auto data = pattern(300);
    REQUIRE(::write(fds[1], data.data(), 100) == 100);
    REQUIRE(::write(fds[1], data.data() + 100, 200) == 200);
    ::close(fds[1]);
    std::vector<std::byte> buf(300);
    auto got = read_full(fds[0], buf);
    ::close(fds[0]);
    REQUIRE(got.ok());
    CHECK(got.value() == 300);
    CHECK(buf == data);
  }

  TEST_CASE("write_all writes every piece, empty ones included") {
    test::MemFile f;
    auto a = pattern(10);
    auto b = pattern(70000);
    std::array<iovec, 3> pieces{iovec{a.data(), a.size()}, iovec{nullptr, 0}, iovec{b.data(), b.size()}};
    REQUIRE(write_all(f.fd(), pieces).ok());
    auto all = f.contents();
    REQUIRE(all.size() == a.size() + b.size());
    CHECK(std::equal(a.begin(), a.end(), all.begin()));
    CHECK(std::equal(b.begin(), b.end(), all.begin() + 10));
  }

  TEST_CASE("errors carry the reason") {
    int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    Status s = write_all(fd, pattern(5));
    ::close(fd);
    REQUIRE_FALSE(s.ok());
    CHECK(s.message() == "No space left on device");
    auto missing = File::open_read("/nonexistent/retention");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.message() == "cannot open /nonexistent/retention: No such file or directory");
    auto unwritable = File::open_write("/nonexistent/dir/out");
    REQUIRE_FALSE(unwritable.ok());
    CHECK(unwritable.message().find("for writing") != std::string::npos);
  }

  TEST_CASE("a File closes its descriptor once, moves included") {
    auto opened = File::open_read("/dev/null");
    REQUIRE(opened.ok());
    File a = std::move(opened.value());
    int fd = a.fd();
    File b = std::move(a);
    CHECK(a.fd() == -1);
    CHECK(b.fd() == fd);
  }
}

}  // namespace
}  // namespace aup::retention

// The outbox (runtime/outbox.h) over a socket that takes only part of
// what waits.
#include "runtime/outbox.h"

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace aup::runtime {
namespace {

TEST_SUITE("outbox") {
  TEST_CASE("the outbox writes what the socket takes and keeps the rest; a gone peer is reported") {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
    Outbox out;
    CHECK(out.send_to(sv[0]) == Outbox::Sent::All);  // nothing waits
    out.append([](std::string& b) { b += "hello\n"; });
    CHECK(out.send_to(sv[0]) == Outbox::Sent::All);
    CHECK(out.waiting() == 0);
    char buf[16];
    CHECK(::read(sv[1], buf, sizeof buf) == 6);
    // More than the socket holds: part goes, the rest waits in order.
    std::string big(8 << 20, 'z');
    big.back() = '\n';
    out.append([&](std::string& b) { b += big; });
    CHECK(out.send_to(sv[0]) == Outbox::Sent::Some);
    size_t left = out.waiting();
    CHECK(left > 0);
    CHECK(left < big.size());
    ::close(sv[1]);
    CHECK(out.send_to(sv[0]) == Outbox::Sent::Gone);
    ::close(sv[0]);
  }
}

}  // namespace
}  // namespace aup::runtime

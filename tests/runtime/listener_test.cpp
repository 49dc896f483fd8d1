// Where `aup run --listen` listens (runtime/listener.h): the forms an
// address takes, refused in words that name the form, and BoundListeners,
// which binds every address before the server makes anything and keeps
// nothing when one of them fails.
#include "runtime/listener.h"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace aup::runtime {
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string temp_dir() {
  char name[] = "/tmp/aup-listener-XXXXXX";
  REQUIRE(::mkdtemp(name) != nullptr);
  return name;
}

TEST_SUITE("listener") {
  TEST_CASE("the forms: unix:PATH, HOST:PORT, :PORT, http://HOST:PORT, [IPv6]:PORT") {
    ListenAddress a;
    std::string error;
    REQUIRE(parse_listen_address("unix:/run/x.sock", a, error));
    CHECK((a.unix_socket && a.path == "/run/x.sock"));
    REQUIRE(parse_listen_address(":8080", a, error));
    CHECK((a.host == "127.0.0.1" && a.port == 8080 && !a.http));
    REQUIRE(parse_listen_address("http://0.0.0.0:80/", a, error));
    CHECK((a.http && a.host == "0.0.0.0" && a.port == 80));
    REQUIRE(parse_listen_address("[::1]:7000", a, error));
    CHECK(a.host == "::1");
    REQUIRE(parse_listen_address("::1:7000", a, error));  // split at the last colon: an IPv6 host
    CHECK(a.host == "::1");
    CHECK(a.spec == "::1:7000");
  }

  TEST_CASE("refused by form, each message naming the forms") {
    ListenAddress a;
    std::string error;
    CHECK_FALSE(parse_listen_address("tcp:127.0.0.1:18500", a, error));
    CHECK(error.find("`tcp:127.0.0.1:18500` is not an address: its host would be `tcp:127.0.0.1`") == 0);
    CHECK(error.find(kAddressForms) != std::string::npos);
    CHECK_FALSE(parse_listen_address("https://:18500", a, error));
    CHECK(error.find("(no `https://`") != std::string::npos);
    CHECK_FALSE(parse_listen_address("/tmp/x.sock", a, error));
    CHECK(error.find("a Unix socket is unix:PATH") != std::string::npos);
    CHECK_FALSE(parse_listen_address("unix:/" + std::string(200, 'x'), a, error));
    CHECK(error.find("bytes; at most 107 fit") != std::string::npos);
  }

  TEST_CASE("a host that does not resolve is refused at bind, saying the form is HOST:PORT") {
    BoundListeners bound;
    std::string error;
    CHECK_FALSE(bound.bind({"no-such-host.invalid:18500"}, error));
    CHECK(error.find("cannot resolve the host `no-such-host.invalid` of `no-such-host.invalid:18500`") == 0);
    CHECK(error.find("an address is HOST:PORT") != std::string::npos);
  }

  TEST_CASE("every address bound, or none kept: a failing one closes and removes the others") {
    std::string dir = temp_dir();
    std::string good = dir + "/good.sock";
    {
      BoundListeners bound;
      std::string error;
      CHECK_FALSE(bound.bind({"unix:" + good, "unix:" + dir + "/no/such/x.sock"}, error));
      CHECK(error.find("the directory " + dir + "/no/such does not exist") != std::string::npos);
      CHECK(bound.listeners().empty());
      CHECK_FALSE(exists(good));
    }
    // A port in use.
    int taken = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(taken, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(taken, 1) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(taken, reinterpret_cast<sockaddr*>(&addr), &len);
    std::string port = std::to_string(ntohs(addr.sin_port));
    {
      BoundListeners bound;
      std::string error;
      CHECK_FALSE(bound.bind({"unix:" + good, "127.0.0.1:" + port}, error));
      CHECK(error.find("cannot listen on 127.0.0.1:" + port + ": Address already in use") == 0);
      CHECK_FALSE(exists(good));
    }
    ::close(taken);
    {
      BoundListeners bound;
      std::string error;
      REQUIRE(bound.bind({"unix:" + good, ":0"}, error));
      CHECK(bound.listeners().size() == 2);
      CHECK(bound.announced()[0] == "unix:" + good);
      CHECK(bound.announced()[1].rfind("127.0.0.1:", 0) == 0);
      CHECK(exists(good));
      bound.close();
      CHECK_FALSE(exists(good));
    }
    ::rmdir(dir.c_str());
  }
}

}  // namespace
}  // namespace aup::runtime

#include "bench/retention/signals.h"

#include <doctest/doctest.h>
#include <signal.h>

namespace aup::retention {
namespace {

bool blocked(int signo) {
  sigset_t now;
  sigprocmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, signo) == 1;
}

TEST_SUITE("signals") {
  TEST_CASE("nothing pending: poll and a zero wait return 0") {
    SignalWatch w({SIGTERM, SIGINT});
    CHECK(w.poll() == 0);
    CHECK(w.wait_ns(0) == 0);
    CHECK(w.wait_ns(1000) == 0);
    CHECK(w.stop_signal() == 0);
  }

  TEST_CASE("a SIGTERM sent while watched is taken, remembered, and does not kill") {
    SignalWatch w({SIGTERM, SIGINT});
    raise(SIGTERM);
    CHECK(w.poll() == SIGTERM);
    CHECK(w.stop_signal() == SIGTERM);
    CHECK(w.poll() == 0);  // consumed: nothing left to fire when the mask is restored
    CHECK(w.stop_signal() == SIGTERM);
  }

  TEST_CASE("a watched signal ends a long wait at once") {
    SignalWatch w({SIGTERM, SIGINT});
    raise(SIGINT);
    CHECK(w.wait_ns(60'000'000'000) == SIGINT);  // would be a minute otherwise
    CHECK(w.stop_signal() == SIGINT);
  }

  TEST_CASE("SIGCHLD wakes a wait without asking to stop") {
    SignalWatch w({SIGTERM, SIGINT, SIGCHLD});
    raise(SIGCHLD);
    CHECK(w.wait_ns(60'000'000'000) == SIGCHLD);
    CHECK(w.stop_signal() == 0);
  }

  TEST_CASE("the previous mask comes back") {
    REQUIRE_FALSE(blocked(SIGTERM));
    {
      SignalWatch w({SIGTERM});
      CHECK(blocked(SIGTERM));
    }
    CHECK_FALSE(blocked(SIGTERM));
  }
}

}  // namespace
}  // namespace aup::retention

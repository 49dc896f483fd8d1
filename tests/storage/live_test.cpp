// Readers of a served store (storage/live.h): the writer's gate on
// DIR/READERS against readers' shared holds, and the live mark as a reader
// finds it. (A read of a served store end to end: store_test.cpp's "live"
// cases and tests/cli/live_replay_test.sh.)
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>
#include <string>
#include <thread>

#include "storage/io.h"
#include "storage/live.h"
#include "tests/storage/files.h"

namespace aup::storage {
namespace {

struct TempDir : files::TempDir {
  TempDir() : files::TempDir("aup-live-test") {}
};

// A store directory whose writer's gate is open (DIR/READERS made).
struct Gated {
  TempDir dir;
  SystemIo io;
  ReadersGate gate;
  Gated() { REQUIRE(gate.open(io, dir.path).ok()); }
};

TEST_SUITE("live") {
  TEST_CASE_FIXTURE(Gated, "the gate keeps readers out only while no reader reads") {
    CHECK(gate.keep_out());  // nobody reads
    gate.let_in();
    {
      LiveReader reader;
      REQUIRE(reader.attach(io, dir.path).ok());
      CHECK_FALSE(gate.keep_out());  // a reader holds READERS shared
      LiveReader second;  // readers share
      CHECK(second.attach(io, dir.path).ok());
    }
    CHECK(gate.keep_out());  // both gone
    gate.let_in();
  }

  TEST_CASE_FIXTURE(Gated, "a reader waits while the gate is shut and attaches once it opens") {
    REQUIRE(gate.keep_out());
    std::atomic<bool> attached{false};
    std::thread t([&] {
      LiveReader reader;
      CHECK(reader.attach(io, dir.path).ok());
      attached = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK_FALSE(attached.load());
    gate.let_in();
    t.join();
    CHECK(attached.load());
  }

  TEST_CASE("a store without READERS: attach says ENOENT") {
    TempDir dir;
    SystemIo io;
    LiveReader reader;
    Status st = reader.attach(io, dir.path);
    CHECK(st.err == ENOENT);
  }

  TEST_CASE_FIXTURE(Gated, "the mark reads Opening with the writer's pid, then each published save, then Closed") {
    LiveReader reader;
    REQUIRE(reader.attach(io, dir.path).ok());
    LiveMark m;
    {
      LiveMarkWriter writer;
      REQUIRE(writer.open(io, dir.path).ok());
      REQUIRE(reader.read_mark(m).ok());
      CHECK(m.state == LiveMark::State::Opening);
      CHECK(m.pid == static_cast<uint64_t>(getpid()));
      writer.publish(7, 2, 4096);
      REQUIRE(reader.read_mark(m).ok());
      CHECK(m.state == LiveMark::State::Serving);
      CHECK(m.seq == 7);
      CHECK(m.segment == 2);
      CHECK(m.end == 4096);
      writer.publish(8, 3, 136);
      REQUIRE(reader.read_mark(m).ok());
      CHECK((m.seq == 8 && m.segment == 3 && m.end == 136));
    }
    REQUIRE(reader.read_mark(m).ok());
    CHECK(m.state == LiveMark::State::Closed);
    CHECK(m.seq == 8);  // the last durable save stays readable
    // A new writer starts at Opening, so its readers never take the old mark for its own.
    LiveMarkWriter next;
    REQUIRE(next.open(io, dir.path).ok());
    REQUIRE(reader.read_mark(m).ok());
    CHECK(m.state == LiveMark::State::Opening);
  }

  TEST_CASE_FIXTURE(Gated, "a mark that is missing or not a mark is refused with its errno") {
    LiveReader reader;
    REQUIRE(reader.attach(io, dir.path).ok());
    LiveMark m;
    CHECK(reader.read_mark(m).err == ENOENT);
    std::ofstream(dir.path + "/LIVE") << "not a live mark, but as long as one: 64 bytes and a few more....";
    Status st = reader.read_mark(m);
    CHECK(st.err == EINVAL);
    CHECK(st.message == dir.path + "/LIVE is not a live mark");
    std::ofstream(dir.path + "/LIVE") << "short";
    CHECK(reader.read_mark(m).err == EINVAL);
  }

  TEST_CASE_FIXTURE(Gated, "the mark goes through the Io: a failed create or map refuses, naming the file and errno") {
    for (const char* plan : {"fail:open:1:EROFS", "fail:ftruncate:1:ENOSPC", "fail:map_shared:1:EIO"}) {
      CAPTURE(plan);
      std::vector<FaultRule> rules;
      std::string err;
      REQUIRE(parse_fault_plan(plan, rules, err));
      FaultIo faulty(std::make_unique<SystemIo>(), rules);
      LiveMarkWriter writer;
      Status st = writer.open(faulty, dir.path);
      CHECK_FALSE(st.ok());
      std::string step = std::string(plan).find("map_shared") != std::string::npos ? "map" : "create";
      CHECK(st.message.find("cannot " + step + " " + dir.path + "/LIVE: ") == 0);
      CHECK(st.err == rules[0].err);
      writer.publish(1, 0, 0);  // a writer that did not open publishes nothing, and does not crash
    }
    // A reader's map that fails refuses that read: not a live mark, not a crash.
    LiveMarkWriter writer;
    REQUIRE(writer.open(io, dir.path).ok());
    writer.publish(3, 0, 200);
    std::vector<FaultRule> rules;
    std::string err;
    REQUIRE(parse_fault_plan("fail:map_shared:1:EIO", rules, err));
    FaultIo faulty(std::make_unique<SystemIo>(), rules);
    LiveReader reader;
    REQUIRE(reader.attach(faulty, dir.path).ok());
    LiveMark m;
    Status st = reader.read_mark(m);
    CHECK(st.err == EIO);
    CHECK(st.message == "cannot map " + dir.path + "/LIVE: " + std::strerror(EIO));
    REQUIRE(reader.read_mark(m).ok());  // the next read maps it
    CHECK(m.seq == 3);
  }

  TEST_CASE_FIXTURE(Gated, "a reader never takes one update's save with another's segment and byte") {
    LiveMarkWriter writer;
    REQUIRE(writer.open(io, dir.path).ok());
    writer.publish(0, 0, 0);
    std::atomic<bool> stop{false};
    // Every update keeps segment = seq / 10 and end = seq * 8: a torn read breaks it.
    std::thread w([&] {
      for (uint64_t seq = 1; !stop; ++seq) writer.publish(seq, seq / 10, seq * 8);
    });
    LiveReader reader;
    REQUIRE(reader.attach(io, dir.path).ok());
    bool consistent = true;
    uint64_t last = 0;
    for (int i = 0; i < 20000 && consistent; ++i) {
      LiveMark m;
      REQUIRE(reader.read_mark(m).ok());
      consistent = m.segment == m.seq / 10 && m.end == m.seq * 8 && m.seq >= last;
      last = m.seq;
    }
    stop = true;
    w.join();
    CHECK(consistent);
    CHECK(last > 0);
  }
}

}  // namespace
}  // namespace aup::storage

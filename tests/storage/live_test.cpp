// Readers of a served store (storage/live.h): the writer's gate on
// DIR/READERS against readers' shared holds, and the live mark as a reader
// finds it; and where a reader's read of the log ends: exactly at the mark,
// as `aup replay` reads (runtime/replay.cpp). (A read of a served store end
// to end: store_test.cpp's "live" cases and tests/runtime/replay_live_test.py.)
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>
#include <string>
#include <thread>
#include <vector>

#include "storage/codec.h"
#include "storage/io.h"
#include "storage/live.h"
#include "storage/log.h"
#include "storage/memory_tables.h"
#include "storage/recovery.h"
#include "storage/schema_file.h"
#include "tests/storage/files.h"

namespace aup::storage {
namespace {

using files::TempDir;

// A store directory whose writer's gate is open (DIR/READERS made).
struct Gated {
  TempDir dir;
  SystemIo io;
  ReadersGate gate;
  Gated() { REQUIRE(gate.open(io, dir.path).ok()); }
};

// A served store as its writer leaves it between commits: DIR/LOCK held
// (by this process, on its own descriptor, as `aup run` holds it), a
// schema of one var, n, and the log in 4 KiB segments, each entry setting
// n to its save number; the live mark published after each entry made
// durable, as Store::commit publishes it.
struct Served : Gated {
  int lock_fd = -1;
  std::unique_ptr<Log> log;
  LiveMarkWriter mark;
  Served() {
    std::string holder;
    lock_fd = io.lock(dir.path + "/LOCK", /*exclusive=*/true, holder);
    REQUIRE(lock_fd >= 0);
    Schema s;
    s.vars.push_back(VarSchema{"n", FieldType::Num, {}});
    REQUIRE(write_schema_file(io, dir.path, s).ok());
    Log::Options o;
    o.segment_bytes = 4096;
    LogOpenReport r;
    REQUIRE(Log::open(io, dir.path, o, [](const LogEntry&) { return Status::good(); }, log, r).ok());
    REQUIRE(mark.open(io, dir.path).ok());
  }
  ~Served() {
    log.reset();
    io.close(lock_fd);
  }
  Served(const Served&) = delete;
  Served& operator=(const Served&) = delete;
  // Entry `seq` written after the last, neither synced nor published: an
  // entry the writer is in the middle of committing.
  void write(uint64_t seq) {
    std::vector<uint8_t> payload;
    Encoder e(payload);
    e.varint(0);  // the vars
    e.varint(1);
    e.varint(0);  // var 0, n
    e.num(static_cast<double>(seq));
    REQUIRE(log->append(seq, payload).ok());
  }
  void commit(uint64_t seq) {
    write(seq);
    REQUIRE(log->sync().ok());
    mark.publish(seq, log->end().segment, log->end().offset);
  }
};

// The served store read as `aup replay` reads it (runtime/replay.cpp): as
// a reader, the images first, then the mark, then the log cut at it.
struct ReadServed : RecoveryReporter {
  std::string seqs;  // the entries read, in order: "1 2 3"
  double n = -1;     // the var after them
  uint64_t mark_seq = 0;
  void entry(const LogEntry& e, const PayloadSummary*) override {
    seqs += (seqs.empty() ? "" : " ") + std::to_string(e.seq);
  }

  explicit ReadServed(Served& s) {
    ReadAccess access(s.io);
    REQUIRE(access.take(s.dir.path).ok());
    REQUIRE(access.live());
    RecoveryOptions ro;
    ro.log.read_only = true;
    Recovery recovery(s.io, s.dir.path, ro, *this);
    Schema stored;
    REQUIRE(recovery.read_schema(stored).ok());
    MemoryTables tables(stored);
    REQUIRE(recovery.load_images(stored, stored, tables).ok());
    LiveMark m;
    REQUIRE(access.cut(m).ok());
    mark_seq = m.seq;
    recovery.cut_log_at(m.segment, m.end);
    Status st = recovery.read_log();
    REQUIRE_MESSAGE(st.ok(), st.message);
    n = std::bit_cast<double>(tables.var(0));
  }
};

// Saves from..to as ReadServed::seqs lists them.
std::string saves(uint64_t from, uint64_t to) {
  std::string out;
  for (uint64_t s = from; s <= to; ++s) out += (out.empty() ? "" : " ") + std::to_string(s);
  return out;
}

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

  // The cut is the mark's byte (Log::Options::cut_end): an entry that
  // starts there is past it, one that ends there is before it. Moved by
  // a byte or an entry, a reader either takes a save that may never be
  // durable or loses the newest one it was told of.
  TEST_CASE("a reader reads exactly up to the mark: not the entry being written just past it, not one short") {
    Served s;
    for (uint64_t seq = 1; seq <= 3; ++seq) s.commit(seq);
    s.write(4);  // written, not synced, not published
    {
      ReadServed r(s);
      CHECK(r.mark_seq == 3);
      CHECK(r.seqs == saves(1, 3));
      CHECK(r.n == 3.0);
    }
    // Once synced, still not published: still past the cut.
    REQUIRE(s.log->sync().ok());
    {
      ReadServed r(s);
      CHECK(r.seqs == saves(1, 3));
      CHECK(r.n == 3.0);
    }
    s.mark.publish(4, s.log->end().segment, s.log->end().offset);
    ReadServed r(s);
    CHECK(r.seqs == saves(1, 4));
    CHECK(r.n == 4.0);
  }

  TEST_CASE("a mark at the end of a full segment: the entry that starts the next segment is not read") {
    Served s;
    uint64_t seq = 1;
    for (;; ++seq) {
      s.write(seq);
      REQUIRE(s.log->sync().ok());
      if (s.log->end().segment != 0) break;  // it started log-1: not published
      s.mark.publish(seq, s.log->end().segment, s.log->end().offset);
    }
    REQUIRE(s.log->segments().size() == 2);
    REQUIRE(s.log->segments()[0].last_seq == seq - 1);
    ReadServed r(s);
    CHECK(r.mark_seq == seq - 1);
    CHECK(r.seqs == saves(1, seq - 1));
    CHECK(r.n == static_cast<double>(seq - 1));
    s.mark.publish(seq, s.log->end().segment, s.log->end().offset);
    ReadServed next(s);
    CHECK(next.seqs == saves(1, seq));
  }
}

}  // namespace
}  // namespace aup::storage

// A store's copy received by a replica (storage/copy.h): verified, then
// installed over the replica's own store at its next open, whatever crash
// comes in between. (The copy's bytes themselves: backup_test.cpp.)
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "storage/copy.h"
#include "storage/store.h"
#include "tests/storage/files.h"
#include "tests/storage/items.h"

namespace aup::storage {
namespace {

namespace fs = std::filesystem;
using files::TempDir;

StoreOptions small() {
  StoreOptions o;
  o.segment_bytes = 4096;
  o.image_min_bytes = 512;
  o.log_min_bytes = 2048;
  o.background = false;
  return o;
}

// `batches` batches of puts of ids from `base`; the rows at the end.
std::string write_store(Io& io, const std::string& dir, int batches, int base) {
  Writer w(io, dir, small());
  for (int b = 0; b < batches; ++b) {
    for (int k = 0; k < 8; ++k) w.put(base + (b * 8 + k) % 40, b);
    w.commit();
  }
  return w.rows();
}

std::set<std::string> log_files(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind("log-", 0) == 0) out.insert(n);
  }
  return out;
}

// The source's copy received into the replica's directory, up to DIR/copy.
CopyReport receive(Io& io, const std::string& source, const std::string& replica) {
  std::string partial;
  Status st = begin_received_copy(io, replica, partial);
  REQUIRE_MESSAGE(st.ok(), st.message);
  CopyReport report;
  {
    DirSink sink(io, partial);
    st = copy_store(io, source, sink, report, nullptr);
    REQUIRE_MESSAGE(st.ok(), st.message);
  }
  return report;
}

int in_child(const std::string& plan, const std::function<int(Io&)>& f) {
  std::fflush(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (!std::freopen("/dev/null", "w", stderr)) std::_Exit(4);
    std::vector<FaultRule> rules;
    std::string err;
    if (!parse_fault_plan(plan, rules, err)) std::_Exit(3);
    FaultIo io(std::make_unique<SystemIo>(), rules);
    try {
      std::_Exit(f(io));
    } catch (...) {
      std::_Exit(1);
    }
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Stores {
  TempDir dir;
  std::string source = dir.path + "/primary", replica = dir.path + "/replica";
  std::string source_rows, replica_rows;
  Stores(Io& io) {
    source_rows = write_store(io, source, 20, 0);
    replica_rows = write_store(io, replica, 45, 100);  // more segments than the source's
    files::write(replica + "/replica-of", "unix:p.sock\n");
    files::write(replica + "/cut-3-4", "kept");
  }
};

TEST_SUITE("copy") {
  TEST_CASE("a received copy replaces the replica's store at its next open; its own files stay") {
    SystemIo io;
    Stores s(io);
    CopyReport report = receive(io, s.source, s.replica);
    Status st = end_received_copy(io, s.replica, report.seq);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CHECK(fs::exists(s.replica + "/copy/MANIFEST"));
    CHECK_FALSE(fs::exists(s.replica + "/copy.partial"));
    {
      Writer w(io, s.replica, small());
      CHECK(w.report().copy_installed);
      CHECK(w.store().last_seq() == report.seq);
      CHECK(w.rows() == s.source_rows);
    }
    CHECK(log_files(s.replica) == log_files(s.source));
    CHECK_FALSE(fs::exists(s.replica + "/copy"));
    CHECK(files::contents(s.replica + "/replica-of") == "unix:p.sock\n");
    CHECK(files::contents(s.replica + "/cut-3-4") == "kept");
    Writer again(io, s.replica, small());
    CHECK_FALSE(again.report().copy_installed);
    CHECK(again.rows() == s.source_rows);
  }

  TEST_CASE("a received copy that does not hold the save it was sent for is refused, and nothing installed") {
    SystemIo io;
    Stores s(io);
    CopyReport report = receive(io, s.source, s.replica);
    Status st = end_received_copy(io, s.replica, report.seq + 1);
    REQUIRE_FALSE(st.ok());
    CHECK(st.message == fmt::format("the copy holds save {}, not save {} it was cut at", report.seq, report.seq + 1));
    CHECK_FALSE(fs::exists(s.replica + "/copy"));
    Writer w(io, s.replica, small());
    CHECK_FALSE(w.report().copy_installed);
    CHECK(w.rows() == s.replica_rows);
    CHECK_FALSE(fs::exists(s.replica + "/copy.partial"));  // the open removed it
  }

  TEST_CASE("a crash before the received copy is renamed into place: the replica keeps its own store") {
    SystemIo io;
    Stores s(io);
    CopyReport report = receive(io, s.source, s.replica);
    CHECK(in_child("crash:copy.received:1",
                   [&](Io& fio) { return end_received_copy(fio, s.replica, report.seq).ok() ? 0 : 2; }) ==
          kCrashExitCode);
    Writer w(io, s.replica, small());
    CHECK_FALSE(w.report().copy_installed);
    CHECK(w.rows() == s.replica_rows);
  }

  TEST_CASE("a crash at any rename or removal while a copy is installed: the next open installs the rest") {
    for (const char* call : {"rename", "unlink", "copy.moved"}) {
      for (int n = 1;; ++n) {
        CAPTURE(call);
        CAPTURE(n);
        SystemIo io;
        Stores s(io);
        CopyReport report = receive(io, s.source, s.replica);
        REQUIRE(end_received_copy(io, s.replica, report.seq).ok());
        int rc = in_child(fmt::format("crash:{}:{}", call, n), [&](Io& fio) {
          Writer w(fio, s.replica, small());
          return 0;
        });
        REQUIRE((rc == kCrashExitCode || rc == 0));
        Writer w(io, s.replica, small());
        CHECK(w.rows() == s.source_rows);
        CHECK(w.store().last_seq() == report.seq);
        CHECK(files::contents(s.replica + "/replica-of") == "unix:p.sock\n");
        if (rc == 0) break;  // the whole open ran: every step was crashed at
      }
    }
  }
}

}  // namespace
}  // namespace aup::storage

// Cutting a store's log back to a save (storage/cut.h): the entries after
// it kept in a side file, the store opening as of that save, refused
// where an image covers a later one, and every crash along the way.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "storage/cut.h"
#include "storage/store.h"
#include "tests/storage/files.h"
#include "tests/storage/items.h"
#include "vm/bytes.h"

namespace aup::storage {
namespace {

namespace fs = std::filesystem;
using files::TempDir;

// Small segments, no checkpoint after the first images: the cut may reach
// back over several segments.
StoreOptions no_checkpoints() {
  StoreOptions o;
  o.segment_bytes = 4096;
  o.image_min_bytes = uint64_t{1} << 30;
  o.log_min_bytes = uint64_t{1} << 30;
  o.background = false;
  return o;
}

// A store of `batches` batches (the first in term 1), and the rows after
// each save: rows[s] is the state at save s.
std::vector<std::string> write_store(Io& io, const std::string& dir, int batches, StoreOptions o = no_checkpoints()) {
  Writer w(io, dir, o);
  std::vector<std::string> rows(w.store().last_seq() + 1, w.rows());
  REQUIRE(w.store().begin_term(1).ok());
  rows.push_back(w.rows());
  for (int b = 0; b < batches; ++b) {
    for (int k = 0; k < 16; ++k) w.put((b * 16 + k) % 50, b + 0.5);  // 0.5: eight bytes a value
    w.commit();
    REQUIRE(w.store().last_seq() == rows.size());
    rows.push_back(w.rows());
  }
  return rows;
}

struct SideEntry {
  uint32_t term;
  uint64_t seq, prev;
  bool digest_ok;
};

// The side file's entries, as cut.h lays them out.
std::vector<SideEntry> read_side(const std::string& path) {
  std::string bytes = files::contents(path);
  REQUIRE(bytes.size() >= 8);
  REQUIRE(bytes.compare(0, 8, std::string("aupcut1\0", 8)) == 0);
  std::vector<SideEntry> out;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  for (size_t at = 8; at < bytes.size();) {
    REQUIRE(at + 32 <= bytes.size());
    uint32_t len = bytes::get_u32(p + at);
    REQUIRE(at + 32 + len <= bytes.size());
    out.push_back(SideEntry{bytes::get_u32(p + at + 4), bytes::get_u64(p + at + 8), bytes::get_u64(p + at + 16),
                            XXH3_64bits(p + at + 32, len) == bytes::get_u64(p + at + 24)});
    at += (32 + len + 7) / 8 * 8;
  }
  return out;
}

// Runs `f` in a child process, which a crash rule stops; its exit code.
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

size_t segments(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename().string().rfind("log-", 0) == 0;
  return n;
}

int prepare_in(Io& io, const std::string& dir, uint64_t after) {
  Writer w(io, dir, no_checkpoints());
  CutPrepared cut;
  return w.store().cut_after(after, cut).ok() ? 0 : 2;
}

TEST_SUITE("cut") {
  TEST_CASE("a cut keeps the entries up to the save, the rest in its side file; the store opens as of that save") {
    TempDir dir;
    SystemIo io;
    std::string d = dir.path + "/store";
    std::vector<std::string> rows = write_store(io, d, 40);
    uint64_t last = rows.size() - 1, keep = last - 25;
    CutPrepared cut;
    {
      Writer w(io, d, no_checkpoints());
      REQUIRE(segments(d) > 2);  // the cut reaches back over segments
      Status st = w.store().cut_after(keep, cut);
      REQUIRE_MESSAGE(st.ok(), st.message);
      CHECK(w.store().unavailable());
      CHECK(cut.first == keep + 1);
      CHECK(cut.last == last);
      CHECK(cut.side_file == fmt::format("{}/cut-{}-{}", d, keep + 1, last));
      CHECK(fs::exists(d + "/cut"));
    }
    std::vector<SideEntry> side = read_side(cut.side_file);
    REQUIRE(side.size() == last - keep);
    for (size_t i = 0; i < side.size(); ++i) {
      CHECK(side[i].seq == keep + 1 + i);
      CHECK(side[i].prev == keep + i);
      CHECK(side[i].term == 1);
      CHECK(side[i].digest_ok);
    }
    {
      Writer w(io, d, no_checkpoints());
      CHECK(w.report().cut_after == keep);
      CHECK(w.store().last_seq() == keep);
      CHECK(w.rows() == rows[keep]);
      CHECK_FALSE(fs::exists(d + "/cut"));
      // The log goes on from the save kept, and reads back.
      w.put(1000, 1);
      w.commit();
      CHECK(w.store().last_seq() == keep + 1);
    }
    Writer again(io, d, no_checkpoints());
    CHECK(again.report().cut_after == UINT64_MAX);
    CHECK(again.store().last_seq() == keep + 1);
    CHECK(again.rows().find("1000=1;") != std::string::npos);
    CHECK(files::contents(cut.side_file).size() > 8);  // the side file stays
  }

  TEST_CASE("a cut after the last save cuts nothing and writes nothing") {
    TempDir dir;
    SystemIo io;
    std::string d = dir.path + "/store";
    std::vector<std::string> rows = write_store(io, d, 5);
    Writer w(io, d, no_checkpoints());
    CutPrepared cut;
    REQUIRE(w.store().cut_after(rows.size() - 1, cut).ok());
    CHECK(cut.first == 0);
    CHECK(cut.side_file.empty());
    CHECK_FALSE(fs::exists(d + "/cut"));
  }

  TEST_CASE("a cut is refused (ERANGE) when an image covers a later save, and changes nothing") {
    TempDir dir;
    SystemIo io;
    std::string d = dir.path + "/store";
    StoreOptions o = no_checkpoints();
    o.image_min_bytes = 256;
    o.log_min_bytes = 512;
    std::vector<std::string> rows = write_store(io, d, 40, o);
    Writer w(io, d, o);
    CutPrepared cut;
    Status st = w.store().cut_after(3, cut);
    REQUIRE_FALSE(st.ok());
    CHECK(st.err == ERANGE);
    CHECK(st.message.find("a copy of the primary's store must replace it") != std::string::npos);
    CHECK_FALSE(w.store().unavailable());
    CHECK_FALSE(fs::exists(d + "/cut"));
    CHECK(w.rows() == rows.back());
  }

  TEST_CASE("a crash before the marker is durable leaves the store as it was; after it, the next open cuts") {
    for (const char* point : {"cut.side_written", "cut.marked"}) {
      CAPTURE(point);
      TempDir dir;
      SystemIo io;
      std::string d = dir.path + "/store";
      std::vector<std::string> rows = write_store(io, d, 30);
      uint64_t keep = rows.size() - 12;
      CHECK(in_child(fmt::format("crash:{}:1", point), [&](Io& fio) { return prepare_in(fio, d, keep); }) ==
            kCrashExitCode);
      Writer w(io, d, no_checkpoints());
      bool marked = std::string(point) == "cut.marked";
      CHECK(w.store().last_seq() == (marked ? keep : rows.size() - 1));
      CHECK(w.rows() == (marked ? rows[keep] : rows.back()));
    }
  }

  TEST_CASE("a crash while the open zeroes the cut entries: the next open zeroes again and opens as cut") {
    TempDir dir;
    SystemIo io;
    std::string d = dir.path + "/store";
    std::vector<std::string> rows = write_store(io, d, 40);
    uint64_t keep = rows.size() - 30;
    REQUIRE(prepare_in(io, d, keep) == 0);
    // At least two segments to zero: stopped after the first.
    CHECK(in_child("crash:cut.zeroed:1", [&](Io& fio) {
            Writer w(fio, d, no_checkpoints());
            return 0;
          }) == kCrashExitCode);
    REQUIRE(fs::exists(d + "/cut"));
    Writer w(io, d, no_checkpoints());
    CHECK(w.report().cut_after == keep);
    CHECK(w.store().last_seq() == keep);
    CHECK(w.rows() == rows[keep]);
  }

  TEST_CASE("a damaged marker refuses the open, naming it") {
    TempDir dir;
    SystemIo io;
    std::string d = dir.path + "/store";
    write_store(io, d, 3);
    for (const char* bad : {"", "after x\n", "after 3\nlog-1 10 20\n", "after 3\nlog-1 900 800\n", "after 3"}) {
      CAPTURE(bad);
      files::write(d + "/cut", bad);
      MemoryTables tables(items_schema());
      std::unique_ptr<Store> store;
      StoreOpenReport report;
      Status st = Store::open(io, d, items_schema(), no_checkpoints(), tables, store, report, nullptr);
      REQUIRE_FALSE(st.ok());
      CHECK(st.message == d + "/cut is damaged: a cut in progress is `after SAVE` and lines `log-N FROM TO`; "
                              "refusing to open");
    }
  }
}

}  // namespace
}  // namespace aup::storage

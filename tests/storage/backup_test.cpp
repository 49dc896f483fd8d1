// Backing up (storage/backup.h) a store no aup serves: each log segment is
// copied up to where its entries end and no further, the rest of the copy
// allocated and zero, and the copy opens and verifies. (A backup beside a
// running server: store_test.cpp's "backup" case and tests/cli/backup_test.py.)
// Stores are written here through Store itself, without a module: rows of
// one table put in batches, checkpoints in the foreground.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <bit>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "storage/backup.h"
#include "storage/log.h"
#include "storage/memory_tables.h"
#include "storage/recovery.h"
#include "storage/store.h"
#include "tests/storage/files.h"
#include "tests/storage/items.h"
#include "vm/key.h"

namespace aup::storage {
namespace {

namespace fs = std::filesystem;

using files::TempDir;

// The log's chain as a reader finds it.
std::vector<Log::Segment> chain_of(Io& io, const std::string& dir) {
  Log::Options o;
  o.read_only = true;
  std::unique_ptr<Log> log;
  LogOpenReport report;
  REQUIRE(Log::open(io, dir, o, [](const LogEntry&) { return Status::good(); }, log, report).ok());
  std::vector<Log::Segment> chain = log->segments();
  for (Log::Segment& s : chain) s.fd = -1;  // the log closes them
  return chain;
}

bool all_zero(std::string_view bytes) { return bytes.find_first_not_of('\0') == std::string_view::npos; }

TEST_SUITE("backup") {
  TEST_CASE("a stopped store: each segment copied up to the end of its entries, the rest zero, and the copy opens") {
    TempDir dir;
    SystemIo io;
    std::string src = dir.path + "/store", to = dir.path + "/copy";
    StoreOptions o;
    o.segment_bytes = 4096;
    o.image_min_bytes = 512;
    o.log_min_bytes = 2048;
    o.background = false;
    uint64_t last_seq = 0;
    {
      // Batches of 12 puts over 90 rows: segments fill, checkpoints
      // release them, and released ones are reused, so their bytes past
      // the entries are a former life's entries, not zeros.
      Writer w(io, src, o);
      for (int b = 0; b < 80; ++b) {
        for (int k = 0; k < 12; ++k) w.put((b * 12 + k) % 90, b);
        w.commit();
      }
      last_seq = w.store().last_seq();
    }
    std::vector<Log::Segment> chain = chain_of(io, src);
    REQUIRE_FALSE(chain.empty());
    bool stale = false;  // a segment holding nonzero bytes past its entries
    for (const Log::Segment& s : chain) {
      REQUIRE(s.used < s.size);  // preallocated past its entries
      std::string bytes = files::contents(fmt::format("{}/log-{}", src, s.number));
      REQUIRE(bytes.size() == s.size);
      stale = stale || !all_zero(std::string_view(bytes).substr(s.used));
    }
    REQUIRE(stale);  // else a whole segment copied would look the same

    BackupReport report;
    Status st = backup(io, src, to, report, nullptr);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CHECK_FALSE(report.live);
    CHECK(report.seq == last_seq);
    // Bytes copied: the schema file and the images whole, each segment up
    // to where its entries end.
    uint64_t want = 0;
    for (const auto& e : fs::directory_iterator(src)) {
      std::string name = e.path().filename().string();
      if (name == "schema" || name.rfind("image", 0) == 0) want += fs::file_size(e.path());
    }
    for (const Log::Segment& s : chain) want += s.used;
    CHECK(report.bytes == want);
    for (const Log::Segment& s : chain) {
      std::string name = fmt::format("log-{}", s.number);
      std::string copy = files::contents(to + "/" + name), source = files::contents(src + "/" + name);
      CAPTURE(name);
      REQUIRE(copy.size() == s.size);  // allocated whole, like every segment
      CHECK(copy.substr(0, s.used) == source.substr(0, s.used));
      CHECK(all_zero(std::string_view(copy).substr(s.used)));
    }
    // The copy verifies (backup did) and opens as a store, at the same save.
    Writer restored(io, to, o);
    CHECK(restored.store().last_seq() == last_seq);
  }
}

}  // namespace
}  // namespace aup::storage

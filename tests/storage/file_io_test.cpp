// A store's whole files (storage/file_io.h): read_file and
// write_file_durably, the one pair every file of the store is read and
// replaced through, and the steps they are made of.
#include <doctest/doctest.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/file_io.h"
#include "storage/io.h"
#include "tests/storage/files.h"

namespace aup::storage {
namespace {

struct FilesDir : files::TempDir {
  FilesDir() : files::TempDir("aup-files-test") {}
};

FaultIo faulty(const char* plan) {
  std::vector<FaultRule> rules;
  std::string err;
  REQUIRE_MESSAGE(parse_fault_plan(plan, rules, err), err);
  return FaultIo(std::make_unique<SystemIo>(), rules);
}

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// The named points a durable write passes, in order.
struct PointLog : SystemIo {
  std::vector<std::string> seen;
  void point(std::string_view name) override { seen.emplace_back(name); }
};

constexpr DurablePoints kPoints{"t.before_fsync", "t.before_rename", "t.after_rename", "t.after_dir_sync"};

TEST_SUITE("file_io") {
  TEST_CASE("read_file reads a whole file; a missing one is ENOENT, a failed read its errno") {
    FilesDir dir;
    SystemIo io;
    std::string path = dir.path + "/f";
    std::vector<uint8_t> out;
    Status st = read_file(io, path, out);
    CHECK(st.err == ENOENT);
    CHECK(st.message == "cannot open " + path + ": " + std::strerror(ENOENT));
    std::string big(3 << 20, 'x');  // several reads' worth
    big[12345] = 'y';
    std::ofstream(path) << big;
    REQUIRE(read_file(io, path, out).ok());
    CHECK(std::string(out.begin(), out.end()) == big);
    std::ofstream(path).close();  // empty
    REQUIRE(read_file(io, path, out).ok());
    CHECK(out.empty());
    std::ofstream(path) << "abc";
    FaultIo failing = faulty("fail:pread:1:EIO");
    st = read_file(failing, path, out);
    CHECK(st.err == EIO);
    CHECK(st.message == "cannot read " + path + ": " + std::strerror(EIO));
  }

  TEST_CASE("read_at stops at the file's end and says how many bytes came") {
    FilesDir dir;
    SystemIo io;
    std::string path = dir.path + "/f";
    std::ofstream(path) << "0123456789";
    int fd = io.open(path, O_RDONLY, 0);
    REQUIRE(fd >= 0);
    char buf[16] = {};
    size_t got = 0;
    REQUIRE(read_at(io, fd, buf, sizeof buf, 4, path, got).ok());
    CHECK(got == 6);
    CHECK(std::string(buf, got) == "456789");
    io.close(fd);
  }

  TEST_CASE("write_file_durably replaces the file through NAME.new, passing each named point in order") {
    FilesDir dir;
    PointLog io;
    std::string path = dir.path + "/f";
    std::ofstream(path) << "old";
    REQUIRE(write_file_durably(io, dir.path, "f", bytes_of("new contents"), DurableWrite{kPoints, {}}).ok());
    CHECK(files::contents(path) == "new contents");
    CHECK_FALSE(std::filesystem::exists(path + ".new"));
    CHECK(io.seen == std::vector<std::string>{"t.before_fsync", "t.before_rename", "t.after_rename",
                                              "t.after_dir_sync"});
  }

  TEST_CASE("a file too large to hold whole writes itself (fill), and its failure is the write's") {
    FilesDir dir;
    SystemIo io;
    auto fill = [&](int fd, const std::string& tmp) {
      for (int i = 0; i < 3; ++i) {
        Status st = write_all(io, fd, "step", 4, static_cast<uint64_t>(4 * i), tmp);
        if (!st.ok()) return st;
      }
      return Status::good();
    };
    REQUIRE(write_file_durably(io, dir.path, "f", {}, DurableWrite{kPoints, fill}).ok());
    CHECK(files::contents(dir.path + "/f") == "stepstepstep");
    auto refuse = [](int, const std::string& tmp) { return Status::error("cannot write " + tmp + ": no", ENOSPC); };
    Status st = write_file_durably(io, dir.path, "f", {}, DurableWrite{kPoints, refuse});
    CHECK(st.err == ENOSPC);
    CHECK(files::contents(dir.path + "/f") == "stepstepstep");  // the old file stays
  }

  TEST_CASE("a failed step leaves the old file and names the operation; a short write is completed") {
    FilesDir dir;
    std::string path = dir.path + "/f";
    struct Case {
      const char* plan;
      std::string said;
    } cases[] = {
        {"fail:open:1:EROFS", "cannot create " + path + ".new: "},
        {"fail:pwrite:1:ENOSPC", "cannot write " + path + ".new: "},
        {"fail:fsync:1:EIO", "cannot sync " + path + ".new: "},
        {"fail:rename:1:EIO", "cannot rename " + path + ".new to " + path + ": "},
    };
    for (const Case& c : cases) {
      CAPTURE(c.plan);
      std::ofstream(path) << "old";
      FaultIo io = faulty(c.plan);
      Status st = write_file_durably(io, dir.path, "f", bytes_of("new"), DurableWrite{kPoints, {}});
      CHECK(st.message.find(c.said) == 0);
      CHECK(files::contents(path) == "old");
      CHECK_FALSE(std::filesystem::exists(path + ".new"));  // removed: it gives its space back
    }
    // The directory's sync fails after the rename: the new file is in place
    // but not known durable, and the write says so.
    FaultIo late = faulty("fail:fsync:2:EIO");
    Status st = write_file_durably(late, dir.path, "f", bytes_of("new"), DurableWrite{kPoints, {}});
    CHECK(st.message == "cannot sync the directory " + dir.path + ": " + std::strerror(EIO));
    FaultIo half = faulty("short:pwrite:1");
    REQUIRE(write_file_durably(half, dir.path, "f", bytes_of("written in two"), DurableWrite{kPoints, {}}).ok());
    CHECK(files::contents(path) == "written in two");
  }

  TEST_CASE("is_leftover: the NAME.new of the store's own files, and nothing else") {
    for (const char* name : {"image-items.new", "image.vars.new", "image-$keys.new", "schema.new", "terms.new",
                             "replica-of.new", "cut.new", "cut-5-9.new"}) {
      CAPTURE(name);
      CHECK(is_leftover(name));
    }
    for (const char* name : {"image-items", "schema", "log-3", "LOCK", "notes.new", ".new", "image-.new", "cut-.new",
                             "schema.new.old", "copy.partial", "log-3.new"}) {
      CAPTURE(name);
      CHECK_FALSE(is_leftover(name));
    }
  }
}

}  // namespace
}  // namespace aup::storage

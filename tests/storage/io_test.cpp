// The store's system calls (storage/io.h): the directory listing and the
// lock that SystemIo makes, and fault plans, which FaultIo follows for
// every call of Io.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "storage/io.h"
#include "tests/storage/files.h"

namespace aup::storage {
namespace {

using files::TempDir;

FaultIo faulty(const char* plan) {
  std::vector<FaultRule> rules;
  std::string err;
  REQUIRE_MESSAGE(parse_fault_plan(plan, rules, err), err);
  return FaultIo(std::make_unique<SystemIo>(), rules);
}

TEST_SUITE("io") {
  TEST_CASE("list_dir gives every name but . and .., and the errno of a directory that is not there") {
    TempDir dir;
    SystemIo io;
    std::ofstream(dir.path + "/log-0").put('x');
    std::ofstream(dir.path + "/schema").put('x');
    std::vector<std::string> names;
    REQUIRE(io.list_dir(dir.path, names) == 0);
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"log-0", "schema"});
    names.clear();
    CHECK(io.list_dir(dir.path + "/none", names) == -ENOENT);
  }

  TEST_CASE("an exclusive lock keeps out a second writer and every reader, naming its pid") {
    TempDir dir;
    SystemIo io;
    std::string path = dir.path + "/LOCK";
    std::string holder;
    CHECK(io.lock(path, false, holder) == -ENOENT);  // a reader does not create the file
    int writer = io.lock(path, true, holder);
    REQUIRE(writer >= 0);
    CHECK(files::contents(path) == std::to_string(getpid()));
    // flock locks belong to the open file, so a second open in this
    // process is kept out as another process would be.
    CHECK(io.lock(path, true, holder) == -EWOULDBLOCK);
    CHECK(holder == std::to_string(getpid()));
    holder.clear();
    CHECK(io.lock(path, false, holder) == -EWOULDBLOCK);
    CHECK(holder == std::to_string(getpid()));
    io.close(writer);
    int reader = io.lock(path, false, holder);
    REQUIRE(reader >= 0);
    int second_reader = io.lock(path, false, holder);
    CHECK(second_reader >= 0);
    CHECK(io.lock(path, true, holder) == -EWOULDBLOCK);  // readers keep out a writer
    io.close(second_reader);
    io.close(reader);
  }

  TEST_CASE("a fault plan fails the Nth list_dir and lock like any other call") {
    TempDir dir;
    FaultIo io = faulty("fail:list_dir:2:EIO,fail:lock:1:EROFS");
    std::vector<std::string> names;
    CHECK(io.list_dir(dir.path, names) == 0);
    CHECK(io.list_dir(dir.path, names) == -EIO);
    CHECK(io.list_dir(dir.path, names) == 0);
    std::string holder;
    CHECK(io.lock(dir.path + "/LOCK", true, holder) == -EROFS);
    int fd = io.lock(dir.path + "/LOCK", true, holder);
    CHECK(fd >= 0);
    io.close(fd);
  }

  TEST_CASE("mkdir and rmdir, and a mapping shared with the file that outlives its descriptor") {
    TempDir dir;
    SystemIo io;
    std::string sub = dir.path + "/sub";
    CHECK(io.mkdir(sub, 0755) == 0);
    CHECK(io.mkdir(sub, 0755) == -EEXIST);
    CHECK(io.rmdir(sub) == 0);
    CHECK(io.rmdir(sub) == -ENOENT);
    std::string path = dir.path + "/LIVE";
    int fd = io.open(path, O_RDWR | O_CREAT, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(io.ftruncate(fd, 64) == 0);
    void* m = nullptr;
    REQUIRE(io.map_shared(fd, 64, /*writable=*/true, m) == 0);
    io.close(fd);
    std::memcpy(m, "mapped", 6);  // stores reach the file, through the page cache
    CHECK(files::contents(path).substr(0, 6) == "mapped");
    CHECK(io.unmap(m, 64) == 0);
    int ro = io.open(path, O_RDONLY, 0);
    REQUIRE(ro >= 0);
    void* r = nullptr;
    CHECK(io.map_shared(ro, 64, /*writable=*/true, r) == -EACCES);  // read-only descriptor
    REQUIRE(io.map_shared(ro, 64, /*writable=*/false, r) == 0);
    CHECK(std::memcmp(r, "mapped", 6) == 0);
    io.unmap(r, 64);
    io.close(ro);
  }

  TEST_CASE("a fault plan fails the Nth mkdir, rmdir and map_shared by name") {
    TempDir dir;
    FaultIo io = faulty("fail:mkdir:1:EROFS,fail:rmdir:1:EIO,fail:map_shared:1:ENOSPC");
    std::string sub = dir.path + "/sub";
    CHECK(io.mkdir(sub, 0755) == -EROFS);
    CHECK(io.mkdir(sub, 0755) == 0);
    CHECK(io.rmdir(sub) == -EIO);
    CHECK(io.rmdir(sub) == 0);
    int fd = io.open(dir.path + "/f", O_RDWR | O_CREAT, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(io.ftruncate(fd, 64) == 0);
    void* m = nullptr;
    CHECK(io.map_shared(fd, 64, true, m) == -ENOSPC);
    REQUIRE(io.map_shared(fd, 64, true, m) == 0);
    CHECK(io.unmap(m, 64) == 0);  // never failed: nothing a test could see
    io.close(fd);
  }

  TEST_CASE("fault plans parse, and malformed ones are refused") {
    std::vector<FaultRule> rules;
    std::string err;
    CHECK(parse_fault_plan("crash:commit.after_write:3,fail:fdatasync:2:ENOSPC,short:pwrite:1", rules, err));
    REQUIRE(rules.size() == 3);
    CHECK(rules[0].action == FaultRule::Action::Crash);
    CHECK(rules[1].err == ENOSPC);
    CHECK(parse_fault_plan("fail:list_dir:1:EIO,fail:lock:1:5", rules, err));
    CHECK(rules.back().err == EIO);
    CHECK(parse_fault_plan("fail:mkdir:1:EROFS,fail:rmdir:2:EIO,fail:map_shared:1:12", rules, err));
    CHECK(rules.back().err == ENOMEM);
    CHECK_FALSE(parse_fault_plan("fail:unmap:1:EIO", rules, err));
    CHECK_FALSE(parse_fault_plan("explode:x:1", rules, err));
    CHECK_FALSE(parse_fault_plan("fail:x:0", rules, err));
    CHECK_FALSE(parse_fault_plan("fail:x", rules, err));
    CHECK_FALSE(parse_fault_plan("fail:opendir:1:EIO", rules, err));
    CHECK(err.find("unknown call `opendir`") == 0);
    CHECK_FALSE(parse_fault_plan("short:lock:1", rules, err));
  }
}

}  // namespace
}  // namespace aup::storage

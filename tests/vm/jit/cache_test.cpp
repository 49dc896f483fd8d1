// vm/jit/cache.cpp: the object cache's format checks, its recovery (every
// damaged file is a miss, never an object) and its size bound.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "vm/jit/cache.h"

namespace aup::vm::jit {

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/aup-cache-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    path = tmpl;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

std::string file_for(const std::string& dir, uint64_t key) {
  char name[32];
  std::snprintf(name, sizeof name, "/%016llx.o", static_cast<unsigned long long>(key));
  return dir + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

}  // namespace

TEST_SUITE("jit_cache") {
  TEST_CASE("an object reads back as written, in a directory made for it") {
    TempDir t;
    std::string dir = t.path + "/a/b";  // parents are made
    std::string object = "\x7f" "ELF and then some bytes";
    REQUIRE(cache_write(dir, 0x1234, object));
    std::vector<char> back;
    REQUIRE(cache_read(dir, 0x1234, back));
    CHECK(std::string(back.begin(), back.end()) == object);
    CHECK(!cache_read(dir, 0x1235, back));  // another key: a miss
  }

  TEST_CASE("every damaged file is a miss") {
    TempDir t;
    std::string object(1000, 'x');
    REQUIRE(cache_write(t.path, 7, object));
    std::string good = slurp(file_for(t.path, 7));
    REQUIRE(good.size() == kCacheHeaderBytes + object.size());
    std::vector<char> back;
    auto damaged = [&](std::string bytes) {
      spit(file_for(t.path, 7), bytes);
      return !cache_read(t.path, 7, back);
    };
    std::string b = good;
    b[0] = 'X';
    CHECK_MESSAGE(damaged(b), "magic");
    b = good;
    b[8] ^= 1;
    CHECK_MESSAGE(damaged(b), "key");
    b = good;
    b[16] ^= 1;
    CHECK_MESSAGE(damaged(b), "length");
    b = good;
    b[24] ^= 1;
    CHECK_MESSAGE(damaged(b), "checksum field");
    b = good;
    b[kCacheHeaderBytes + 500] ^= 1;
    CHECK_MESSAGE(damaged(b), "object byte");
    CHECK_MESSAGE(damaged(good.substr(0, good.size() - 1)), "cut short");
    CHECK_MESSAGE(damaged(good.substr(0, 10)), "shorter than a header");
    CHECK_MESSAGE(damaged(""), "empty");
    CHECK_MESSAGE(damaged(good + "x"), "longer than its length");
    // A file renamed to another key is that key's miss.
    spit(file_for(t.path, 7), good);
    REQUIRE(rename(file_for(t.path, 7).c_str(), file_for(t.path, 8).c_str()) == 0);
    CHECK(!cache_read(t.path, 8, back));
    // Rewriting repairs it.
    REQUIRE(cache_write(t.path, 8, object));
    CHECK(cache_read(t.path, 8, back));
  }

  TEST_CASE("a directory that cannot be written is a failed write, not a crash") {
    TempDir t;
    std::string file = t.path + "/plain";
    spit(file, "not a directory");
    CHECK(!cache_write(file + "/jit", 1, "x"));
    CHECK(!cache_write("", 1, "x"));
    std::vector<char> back;
    CHECK(!cache_read(file + "/jit", 1, back));
  }

  TEST_CASE("the directory is trimmed to its bound, oldest first") {
    TempDir t;
    std::string object(10'000, 'o');
    uint64_t bound = 55'000;  // five objects (10,032 bytes each with the header) and a bit
    for (uint64_t key = 1; key <= 5; ++key) {
      REQUIRE(cache_write(t.path, key, object, bound));
      // Distinct modification times, so "oldest" is well defined.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (uint64_t key = 1; key <= 5; ++key) CHECK(exists(file_for(t.path, key)));
    REQUIRE(cache_write(t.path, 6, object, bound));  // 6 x 10,032 > 55,000: down to 41,250 or less
    CHECK(!exists(file_for(t.path, 1)));
    CHECK(!exists(file_for(t.path, 2)));
    CHECK(exists(file_for(t.path, 3)));
    CHECK(exists(file_for(t.path, 4)));
    CHECK(exists(file_for(t.path, 5)));
    CHECK(exists(file_for(t.path, 6)));
    // Files that are not objects are left alone.
    spit(t.path + "/notes.txt", std::string(100'000, 'n'));
    REQUIRE(cache_write(t.path, 7, object, bound));
    CHECK(exists(t.path + "/notes.txt"));
  }

  TEST_CASE("a file's identity changes when it is rewritten") {
    TempDir t;
    std::string f = t.path + "/lib.so";
    spit(f, "one");
    uint64_t a = file_identity(f);
    CHECK(a != 0);
    CHECK(file_identity(f) == a);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    spit(f, "two!");
    CHECK(file_identity(f) != a);
    CHECK(file_identity(t.path + "/missing") == 0);
  }
}

}  // namespace aup::vm::jit

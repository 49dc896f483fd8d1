// The term history (storage/terms.h): which term a save was written in,
// its file and its damage, and the last save two logs share.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "storage/terms.h"
#include "tests/storage/files.h"

namespace aup::storage {
namespace {

using files::TempDir;

TermHistory history(std::vector<TermStart> starts) { return TermHistory(std::move(starts)); }

TEST_SUITE("terms") {
  TEST_CASE("term_at: the last term beginning at or before the save; 0 before every one") {
    TermHistory h = history({{2, 5}, {3, 9}, {7, 9}});  // term 3 began at 9 and wrote nothing
    CHECK(h.term_at(0) == 0);
    CHECK(h.term_at(4) == 0);
    CHECK(h.term_at(5) == 2);
    CHECK(h.term_at(8) == 2);
    CHECK(h.term_at(9) == 7);
    CHECK(h.term_at(1000) == 7);
    CHECK(TermHistory().term_at(3) == 0);
    CHECK(TermHistory().last_term() == 0);
  }

  TEST_CASE("begin: a term that begins where the last began replaces it; drop_after forgets terms past a save") {
    TermHistory h;
    h.begin(1, 1);
    h.begin(2, 10);
    h.begin(4, 10);
    CHECK(h.starts() == std::vector<TermStart>{{1, 1}, {4, 10}});
    h.begin(5, 12);
    CHECK_FALSE(h.drop_after(12));
    CHECK(h.drop_after(11));
    CHECK(h.starts() == std::vector<TermStart>{{1, 1}, {4, 10}});
    CHECK(h.drop_after(0));
    CHECK(h.starts().empty());
  }

  TEST_CASE("encode and decode round-trip; every malformed history is refused naming its line") {
    TermHistory h = history({{1, 1}, {3, 40}, {4294967295u, 18446744073709551615ull}});
    TermHistory back;
    REQUIRE(TermHistory::decode(h.encode(), "t", back).ok());
    CHECK(back.starts() == h.starts());
    CHECK(TermHistory::decode("", "t", back).ok());
    CHECK(back.starts().empty());
    for (const char* bad : {"1 1", "1 1\n1 2\n", "2 5\n3 4\n", "1  1\n", "1\n", "x 1\n", "1 1 \n", "-1 2\n",
                            "4294967296 1\n", "1 1\n\n"}) {
      Status st = TermHistory::decode(bad, "DIR/terms", back);
      REQUIRE_FALSE_MESSAGE(st.ok(), bad);
      CHECK(st.message.find("DIR/terms is damaged at line") == 0);
    }
    CHECK(TermHistory::decode("1 1\n1 2\n", "DIR/terms", back).message.find("line 2") != std::string::npos);
  }

  TEST_CASE("common_save: the logs agree up to the lesser last save when their terms do") {
    TermHistory a = history({{1, 1}, {2, 50}});
    CHECK(common_save(a, 80, a, 80) == 80);
    CHECK(common_save(a, 80, a, 60) == 60);  // one behind the other
    CHECK(common_save(a, 30, a, 90) == 30);
    CHECK(common_save(TermHistory(), 0, a, 90) == 0);  // a new replica
    CHECK(common_save(TermHistory(), 12, TermHistory(), 40) == 12);  // never in a cluster
  }

  TEST_CASE("common_save: logs that part where a new term began on one of them") {
    // The old primary wrote 50..70 in term 2; the new one began term 3 at 61.
    TermHistory old_primary = history({{1, 1}, {2, 50}});
    TermHistory new_primary = history({{1, 1}, {2, 50}, {3, 61}});
    CHECK(common_save(old_primary, 70, new_primary, 90) == 60);
    CHECK(common_save(new_primary, 90, old_primary, 70) == 60);
    // The replica never reached past the new term's start: nothing to cut.
    CHECK(common_save(old_primary, 58, new_primary, 90) == 58);
    // The two diverge in the very first term they hold differently.
    TermHistory other = history({{5, 1}});
    CHECK(common_save(other, 20, new_primary, 90) == 0);
    // Term 3 began on each of two nodes at different saves (two promotions
    // by hand): the saves of term 3 on one are not those on the other.
    TermHistory p = history({{1, 1}, {3, 30}}), q = history({{1, 1}, {3, 35}});
    CHECK(common_save(p, 40, q, 40) == 29);
  }

  TEST_CASE("read_terms and write_terms: none is the empty history; what is written reads back") {
    TempDir dir;
    SystemIo io;
    TermHistory h = history({{9, 9}});
    REQUIRE(read_terms(io, dir.path, h).ok());
    CHECK(h.starts().empty());
    REQUIRE(write_terms(io, dir.path, history({{2, 3}, {5, 8}})).ok());
    REQUIRE(read_terms(io, dir.path, h).ok());
    CHECK(h.starts() == std::vector<TermStart>{{2, 3}, {5, 8}});
    std::ofstream(dir.path + "/terms") << "5 8\n2 3\n";
    Status st = read_terms(io, dir.path, h);
    CHECK(st.message == dir.path + "/terms is damaged at line 2: a term history is lines `TERM FIRST_SAVE`, both "
                                    "increasing, at most 1048576 of them");
  }
}

}  // namespace
}  // namespace aup::storage

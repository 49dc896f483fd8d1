// The image files (storage/image.cpp, image_format.h): rewriting the save
// number an image covers in place, and refusing damaged headers, bodies
// and trailers with the byte named.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "storage/image.h"
#include "storage/image_format.h"
#include "storage/key_values.h"
#include "storage/schema_codec.h"
#include "tests/storage/files.h"
#include "tests/storage/rows.h"
#include "vm/bytes.h"
#include "vm/text.h"

namespace aup::storage {
namespace {

namespace fs = std::filesystem;

using files::TempDir;

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}


// A table `t` (id: num key, name: text) of `rows` rows, its image written
// covering save number `seq`; returns the image's path.
const TableSchema kTable{"t",
                         "T",
                         {FieldSchema{"id", FieldType::Num, false, {}}, FieldSchema{"name", FieldType::Text, false, {}}},
                         {0}};
std::string write_image(Io& io, const std::string& dir, int rows, uint64_t seq) {
  vm::BTree tree(row_layout(kTable));
  for (int i = 0; i < rows; ++i) {
    uint64_t row[2] = {std::bit_cast<uint64_t>(double(i)),
                       reinterpret_cast<uint64_t>(vm::heap_text("row " + std::to_string(i)))};
    REQUIRE(tree.insert(vm::num_key(double(i)), row));
  }
  ImageWritten written;
  Status st = write_table_image(io, dir, kTable, tree, tree.root(), seq, written);
  REQUIRE_MESSAGE(st.ok(), st.message);
  CHECK(written.rows == static_cast<uint64_t>(rows));
  return table_image_path(dir, kTable.name);
}

// Reads an image back: its status, and the rows' names into `names`.
Status read_image(Io& io, const std::string& path, ImageRead& info, std::vector<std::string>* names = nullptr) {
  return read_table_image(io, path, info, [&](uint64_t* row) {
    auto* text = reinterpret_cast<vm::TextObj*>(row[1]);
    if (names) names->emplace_back(text->view());
    vm::release(text);
    return Status::good();
  });
}

// Seals an image whose body a test changed: the body length, the body's
// digest and the header checksum made right again.
void reseal(std::vector<uint8_t>& file) {
  uint64_t body = file.size() - image_format::kHeaderBytes - image_format::kDigestBytes;
  bytes::put_u64(file.data() + image_format::kBodyBytesAt, body);
  bytes::put_u64(file.data() + image_format::kHeaderBytes + body,
                 XXH3_64bits(file.data() + image_format::kHeaderBytes, body));
  bytes::put_u64(file.data() + image_format::kHeaderSumAt, XXH3_64bits(file.data(), image_format::kHeaderSumAt));
}
// A file's bytes with `body` in place of its body, sealed.
std::vector<uint8_t> with_body(const std::vector<uint8_t>& file, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> out(image_format::kHeaderBytes + body.size() + image_format::kDigestBytes);
  std::copy(file.begin(), file.begin() + image_format::kHeaderBytes, out.begin());
  std::copy(body.begin(), body.end(), out.begin() + image_format::kHeaderBytes);
  reseal(out);
  return out;
}
std::vector<uint8_t> body_of(const std::vector<uint8_t>& file) {
  return std::vector<uint8_t>(file.begin() + image_format::kHeaderBytes, file.end() - image_format::kDigestBytes);
}

// A vars image of two vars (n: num 7, s: text "x"); returns its path.
std::string write_vars(Io& io, const std::string& dir) {
  Schema schema;
  schema.vars.push_back(VarSchema{"n", FieldType::Num, {}});
  Scalar empty;
  empty.type = FieldType::Text;
  schema.vars.push_back(VarSchema{"s", FieldType::Text, empty});
  vm::TextObj* x = vm::heap_text("x");
  std::vector<uint64_t> values = {std::bit_cast<uint64_t>(7.0), reinterpret_cast<uint64_t>(x)};
  ImageWritten written;
  Status st = write_vars_image(io, dir, schema, values, 3, written);
  vm::release(x);
  REQUIRE_MESSAGE(st.ok(), st.message);
  return vars_image_path(dir);
}
Status read_vars(Io& io, const std::string& path, std::vector<std::string>* seen = nullptr) {
  ImageRead info;
  return read_vars_image(io, path, info, [&](const VarSchema& v, uint64_t value) {
    if (seen) seen->push_back(v.name);
    if (v.type == FieldType::Text) vm::release(reinterpret_cast<vm::TextObj*>(value));
  });
}

TEST_SUITE("image") {
  TEST_CASE("rewrite_image_seq moves the covered save number and keeps the rows") {
    TempDir dir;
    SystemIo io;
    std::string path = write_image(io, dir.path, 3, 5);
    std::vector<uint8_t> before = read_bytes(path);
    Status st = rewrite_image_seq(io, path, 9);
    REQUIRE_MESSAGE(st.ok(), st.message);
    ImageRead info;
    std::vector<std::string> names;
    st = read_image(io, path, info, &names);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CHECK(info.seq == 9);
    CHECK(info.rows == 3);
    CHECK(names == std::vector<std::string>{"row 0", "row 1", "row 2"});
    // Only the save number and the header checksum changed.
    std::vector<uint8_t> after = read_bytes(path);
    REQUIRE(after.size() == before.size());
    for (size_t i = 0; i < after.size(); ++i) {
      bool may_change = (i >= 16 && i < 24) || (i >= 56 && i < 64);
      if (!may_change) CHECK_MESSAGE(after[i] == before[i], "byte ", i);
    }
    CHECK(bytes::get_u64(after.data() + 16) == 9);
  }

  TEST_CASE("rewrite_image_seq: a write that stops part way puts the old header back") {
    TempDir dir;
    SystemIo plain;
    std::string path = write_image(plain, dir.path, 2, 5);
    std::vector<uint8_t> before = read_bytes(path);
    // The first write of the header stops half way, the rest of it fails:
    // half a new header is on the file until the old one is written back.
    std::vector<FaultRule> rules(2);
    rules[0].action = FaultRule::Action::Short;
    rules[0].what = "pwrite";
    rules[0].nth = 1;
    rules[1].action = FaultRule::Action::Fail;
    rules[1].what = "pwrite";
    rules[1].nth = 2;
    rules[1].err = ENOSPC;
    FaultIo io(std::make_unique<SystemIo>(), rules);
    Status st = rewrite_image_seq(io, path, 9);
    REQUIRE_FALSE(st.ok());
    CHECK(st.err == ENOSPC);
    CHECK(st.message == "cannot update " + path + ": " + std::strerror(ENOSPC));
    CHECK(read_bytes(path) == before);
    ImageRead info;
    st = read_image(plain, path, info);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CHECK(info.seq == 5);
  }

  TEST_CASE("rewrite_image_seq: a failed fsync is reported") {
    TempDir dir;
    SystemIo plain;
    std::string path = write_image(plain, dir.path, 1, 5);
    std::vector<FaultRule> rules(1);
    rules[0].what = "fsync";
    rules[0].err = EIO;
    FaultIo io(std::make_unique<SystemIo>(), rules);
    Status st = rewrite_image_seq(io, path, 9);
    REQUIRE_FALSE(st.ok());
    CHECK(st.err == EIO);
    CHECK(st.message == "cannot update " + path + ": " + std::strerror(EIO));
  }

  TEST_CASE("rewrite_image_seq refuses what is not a sound image, and changes nothing") {
    TempDir dir;
    SystemIo io;
    std::string path = write_image(io, dir.path, 1, 5);
    std::vector<uint8_t> good = read_bytes(path);

    Status st = rewrite_image_seq(io, dir.path + "/absent", 9);
    REQUIRE_FALSE(st.ok());
    CHECK(st.err == ENOENT);
    CHECK(st.message.rfind("cannot open " + dir.path + "/absent: ", 0) == 0);

    std::vector<uint8_t> bad = good;
    bad[0] = 'X';
    write_bytes(path, bad);
    st = rewrite_image_seq(io, path, 9);
    CHECK(st.message == "cannot update " + path + ": not an image");
    CHECK(read_bytes(path) == bad);

    write_bytes(path, std::vector<uint8_t>(good.begin(), good.begin() + 40));
    st = rewrite_image_seq(io, path, 9);
    CHECK(st.message == "cannot update " + path + ": not an image");

    bad = good;
    bad[8] = 3;
    write_bytes(path, bad);
    st = rewrite_image_seq(io, path, 9);
    CHECK(st.message == "cannot update " + path + ": image format 3 at byte 8, this aup writes 1 and 2");
    CHECK(read_bytes(path) == bad);

    // A damaged header is not resealed: a new checksum would hide it.
    bad = good;
    bad[30] ^= 1;
    write_bytes(path, bad);
    st = rewrite_image_seq(io, path, 9);
    CHECK(st.message == "cannot update " + path + ": header checksum mismatch at byte 56");
    CHECK(read_bytes(path) == bad);

    // A save number never moves back (the entries between would be applied
    // to the image twice); the same one is no change.
    write_bytes(path, good);
    st = rewrite_image_seq(io, path, 4);
    CHECK(st.message == "cannot update " + path + ": it covers save 5, later than save 4");
    CHECK(st.err == 0);
    CHECK(read_bytes(path) == good);
    CHECK(rewrite_image_seq(io, path, 5).ok());
  }
  TEST_CASE("the header's refusals name their byte") {
    TempDir dir;
    SystemIo io;
    std::string path = write_image(io, dir.path, 2, 5);
    const std::vector<uint8_t> good = read_bytes(path);
    ImageRead info;
    auto refused = [&](const std::vector<uint8_t>& bytes) {
      write_bytes(path, bytes);
      Status st = read_image(io, path, info);
      REQUIRE_FALSE(st.ok());
      return st.message;
    };
    CHECK(refused(std::vector<uint8_t>(good.begin(), good.begin() + 10)) ==
          path + " is damaged: it ends at byte 10, shorter than an empty image (72 bytes)");
    std::vector<uint8_t> bad = good;
    bad[1] = 'X';
    CHECK(refused(bad) == path + " is damaged or not an aup image: no image magic at byte 0");
    bad = good;
    bad[image_format::kVersionAt] = 3;
    CHECK(refused(bad) == path + " has image format 3 at byte 8, this aup reads 1 and 2");
    bad[image_format::kVersionAt] = 0;
    CHECK(refused(bad) == path + " has image format 0 at byte 8, this aup reads 1 and 2");
    bad = good;
    bad[image_format::kSeqAt] ^= 1;
    CHECK(refused(bad) == path + " is damaged: header checksum mismatch at byte 56");
    bad = good;
    bad.push_back(0);
    uint64_t body = good.size() - 72;
    CHECK(refused(bad) == fmt::format("{} is damaged: the header promises {} bytes of rows, the file holds {} (it "
                                      "ends at byte {})",
                                      path, body, body + 1, good.size() + 1));
    bad = good;
    bad[70] ^= 1;
    CHECK(refused(bad) == fmt::format("{} is damaged: the digest at byte {} does not match its body, bytes 64..{}",
                                      path, 64 + body, 63 + body));
    write_bytes(path, good);
    ImageRead vars_info;
    Status st = read_vars_image(io, path, vars_info, [](const VarSchema&, uint64_t) {});
    CHECK(st.message == path + " is not the kind of image expected (kind 1 at byte 40)");
  }

  TEST_CASE("a table image's rows: out of order, cut short, or followed by more bytes") {
    TempDir dir;
    SystemIo io;
    std::string path = write_image(io, dir.path, 2, 5);
    const std::vector<uint8_t> good = read_bytes(path);
    std::vector<uint8_t> body = body_of(good);
    // The rows are the last 2 x 7 bytes: key (num), name ("row N", 6 bytes).
    size_t rows_at = body.size() - 14;
    std::vector<uint8_t> swapped = body;
    std::swap_ranges(swapped.begin() + static_cast<long>(rows_at), swapped.begin() + static_cast<long>(rows_at) + 7,
                     swapped.begin() + static_cast<long>(rows_at) + 7);
    write_bytes(path, with_body(good, swapped));
    ImageRead info;
    Status st = read_image(io, path, info);
    CHECK(st.message == fmt::format("{} is damaged: row 1 is out of key order (byte {})", path, 64 + rows_at + 7));

    std::vector<uint8_t> longer = body;
    longer.push_back(0);
    write_bytes(path, with_body(good, longer));
    st = read_image(io, path, info);
    CHECK(st.message == fmt::format("{} is damaged: bytes after the last row (byte {})", path, 64 + body.size()));

    std::vector<uint8_t> cut(body.begin(), body.end() - 3);
    write_bytes(path, with_body(good, cut));
    st = read_image(io, path, info);
    CHECK(st.message == fmt::format("{} is damaged: row 1 does not decode (byte {}): a length of 5, longer than the "
                                    "bytes left at byte {}",
                                    path, 64 + rows_at + 7, 64 + rows_at + 8));
  }

  TEST_CASE("an image is read in pieces: rows across their ends, and one longer than a piece, load as written") {
    TempDir dir;
    SystemIo io;
    vm::BTree source(row_layout(kTable));
    std::vector<std::string> names;
    const int n = 30000;  // about 3 MiB of rows, more than a piece (1 MiB)
    for (int i = 0; i < n; ++i) {
      std::string name = fmt::format("row {} {}", i, std::string(static_cast<size_t>(i % 173), 'x'));
      if (i == n / 2) name = std::string(size_t{3} << 20, 'y');  // one row of 3 MiB
      names.push_back(name);
      uint64_t row[2] = {std::bit_cast<uint64_t>(double(i)), reinterpret_cast<uint64_t>(vm::heap_text(name))};
      REQUIRE(source.insert(vm::num_key(double(i)), row));
    }
    ImageWritten written;
    REQUIRE(write_table_image(io, dir.path, kTable, source, source.root(), 4, written).ok());
    std::string path = table_image_path(dir.path, kTable.name);
    REQUIRE(fs::file_size(path) > (size_t{5} << 20));
    ImageRead info;
    std::vector<std::string> seen;
    Status st = read_image(io, path, info, &seen);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CHECK(seen == names);
    CHECK(info.bytes == fs::file_size(path));
    vm::BTree tree(row_layout(kTable));
    uint64_t rows = 0;
    st = load_table_image(io, path, kTable, tree, info, rows);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CHECK(rows == static_cast<uint64_t>(n));
    REQUIRE(tree.size() == static_cast<size_t>(n));
    size_t i = 0;
    bool same = true;
    tree.for_each(tree.root(), [&](const vm::Key& k, const uint64_t* row) {
      same = same && vm::order_num(k.ord) == double(i) &&
             reinterpret_cast<const vm::TextObj*>(row[1])->view() == names[i];
      ++i;
    });
    CHECK(same);
    CHECK(i == names.size());
  }

  TEST_CASE("an image's digest is checked after its pieces: a mismatch is refused and none of its rows kept") {
    TempDir dir;
    SystemIo io;
    std::string path = write_image(io, dir.path, 100000, 5);  // about 1.3 MiB: two pieces
    std::vector<uint8_t> file = read_bytes(path);
    const uint64_t body = file.size() - image_format::kHeaderBytes - image_format::kDigestBytes;
    const std::string digest = fmt::format("{} is damaged: the digest at byte {} does not match its body, bytes {}..{}",
                                           path, 64 + body, 64, 64 + body - 1);
    // A name's byte changed in the second piece: every row decodes.
    std::vector<uint8_t> renamed = file;
    renamed[file.size() - 20] ^= 0x01;
    write_bytes(path, renamed);
    vm::BTree tree(row_layout(kTable));
    ImageRead info;
    uint64_t rows = 0;
    Status st = load_table_image(io, path, kTable, tree, info, rows);
    CHECK(st.message == digest);
    CHECK(tree.size() == 0);
    CHECK(rows == 0);
    // A key's byte changed: the rows go out of order there, and the digest
    // is what is reported (as when it was checked before the rows).
    std::vector<uint8_t> rekeyed = file;
    rekeyed[file.size() - 8 - 7 * 50] ^= 0x7f;
    write_bytes(path, rekeyed);
    st = load_table_image(io, path, kTable, tree, info, rows);
    CHECK(st.message == digest);
    CHECK(tree.size() == 0);
    st = read_image(io, path, info);
    CHECK(st.message == digest);
  }

  TEST_CASE("the bottom-up load refuses an image whose keys do not increase, as damage at the row's byte") {
    TempDir dir;
    SystemIo io;
    for (bool equal : {false, true}) {
      CAPTURE(equal);
      std::string path = write_image(io, dir.path, 3, 5);
      const std::vector<uint8_t> good = read_bytes(path);
      std::vector<uint8_t> body = body_of(good);
      // The rows are the last 3 x 7 bytes: key (num), name ("row N"). Row
      // 2's key made row 1's (equal) or row 0's (below).
      size_t rows_at = body.size() - 21;
      body[rows_at + 14] = body[rows_at + (equal ? 7 : 0)];
      write_bytes(path, with_body(good, body));
      vm::BTree tree(row_layout(kTable));
      ImageRead info;
      uint64_t rows = 0;
      Status st = load_table_image(io, path, kTable, tree, info, rows);
      CHECK(st.message == fmt::format("{} is damaged: row 2 is out of key order (byte {})", path, 64 + rows_at + 14));
      // As before the bottom-up load, the rows before the damage are kept
      // (`aup replay` reads past damage) and the rest refused.
      CHECK(tree.size() == 2);
      CHECK(rows == 2);
    }
  }

  TEST_CASE("a table image's column list is refused by the shared codec, at the file's byte") {
    TempDir dir;
    SystemIo io;
    std::string path = write_image(io, dir.path, 0, 5);
    const std::vector<uint8_t> good = read_bytes(path);
    std::vector<uint8_t> body = body_of(good);
    // "t", "T", then the field count at body byte 4: 0 fields.
    REQUIRE(body[4] == 2);
    body[4] = 0;
    write_bytes(path, with_body(good, body));
    ImageRead info;
    Status st = read_image(io, path, info);
    CHECK(st.message == path + " is damaged: its column list does not decode (byte 68): table `t` has 0 fields (1 to 255)");
  }

  TEST_CASE("a vars image: its count, an unknown type and bytes after the last var are refused at their byte") {
    TempDir dir;
    SystemIo io;
    std::string path = write_vars(io, dir.path);
    std::vector<std::string> seen;
    Status st = read_vars(io, path, &seen);
    REQUIRE_MESSAGE(st.ok(), st.message);
    CHECK(seen == std::vector<std::string>{"n", "s"});
    const std::vector<uint8_t> good = read_bytes(path);
    // The body: count 2; "n", type 1, 7 (num: 28); "s", type 2, "x".
    std::vector<uint8_t> body = body_of(good);
    REQUIRE(body == std::vector<uint8_t>{2, 1, 'n', 1, 28, 1, 's', 2, 1, 'x'});

    std::vector<uint8_t> bad = body;
    bad[0] = 3;
    write_bytes(path, with_body(good, bad));
    CHECK(read_vars(io, path).message == path + " is damaged: var count 3 at byte 64");

    bad = body;
    bad[7] = 9;
    write_bytes(path, with_body(good, bad));
    CHECK(read_vars(io, path).message == path + " is damaged: vars do not decode (byte 71): an unknown type byte 9");

    bad = body;
    bad.push_back(0);
    write_bytes(path, with_body(good, bad));
    CHECK(read_vars(io, path).message == path + " is damaged: vars do not decode (byte 74): bytes after the last var");
  }

  // ---- composite keys ---------------------------------------------------------------

  TEST_CASE("a one-field key's image is the bytes it was before composite keys (format 1)") {
    TempDir dir;
    SystemIo io;
    std::vector<uint8_t> file = read_bytes(write_image(io, dir.path, 2, 5));
    CHECK(bytes::get_u32(file.data() + image_format::kVersionAt) == 1);
    // t, T, 2 fields (id num, name text), key field 0; rows: the key, then name.
    CHECK(body_of(file) == std::vector<uint8_t>{1, 't', 1, 'T', 2, 2, 'i', 'd', 1, 0, 4, 'n', 'a', 'm', 'e', 2, 0, 0,
                                                0, 5, 'r', 'o', 'w', ' ', '0', 4, 5, 'r', 'o', 'w', ' ', '1'});
  }

  TEST_CASE("composite keys: an image holds each row's key fields in key order, then the rest (format 2)") {
    TempDir dir;
    SystemIo io;
    using namespace std::string_literals;
    // events (qty, name, at, note) keyed (name, at).
    rows::Tree t(rows::mixed_table(), {{"7", "a\0b"s, "-1", "n"}});
    ImageWritten written;
    REQUIRE(write_table_image(io, dir.path, t.table, t.tree, t.tree.root(), 3, written).ok());
    std::vector<uint8_t> file = read_bytes(table_image_path(dir.path, "events"));
    CHECK(bytes::get_u32(file.data() + image_format::kVersionAt) == 2);
    std::vector<uint8_t> body = body_of(file);
    std::vector<uint8_t> schema;
    Encoder e(schema);
    encode_table_schema(e, t.table, kKeyListFormat);
    REQUIRE(body.size() > schema.size());
    CHECK(std::vector<uint8_t>(body.begin(), body.begin() + static_cast<long>(schema.size())) == schema);
    // name "a\0b" (its 0x00 as it is: the key's in-memory escape is not
    // stored), at -1, then qty 7 and note "n".
    CHECK(std::vector<uint8_t>(body.begin() + static_cast<long>(schema.size()), body.end()) ==
          std::vector<uint8_t>{3, 'a', 0, 'b', 2, 28, 1, 'n'});
  }

  TEST_CASE("composite keys: images of num, text and mixed keys read back in key order and load under their keys") {
    TempDir dir;
    SystemIo io;
    struct Kind {
      TableSchema table;
      std::vector<rows::Row> rows;
    };
    for (const Kind& k : {Kind{rows::nums_table(), rows::nums_rows()}, Kind{rows::texts_table(), rows::texts_rows()},
                          Kind{rows::mixed_table(), rows::mixed_rows()}}) {
      CAPTURE(k.table.name);
      rows::Tree t(k.table, k.rows);
      const std::vector<rows::Row> ordered = rows::in_key_order(k.table, k.rows);
      REQUIRE(rows::all(k.table, t.tree) == ordered);  // the tree's order is the tuples'
      ImageWritten written;
      REQUIRE(write_table_image(io, dir.path, k.table, t.tree, t.tree.root(), 4, written).ok());
      CHECK(written.rows == k.rows.size());
      std::string path = table_image_path(dir.path, k.table.name);
      ImageRead info;
      std::vector<rows::Row> read;
      Status st = read_table_image(io, path, info, [&](uint64_t* row) {
        read.push_back(rows::strings(info.table, row));
        rows::release(info.table, row);
        return Status::good();
      });
      REQUIRE_MESSAGE(st.ok(), st.message);
      CHECK(info.table == k.table);
      CHECK(read == ordered);
      vm::BTree loaded(row_layout(k.table));
      uint64_t n = 0;
      st = load_table_image(io, path, k.table, loaded, info, n);
      REQUIRE_MESSAGE(st.ok(), st.message);
      CHECK(n == k.rows.size());
      CHECK(rows::all(k.table, loaded) == ordered);
      for (const rows::Row& r : k.rows) CHECK(rows::find(loaded, k.table, r) == r);
    }
  }

  TEST_CASE("composite keys: an image's rows out of key order are refused at the row's byte") {
    TempDir dir;
    SystemIo io;
    using namespace std::string_literals;
    // pairs (a, b, n) keyed (b, a): ("a", "x") sorts before ("a\0", "x").
    const TableSchema table = rows::texts_table();
    rows::Tree t(table, {{"x", "a\0"s, "2"}, {"x", "a", "1"}});
    ImageWritten written;
    REQUIRE(write_table_image(io, dir.path, table, t.tree, t.tree.root(), 1, written).ok());
    std::string path = table_image_path(dir.path, table.name);
    const std::vector<uint8_t> good = read_bytes(path);
    std::vector<uint8_t> schema, low, high;
    Encoder s(schema);
    encode_table_schema(s, table, kKeyListFormat);
    Encoder l(low);  // each row: b, a (the key), then n
    l.text("a");
    l.text("x");
    l.num(1);
    Encoder h(high);
    h.text("a\0"s);
    h.text("x");
    h.num(2);
    auto body = [&](const std::vector<uint8_t>& r0, const std::vector<uint8_t>& r1) {
      std::vector<uint8_t> out = schema;
      out.insert(out.end(), r0.begin(), r0.end());
      out.insert(out.end(), r1.begin(), r1.end());
      return out;
    };
    REQUIRE(body(low, high) == body_of(good));
    write_bytes(path, with_body(good, body(high, low)));
    ImageRead info;
    Status st = read_table_image(io, path, info, [&](uint64_t* row) {
      rows::release(info.table, row);
      return Status::good();
    });
    CHECK(st.message ==
          fmt::format("{} is damaged: row 1 is out of key order (byte {})", path, 64 + schema.size() + high.size()));
  }

  TEST_CASE("composite keys: an image lacking a key field of the target is refused, naming the component") {
    TempDir dir;
    SystemIo io;
    TableSchema stored{"lines", "Line", {rows::num("w"), rows::num("qty")}, {0}};
    rows::Tree t(stored, {{"1", "2"}});
    ImageWritten written;
    REQUIRE(write_table_image(io, dir.path, stored, t.tree, t.tree.root(), 1, written).ok());
    TableSchema target{"lines", "Line", {rows::num("w"), rows::text("d"), rows::num("qty")}, {0, 1}};
    vm::BTree tree(row_layout(target));
    ImageRead info;
    uint64_t n = 0;
    std::string path = table_image_path(dir.path, "lines");
    Status st = load_table_image(io, path, target, tree, info, n);
    CHECK(st.message == path + " lacks the key field `d`, component 2 of the key `(w, d)`");
    CHECK(tree.size() == 0);
  }

  TEST_CASE("composite keys: an image loads into a layout with its fields moved and added, under the same keys") {
    // A migration: the module declares the key's fields in another place
    // and adds one with a default; the key (name, at) is the same by name.
    TempDir dir;
    SystemIo io;
    const TableSchema stored = rows::mixed_table();
    rows::Tree t(stored, rows::mixed_rows());
    ImageWritten written;
    REQUIRE(write_table_image(io, dir.path, stored, t.tree, t.tree.root(), 1, written).ok());
    FieldSchema tag = rows::text("tag");
    tag.has_default = true;
    tag.default_value = Scalar{FieldType::Text, 0, false, "new"};
    TableSchema target{"events", "Event", {rows::num("at"), rows::text("note"), tag, rows::text("name"), rows::num("qty")},
                       {3, 0}};
    vm::BTree tree(row_layout(target));
    ImageRead info;
    uint64_t n = 0;
    Status st = load_table_image(io, table_image_path(dir.path, "events"), target, tree, info, n);
    REQUIRE_MESSAGE(st.ok(), st.message);
    std::vector<rows::Row> want;
    for (const rows::Row& r : rows::in_key_order(stored, rows::mixed_rows())) want.push_back({r[2], r[3], "new", r[1], r[0]});
    CHECK(rows::all(target, tree) == want);
  }
}

}  // namespace
}  // namespace aup::storage

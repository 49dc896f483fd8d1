// The image files (storage/image.cpp, image_format.h): rewriting the save
// number an image covers in place, and refusing damaged headers, bodies
// and trailers with the byte named.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

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
#include "vm/bytes.h"
#include "vm/text.h"

namespace aup::storage {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/aup-image-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

vm::RowLayout layout_of(const TableSchema& t) {
  vm::RowLayout layout;
  layout.slots = static_cast<uint32_t>(t.fields.size());
  for (uint32_t f = 0; f < t.fields.size(); ++f) {
    if (t.fields[f].type == FieldType::Text) layout.text_slots.push_back(f);
  }
  layout.text_key = t.fields[t.key_field].type == FieldType::Text;
  return layout;
}

// A table `t` (id: num key, name: text) of `rows` rows, its image written
// covering save number `seq`; returns the image's path.
const TableSchema kTable{"t",
                         "T",
                         {FieldSchema{"id", FieldType::Num, false, {}}, FieldSchema{"name", FieldType::Text, false, {}}},
                         0};
std::string write_image(Io& io, const std::string& dir, int rows, uint64_t seq) {
  vm::BTree tree(layout_of(kTable));
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
    bad[8] = 2;
    write_bytes(path, bad);
    st = rewrite_image_seq(io, path, 9);
    CHECK(st.message == "cannot update " + path + ": image format 2 at byte 8, this aup writes 1");
    CHECK(read_bytes(path) == bad);

    // A damaged header is not resealed: a new checksum would hide it.
    bad = good;
    bad[30] ^= 1;
    write_bytes(path, bad);
    st = rewrite_image_seq(io, path, 9);
    CHECK(st.message == "cannot update " + path + ": header checksum mismatch at byte 56");
    CHECK(read_bytes(path) == bad);
  }
}

}  // namespace
}  // namespace aup::storage

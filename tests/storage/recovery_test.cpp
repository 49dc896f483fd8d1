// Recovery (storage/recovery.h): each case it reports, on stores written
// here by hand (a schema file, images as of chosen saves, log entries of
// change records), then damaged the way disks do (tests/storage/files.h).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <bit>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "storage/codec.h"
#include "storage/image.h"
#include "storage/log.h"
#include "storage/memory_tables.h"
#include "storage/recovery.h"
#include "storage/schema_file.h"
#include "tests/storage/files.h"

namespace aup::storage {
namespace {

namespace lf = log_format;

using files::TempDir;

FieldSchema field(const char* name, FieldType t) { return FieldSchema{name, t, false, {}}; }

// items (id, qty), keyed by id; one var, `count`.
Schema items_schema() {
  Schema s;
  s.tables.push_back(TableSchema{"items", "Item", {field("id", FieldType::Num), field("qty", FieldType::Num)}, {0}});
  s.vars.push_back(VarSchema{"count", FieldType::Num, {}});
  return s;
}

// items_schema() and lines (qty, o, d, w), keyed (w, d, o): a composite
// key of num, text, num, in another order than the fields.
Schema with_lines() {
  Schema s = items_schema();
  s.tables.push_back(TableSchema{"lines", "Line",
                                 {field("qty", FieldType::Num), field("o", FieldType::Num), field("d", FieldType::Text),
                                  field("w", FieldType::Num)},
                                 {3, 2, 1}});
  return s;
}

// Change records (storage/records.h) of items and the var.
struct Payload {
  std::vector<uint8_t> bytes;
  Payload& put(double id, double qty) {
    Encoder e(bytes);
    e.varint(1);  // table 0
    e.varint(1);
    e.u8(1);
    e.num(id);
    e.num(qty);
    return *this;
  }
  Payload& set_qty(double id, double qty) {
    Encoder e(bytes);
    e.varint(1);
    e.varint(1);
    e.u8(2);
    e.num(id);
    e.varint(1);
    e.varint(1);  // field 1, qty
    e.num(qty);
    return *this;
  }
  // lines (qty, o, d, w) keyed (w, d, o): table 1, target 2; a record's
  // key is w, d, o in that order.
  Payload& line_put(double w, const std::string& d, double o, double qty) {
    line(1, w, d, o).num(qty);
    return *this;
  }
  Payload& line_set_qty(double w, const std::string& d, double o, double qty) {
    Encoder e = line(2, w, d, o);
    e.varint(1);
    e.varint(0);  // field 0, qty
    e.num(qty);
    return *this;
  }
  Payload& line_remove(double w, const std::string& d, double o) {
    line(3, w, d, o);
    return *this;
  }
  Encoder line(uint8_t op, double w, const std::string& d, double o) {
    Encoder e(bytes);
    e.varint(2);
    e.varint(1);
    e.u8(op);
    e.num(w);
    e.text(d);
    e.num(o);
    return e;
  }
  Payload& count(double n) {
    Encoder e(bytes);
    e.varint(0);  // the vars
    e.varint(1);
    e.varint(0);
    e.num(n);
    return *this;
  }
};

// A store written by hand: the schema file, then entries appended to the
// log (and applied to a model of the tables, to write images from).
class Writer {
 public:
  Writer(Io& io, std::string dir, const Schema& s, uint64_t segment_bytes = 65536)
      : io_(io), dir_(std::move(dir)), schema_(s), model_(schema_), map_(map_schema(schema_, schema_)) {
    REQUIRE(write_schema_file(io_, dir_, schema_).ok());
    Log::Options o;
    o.segment_bytes = segment_bytes;
    LogOpenReport r;
    REQUIRE(Log::open(io_, dir_, o, [](const LogEntry&) { return Status::good(); }, log_, r).ok());
  }
  void entry(const Payload& p) {
    ++seq_;
    REQUIRE(log_->append(seq_, p.bytes).ok());
    REQUIRE(log_->sync().ok());
    std::vector<uint64_t> none(schema_.tables.size() + 1, 0);
    REQUIRE(apply_payload(p.bytes, schema_, map_, seq_, none, model_).ok());
  }
  // Images of the model as it is now (as of the last entry's save).
  void table_image(uint32_t t) {
    ImageWritten w;
    vm::BTree& tree = model_.table(t);
    REQUIRE(write_table_image(io_, dir_, schema_.tables[t], tree, tree.root(), seq_, w).ok());
  }
  void vars_image() {
    std::vector<uint64_t> values;
    for (uint32_t v = 0; v < schema_.vars.size(); ++v) values.push_back(model_.var(v));
    ImageWritten w;
    REQUIRE(write_vars_image(io_, dir_, schema_, values, seq_, w).ok());
  }
  uint64_t seq() const { return seq_; }
  Log& log() { return *log_; }

 private:
  Io& io_;
  std::string dir_;
  Schema schema_;
  MemoryTables model_;
  SchemaMap map_;
  std::unique_ptr<Log> log_;
  uint64_t seq_ = 0;
};

// Every report, as one line each.
struct Heard : RecoveryReporter {
  std::vector<std::string> lines;
  void image_read(uint32_t t, uint64_t seq, uint64_t bytes, uint64_t rows) override {
    lines.push_back(fmt::format("image {}: save {}, {} rows{}", t, seq, rows, bytes > 0 ? "" : ", no bytes"));
  }
  void image_damaged(uint32_t t, const Status& why) override {
    lines.push_back(fmt::format("image {} damaged: {}", t, why.message));
  }
  void damage(const Status& why) override { lines.push_back("damage: " + why.message); }
  void missing_entries(uint32_t t, uint64_t first_prev_seq, uint64_t covered) override {
    lines.push_back(fmt::format("missing: image {} covers {}, the log follows {}", t, covered, first_prev_seq));
  }
  void entry(const LogEntry& e, const PayloadSummary* changes) override {
    std::string c;
    if (changes) {
      for (const auto& g : changes->groups) c += fmt::format(" [{} p{} s{} v{}]", g.target, g.puts, g.sets, g.vars);
    }
    lines.push_back(fmt::format("entry {}{}", e.seq, c));
  }
  void torn_tail(const std::string& where) override { lines.push_back("torn: " + where); }
  void log_read(const LogOpenReport& r, const std::vector<Log::Segment>& chain) override {
    lines.push_back(fmt::format("log: {} entries in {} segments", r.entries, chain.size()));
  }
  bool said(const std::string& prefix) const {
    for (const std::string& l : lines) {
      if (l.rfind(prefix, 0) == 0) return true;
    }
    return false;
  }
  std::string all() const {
    std::string s;
    for (const std::string& l : lines) s += l + "\n";
    return s;
  }
};

// The tables' state as text: "items 1=10 2=20; count=3".
std::string state_of(const Schema& s, Tables& tables) {
  std::string out;
  for (uint32_t t = 0; t < s.tables.size(); ++t) {
    const TableSchema& ts = s.tables[t];
    out += ts.name;
    vm::BTree& tree = tables.table(t);
    tree.for_each(tree.root(), [&](const vm::Key&, const uint64_t* row) {
      out += " ";
      for (uint32_t f = 0; f < ts.fields.size(); ++f) {
        if (f) out += f == 1 ? "=" : ",";
        switch (ts.fields[f].type) {
          case FieldType::Num: out += fmt::format("{}", std::bit_cast<double>(row[f])); break;
          case FieldType::Text: out += reinterpret_cast<const vm::TextObj*>(row[f])->view(); break;
          case FieldType::Bool: out += row[f] ? "true" : "false"; break;
        }
      }
    });
    out += "; ";
  }
  for (uint32_t v = 0; v < s.vars.size(); ++v) {
    if (v) out += " ";
    out += s.vars[v].name + "=" +
           (s.vars[v].type == FieldType::Num ? fmt::format("{}", std::bit_cast<double>(tables.var(v)))
                                             : std::string("?"));
  }
  return out;
}

RecoveryOptions read_only() {
  RecoveryOptions o;
  o.log.read_only = true;
  return o;
}
RecoveryOptions past_damage() {
  RecoveryOptions o = read_only();
  o.read_past_damage = true;
  return o;
}

// One recovery of `dir` into the stored layout.
struct Recovered {
  Heard heard;
  Schema schema;
  std::unique_ptr<MemoryTables> tables;
  std::unique_ptr<Recovery> recovery;
  Status images;  // load_images
  Status log;     // read_log (not run when load_images failed)
  std::string state() { return state_of(schema, *tables); }
};
std::unique_ptr<Recovered> recover(Io& io, const std::string& dir, RecoveryOptions o = read_only()) {
  auto r = std::make_unique<Recovered>();
  r->recovery = std::make_unique<Recovery>(io, dir, o, r->heard);
  Status st = r->recovery->read_schema(r->schema);
  REQUIRE_MESSAGE(st.ok(), st.message);
  r->tables = std::make_unique<MemoryTables>(r->schema);
  r->images = r->recovery->load_images(r->schema, r->schema, *r->tables);
  if (r->images.ok()) r->log = r->recovery->read_log();
  return r;
}

// Entries 1..4, in log-0; images of items and the vars as of save 2.
std::vector<Payload> four() {
  return {Payload().put(1, 10).count(1), Payload().put(2, 20).count(2), Payload().set_qty(1, 11).count(3),
          Payload().put(3, 30).count(4)};
}
void write_four(Io& io, const std::string& dir) {
  Writer w(io, dir, items_schema());
  std::vector<Payload> p = four();
  w.entry(p[0]);
  w.entry(p[1]);
  w.table_image(0);
  w.vars_image();
  w.entry(p[2]);
  w.entry(p[3]);
}
// Where entry k (0-based) of four() starts in log-0.
uint64_t four_offset(size_t k) {
  uint64_t off = lf::kHeaderBytes;
  for (size_t i = 0; i < k; ++i) off += lf::entry_bytes(four()[i].bytes.size());
  return off;
}

// Fails opening one file, as a disk error would.
struct FailingOpen : SystemIo {
  std::string path;
  int open(const std::string& p, int flags, int mode) override {
    return p == path ? -EIO : SystemIo::open(p, flags, mode);
  }
};

TEST_SUITE("recovery") {
  TEST_CASE("the images, then the log after them: each image and each entry is reported") {
    TempDir dir;
    SystemIo io;
    write_four(io, dir.path);
    auto r = recover(io, dir.path);
    REQUIRE_MESSAGE(r->log.ok(), r->log.message);
    CHECK(r->heard.all() ==
          "image 0: save 2, 2 rows\nimage 1: save 2, 1 rows\nentry 1\nentry 2\nentry 3\nentry 4\n"
          "log: 4 entries in 1 segments\n");
    CHECK(r->state() == "items 1=11 2=20 3=30; count=4");
    CHECK(r->recovery->image_seq() == std::vector<uint64_t>{2, 2});
    CHECK(r->recovery->last_seq() == 4);
    // Only entries 3 and 4 were applied: their records' bytes, per table.
    CHECK(r->recovery->applied_bytes()[0] > 0);
    CHECK(r->recovery->applied_bytes()[1] > 0);
  }

  TEST_CASE("with summarize_entries each entry comes with its changes per table") {
    TempDir dir;
    SystemIo io;
    write_four(io, dir.path);
    RecoveryOptions o = read_only();
    o.summarize_entries = true;
    auto r = recover(io, dir.path, o);
    REQUIRE(r->log.ok());
    CHECK(r->heard.said("entry 3 [0 p0 s1 v0] [-1 p0 s0 v1]"));
    CHECK(r->heard.said("entry 4 [0 p1 s0 v0] [-1 p0 s0 v1]"));
  }

  TEST_CASE("a damaged table image: refused by name; read past, the log is verified whole but not applied to it") {
    TempDir dir;
    SystemIo io;
    write_four(io, dir.path);
    std::string path = table_image_path(dir.path, "items");
    files::flip(path, 70);  // in the body: the digest no longer matches
    auto strict = recover(io, dir.path, read_only());
    REQUIRE_FALSE(strict->images.ok());
    CHECK(strict->images.err == 0);
    CHECK(strict->images.message.find(path + " is damaged") == 0);
    CHECK(strict->heard.said("image 0 damaged: " + path + " is damaged"));

    auto past = recover(io, dir.path, past_damage());
    REQUIRE(past->images.ok());
    // Entry 3 sets row 1, which the damaged image held: applied to an
    // empty table it would read as a log that does not decode.
    REQUIRE_MESSAGE(past->log.ok(), past->log.message);
    CHECK(past->heard.said("image 0 damaged: " + path + " is damaged"));
    CHECK(past->heard.said("entry 4"));
    CHECK_FALSE(past->heard.said("image 0:"));
    CHECK(past->state() == "items; count=4");
    CHECK(past->recovery->image_seq()[0] == 0);
  }

  TEST_CASE("a damaged vars image: refused; read past, the vars keep their initial values and items recover") {
    TempDir dir;
    SystemIo io;
    write_four(io, dir.path);
    std::string path = vars_image_path(dir.path);
    files::flip(path, 20);  // the header's save number: its checksum no longer matches
    auto strict = recover(io, dir.path, read_only());
    REQUIRE_FALSE(strict->images.ok());
    CHECK(strict->images.message == path + " is damaged: header checksum mismatch at byte 56");

    auto past = recover(io, dir.path, past_damage());
    REQUIRE_MESSAGE(past->log.ok(), past->log.message);
    CHECK(past->heard.said("image 1 damaged: " + path + " is damaged: header checksum mismatch at byte 56"));
    CHECK(past->state() == "items 1=11 2=20 3=30; count=0");
  }

  TEST_CASE("images that do not reach back to the log's first entry: missing entries") {
    TempDir dir;
    SystemIo io;
    uint64_t gone = 0;  // the last save of log-0
    {
      // Entries of about 1.8 KiB in 4 KiB segments: a few segments.
      Writer w(io, dir.path, items_schema(), 4096);
      for (int i = 1; i <= 8; ++i) {
        Payload p;
        for (int k = 0; k < 300; ++k) p.put(i * 1000 + k, k);
        w.entry(p.count(i));
      }
      REQUIRE(w.log().segments().size() >= 3);
      gone = w.log().segments()[0].last_seq;
    }
    std::filesystem::remove(dir.path + "/log-0");  // by hand
    auto strict = recover(io, dir.path, read_only());
    REQUIRE(strict->images.ok());
    REQUIRE_FALSE(strict->log.ok());
    CHECK(strict->log.message == fmt::format("the store {} is missing log entries: its oldest entry follows save "
                                             "{}, but the image of table `items` covers only up to save 0",
                                             dir.path, gone));
    std::string missing = fmt::format("missing: image 0 covers 0, the log follows {}", gone);
    CHECK(strict->heard.said(missing));
    CHECK_FALSE(strict->heard.said("damage:"));

    auto past = recover(io, dir.path, past_damage());
    REQUIRE_MESSAGE(past->log.ok(), past->log.message);
    CHECK(past->heard.said(missing));
    CHECK(past->heard.said("entry 8"));  // still read and verified...
    CHECK(past->state() == "items; count=0");  // ...but none of it applied
  }

  TEST_CASE("a torn tail is reported; read-only it stays, writable it is cut") {
    TempDir dir;
    SystemIo io;
    write_four(io, dir.path);
    // The last entry's payload in part gone, as a crash mid-write leaves it.
    std::string seg = dir.path + "/log-0";
    uint64_t last_entry = four_offset(3);
    files::zero(seg, last_entry + lf::kEntryHeaderBytes + 2, 4);
    std::string before = files::contents(seg);

    auto r = recover(io, dir.path);
    REQUIRE_MESSAGE(r->log.ok(), r->log.message);
    std::string where = "log-0 at byte " + std::to_string(last_entry) + ": digest mismatch";
    CHECK(r->heard.said("torn: " + where));
    CHECK(r->recovery->log_report().torn_where == where);
    CHECK(r->state() == "items 1=11 2=20; count=3");
    CHECK(r->recovery->last_seq() == 3);
    CHECK(files::contents(seg) == before);

    RecoveryOptions writable;
    auto cut = recover(io, dir.path, writable);
    REQUIRE(cut->log.ok());
    CHECK(cut->heard.said("torn: " + where));
    CHECK(files::contents(seg) != before);
    cut.reset();
    auto after = recover(io, dir.path);
    REQUIRE(after->log.ok());
    CHECK_FALSE(after->heard.said("torn:"));
    CHECK(after->state() == "items 1=11 2=20; count=3");
  }

  TEST_CASE("damage in the middle of the log ends the read in either mode, named by segment and byte") {
    TempDir dir;
    SystemIo io;
    write_four(io, dir.path);
    uint64_t second = four_offset(1);
    files::flip(dir.path + "/log-0", second + lf::kEntryHeaderBytes);  // entry 2's payload
    for (bool past : {false, true}) {
      CAPTURE(past);
      auto r = recover(io, dir.path, past ? past_damage() : read_only());
      REQUIRE(r->images.ok());
      REQUIRE_FALSE(r->log.ok());
      CHECK(r->log.err == 0);
      std::string why = "the log is damaged: log-0 at byte " + std::to_string(second) +
                        ": digest mismatch, and valid entries follow it";
      CHECK(r->log.message.find(why) == 0);
      CHECK(r->heard.said("damage: " + why));
      CHECK(r->heard.said("entry 1"));
      CHECK_FALSE(r->heard.said("entry 2"));
    }
  }

  TEST_CASE("an I/O error is not damage: it ends the read with its errno and is not reported") {
    TempDir dir;
    FailingOpen io;
    write_four(io, dir.path);
    io.path = table_image_path(dir.path, "items");
    auto r = recover(io, dir.path, past_damage());
    REQUIRE_FALSE(r->images.ok());
    CHECK(r->images.err == EIO);
    CHECK(r->images.message == "cannot open " + io.path + ": Input/output error");
    CHECK(r->heard.lines.empty());  // neither damage nor a damaged image
  }

  TEST_CASE("apply_through (replay --at): each table as of that save, unless its image covers a later one") {
    TempDir dir;
    SystemIo io;
    {
      Writer w(io, dir.path, items_schema());
      w.entry(Payload().put(1, 10).count(1));
      w.vars_image();  // the vars as of save 1
      w.entry(Payload().put(2, 20).count(2));
      w.entry(Payload().set_qty(1, 11).count(3));
      w.entry(Payload().put(3, 30).count(4));
      w.table_image(0);  // items as of save 4
      w.entry(Payload().set_qty(2, 21).count(5));
    }
    RecoveryOptions o = read_only();
    o.apply_through = 2;
    auto r = recover(io, dir.path, o);
    REQUIRE_MESSAGE(r->log.ok(), r->log.message);
    // The vars as of save 2; items as of its image, 4: newer than asked,
    // which replay refuses for `--dump items --at 2`.
    CHECK(r->state() == "items 1=11 2=20 3=30; count=2");
    CHECK(r->recovery->image_seq() == std::vector<uint64_t>{4, 1});
    CHECK(r->recovery->last_seq() == 5);  // every entry still read
    CHECK(r->heard.said("entry 5"));
  }

  TEST_CASE("a migration's layout: the stored images and records land in the module's columns by name") {
    TempDir dir;
    SystemIo io;
    write_four(io, dir.path);
    // The module adds a text field with a default before qty, a bool after
    // it, a table and a var.
    Schema module = items_schema();
    FieldSchema tag = field("tag", FieldType::Text);
    tag.has_default = true;
    tag.default_value = Scalar{FieldType::Text, 0, false, "new"};
    FieldSchema hot = field("hot", FieldType::Bool);
    hot.has_default = true;
    hot.default_value = Scalar{FieldType::Bool, 0, true, ""};
    module.tables[0].fields = {field("id", FieldType::Num), tag, field("qty", FieldType::Num), hot};
    module.tables.push_back(TableSchema{"notes", "Note", {field("id", FieldType::Num)}, {0}});
    module.vars.insert(module.vars.begin(), VarSchema{"hits", FieldType::Num, Scalar{FieldType::Num, 7, false, ""}});
    REQUIRE(compare_schemas(items_schema(), module).refusals.empty());

    Heard heard;
    Recovery recovery(io, dir.path, read_only(), heard);
    Schema stored;
    REQUIRE(recovery.read_schema(stored).ok());
    MemoryTables tables(module);
    REQUIRE(recovery.load_images(stored, module, tables).ok());
    Status st = recovery.read_log();
    REQUIRE_MESSAGE(st.ok(), st.message);
    // Rows from the image (1, 2) and from puts (3) take the defaults; the
    // set of row 1's qty lands in the module's third column.
    CHECK(state_of(module, tables) == "items 1=new,11,true 2=new,20,true 3=new,30,true; notes; hits=7 count=4");
    CHECK(recovery.image_seq() == std::vector<uint64_t>{2, 0, 2});  // notes has no image
  }

  TEST_CASE("a table with a composite key recovers from its image and the log after it") {
    using namespace std::string_literals;
    TempDir dir;
    SystemIo io;
    {
      Writer w(io, dir.path, with_lines());
      w.entry(Payload().line_put(1, "a", 1, 10).line_put(1, "a\0"s, 1, 11).count(1));
      w.entry(Payload().line_put(1, "a", 2, 12).line_put(2, "", 0, 13).put(7, 70).count(2));
      w.table_image(0);
      w.table_image(1);
      w.vars_image();
      w.entry(Payload().line_set_qty(1, "a", 1, 20).line_remove(2, "", 0).count(3));
      w.entry(Payload().line_put(1, "a\0"s, 0, 14).count(4));
    }
    // Format 2 where a composite key is (the schema file, lines' image),
    // format 1 elsewhere (items' image, as before composite keys).
    CHECK(files::contents(dir.path + "/schema")[8] == 2);
    CHECK(files::contents(table_image_path(dir.path, "lines"))[8] == 2);
    CHECK(files::contents(table_image_path(dir.path, "items"))[8] == 1);
    auto r = recover(io, dir.path);
    REQUIRE_MESSAGE(r->log.ok(), r->log.message);
    CHECK(r->heard.said("image 1: save 2, 4 rows"));
    CHECK(r->schema == with_lines());
    // In key order, (w, d, o): "a" before "a\0" before anything longer.
    CHECK(r->state() == "items 7=70; lines 20=1,a,1 12=2,a,1 14=0,a\0,1 11=1,a\0,1; count=4"s);
    // And the same once more, from the log alone (no image of lines).
    std::filesystem::remove(table_image_path(dir.path, "lines"));
    auto again = recover(io, dir.path);
    REQUIRE_MESSAGE(again->log.ok(), again->log.message);
    CHECK(again->state() == r->state());
  }
}

}  // namespace
}  // namespace aup::storage

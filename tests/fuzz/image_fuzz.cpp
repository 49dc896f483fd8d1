// Fuzz target: image and schema file bytes (docs/store-format.md) through
// their readers: a table image read in its own layout (`aup replay`) and
// loaded into each table of two modules by column name (`aup run`: the
// bank's accounts and transfers, and tables.aup's number- and text-keyed
// tables) and of a schema of composite keys (num, text and mixed), a vars
// image, and the schema file. Each input is read as it is
// and resealed (header checksum, body length and body digest made to
// match, per the magic it starts with), so mutations reach the decoders.
// The files are in memory (fuzz::MemoryIo, emptied before each input).
//
// Oracles: a loaded table holds the rows the image counts, in key order,
// each under the key its row holds, and written as an image again it loads
// again with the same rows; a schema that reads can be held (replay's
// tables) and compared with a module's, and is written and read back; and
// no reader or writer leaves a file open.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/durability.h"
#include "tests/fuzz/fuzz_common.h"
#include "storage/image.h"
#include "storage/image_format.h"
#include "storage/key_values.h"
#include "storage/memory_tables.h"
#include "storage/schema_file.h"

namespace {

using namespace aup;
using storage::Status;
namespace imf = storage::image_format;

// Tables with composite keys: (w, d, o) over num, num, num; (name, at)
// over text, num; and (a, b) over two texts, declared after a field that
// is not in the key, so key order is not field order.
storage::Schema composite_keys() {
  using storage::FieldSchema;
  using storage::FieldType;
  auto field = [](const char* name, FieldType t) { return FieldSchema{name, t, false, {}}; };
  storage::Schema s;
  s.tables.push_back(storage::TableSchema{"lines", "Line",
                                          {field("w", FieldType::Num), field("d", FieldType::Num),
                                           field("o", FieldType::Num), field("qty", FieldType::Num)},
                                          {0, 1, 2}});
  s.tables.push_back(storage::TableSchema{"events", "Event",
                                          {field("name", FieldType::Text), field("at", FieldType::Num),
                                           field("note", FieldType::Text)},
                                          {0, 1}});
  s.tables.push_back(storage::TableSchema{"pairs", "Pair",
                                          {field("n", FieldType::Num), field("b", FieldType::Text),
                                           field("a", FieldType::Text)},
                                          {2, 1}});
  return s;
}

const std::vector<storage::Schema>& schemas() {
  static const auto* all = [] {
    auto* v = new std::vector<storage::Schema>;
    for (const char* path : {"examples/bank/bank.aup", "tests/programs/tables.aup"}) {
      v->push_back(runtime::schema_of(*fuzz::compile_project_file(path)));
    }
    v->push_back(composite_keys());
    return v;
  }();
  return *all;
}

// The store's directory, emptied before each input.
fuzz::MemoryIo& files() {
  static auto* io = new fuzz::MemoryIo("/fuzz");
  return *io;
}

constexpr char kSchemaMagic[8] = {'A', 'U', 'P', 'S', 'C', 'H', 'E', 'M'};

// Makes the checksums and the length of an image or schema file match.
void seal(std::vector<uint8_t>& b) {
  if (b.size() >= imf::kHeaderBytes + 8 && std::memcmp(b.data(), imf::kMagic, 8) == 0) {
    size_t body = b.size() - imf::kHeaderBytes - 8;
    fuzz::put64(b.data() + 32, body);
    fuzz::seal(b.data(), 0, 56, 56);
    fuzz::seal(b.data(), imf::kHeaderBytes, body, b.size() - 8);
  } else if (b.size() >= 32 && std::memcmp(b.data(), kSchemaMagic, 8) == 0) {
    size_t body = b.size() - 32;
    fuzz::put64(b.data() + 16, body);
    fuzz::seal(b.data(), 24, body, b.size() - 8);
  }
}

void release_texts(const storage::TableSchema& t, uint64_t* row) {
  for (uint32_t f = 0; f < t.fields.size(); ++f) {
    if (t.fields[f].type == storage::FieldType::Text) vm::release(reinterpret_cast<vm::TextObj*>(row[f]));
  }
}

// Rows in key order, each under the key its row holds, as many as counted.
void check_tree(const storage::TableSchema& t, vm::BTree& tree, uint64_t rows) {
  if (tree.size() != rows) fuzz::oracle_failed("a loaded image's row count is not its tree's");
  bool first = true;
  vm::Key last;
  const vm::KeySpec spec = storage::key_spec(t);
  tree.for_each(tree.root(), [&](const vm::Key& k, const uint64_t* row) {
    vm::HeldKey held(spec, row);
    if (vm::key_cmp(k, held.key()) != 0) fuzz::oracle_failed("a row is under a key other than its own");
    if (!first && !vm::key_less(last, k)) fuzz::oracle_failed("rows out of key order");
    first = false;
    last = k;
  });
}

void read_table(fuzz::MemoryIo& io, const std::string& path) {
  const std::string& dir = io.dir();
  storage::ImageRead own;
  (void)storage::read_table_image(io, path, own, [&](uint64_t* row) {
    release_texts(own.table, row);
    return Status::good();
  });
  for (const storage::Schema& schema : schemas()) {
    storage::MemoryTables tables(schema);
    for (uint32_t t = 0; t < schema.tables.size(); ++t) {
      const storage::TableSchema& target = schema.tables[t];
      storage::ImageRead info;
      uint64_t rows = 0;
      Status st = storage::load_table_image(io, path, target, tables.table(t), info, rows);
      if (!st.ok()) continue;
      check_tree(target, tables.table(t), rows);
      if (rows != info.rows) fuzz::oracle_failed("an image loaded other than the rows it counts");
      storage::ImageWritten written;
      st = storage::write_table_image(io, dir, target, tables.table(t), tables.table(t).root(), info.seq, written);
      if (!st.ok()) fuzz::oracle_failed("a loaded table cannot be written: " + st.message);
      storage::MemoryTables again(schema);
      storage::ImageRead info2;
      uint64_t rows2 = 0;
      st = storage::load_table_image(io, storage::table_image_path(dir, target.name), target, again.table(t), info2,
                                     rows2);
      if (!st.ok()) fuzz::oracle_failed("a written image does not load: " + st.message);
      if (rows2 != rows || info2.seq != info.seq) fuzz::oracle_failed("a written image loads other rows");
    }
  }
}

void read_vars(storage::Io& io, const std::string& path) {
  const storage::Schema& schema = schemas()[0];
  storage::MemoryTables tables(schema);
  storage::ImageRead info;
  (void)storage::read_vars_image(io, path, info, [&](const storage::VarSchema& v, uint64_t value) {
    int i = schema.var_index(v.name);
    if (i >= 0 && schema.vars[static_cast<size_t>(i)].type == v.type) {
      tables.set_var(static_cast<uint32_t>(i), value);
    } else if (v.type == storage::FieldType::Text) {
      vm::release(reinterpret_cast<vm::TextObj*>(value));
    }
  });
}

void read_schema(fuzz::MemoryIo& io) {
  const std::string& dir = io.dir();
  storage::Schema stored;
  if (!storage::read_schema_file(io, dir, stored).ok()) return;
  storage::MemoryTables tables(stored);
  for (const storage::Schema& schema : schemas()) (void)storage::compare_schemas(stored, schema);
  Status st = storage::write_schema_file(io, dir, stored);
  if (!st.ok()) fuzz::oracle_failed("a schema that reads cannot be written: " + st.message);
  storage::Schema back;
  st = storage::read_schema_file(io, dir, back);
  if (!st.ok()) fuzz::oracle_failed("a written schema does not read: " + st.message);
  if (back.tables.size() != stored.tables.size() || back.vars.size() != stored.vars.size()) {
    fuzz::oracle_failed("a written schema reads back other");
  }
}

void read_all(const std::vector<uint8_t>& bytes) {
  fuzz::MemoryIo& io = files();
  io.reset();
  io.put("schema", bytes.data(), bytes.size(), 0);
  std::string path = io.dir() + "/schema";
  read_table(io, path);
  read_vars(io, path);
  read_schema(io);
  if (io.open_descriptors() != 0) fuzz::oracle_failed("a reader or writer left a file open");
  io.reset();  // freed within the input, as libFuzzer's leak check expects
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1 << 20) return 0;
  std::vector<uint8_t> bytes(data, data + size);
  read_all(bytes);
  seal(bytes);
  // The same file gets the same verdict: an input sealed already is not read again.
  if (!std::equal(bytes.begin(), bytes.end(), data)) read_all(bytes);
  return 0;
}

// Fuzz target: log segment bytes (docs/store-format.md) through the log's
// recovery: which entries are the log, whether the end is a torn tail (cut)
// or damage (refused), and each entry's change records applied to the
// bank's tables (and a table of composite keys beside them, table 3 in a
// record's target: `lines`, keyed (w, d, o) over num, text, num) as `aup
// run` recovers them (and summarized as `aup replay
// --entries` does: a payload that does not summarize must not apply).
//
// The input is one or more segments, each starting with the segment magic
// (it splits there), put in a directory in memory (fuzz::MemoryIo, emptied
// before each input) as log-0, log-1, ... and zero-filled to the size its
// header gives, as a segment is allocated whole, up to 64 KiB: open reads
// and scans a segment whole (storage/log.cpp), and with segments of up to
// 1 MiB the fuzzer ran at less than half the rate for no more edges. A
// larger size leaves the segment as short as the input (refused as damage:
// shorter than its header says).
// Each input is opened three times: as it is; with every header checksum
// and entry digest made to match (so mutations reach the chain and the
// records); and with the entries' chain fields made to match too (a pass
// whose sealing changed no byte is not run again).
//
// Oracles: the tables hold their rows in key order, each under the key its
// row holds; and after an open that succeeded, one more entry appended and
// a read-only reopen must find every entry read before plus that one, and
// the same rows (the cut of a torn tail leaves a clean end); and every
// file the log opened is closed once it is gone, a refused open's too.
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/durability.h"
#include "tests/fuzz/fuzz_common.h"
#include "storage/key_values.h"
#include "storage/log.h"
#include "storage/memory_tables.h"
#include "storage/records.h"

namespace {

using namespace aup;
using storage::Status;
namespace lf = storage::log_format;

constexpr size_t kMaxSegments = 4;
constexpr uint64_t kMaxSegmentBytes = 1 << 16;

// The bank's schema and `lines`, whose key is not its fields' order.
storage::Schema bank_and_lines(const vm::Module& bank) {
  storage::Schema s = runtime::schema_of(bank);
  auto field = [](const char* name, storage::FieldType t) { return storage::FieldSchema{name, t, false, {}}; };
  s.tables.push_back(storage::TableSchema{"lines", "Line",
                                          {field("qty", storage::FieldType::Num), field("w", storage::FieldType::Num),
                                           field("d", storage::FieldType::Text), field("o", storage::FieldType::Num)},
                                          {1, 2, 3}});
  return s;
}

struct Bank {
  std::unique_ptr<vm::Module> module = fuzz::compile_project_file("examples/bank/bank.aup");
  storage::Schema schema = bank_and_lines(*module);
  storage::SchemaMap map = storage::map_schema(schema, schema);  // the stored layout is the module's
};

const Bank& bank() {
  static const Bank* b = new Bank;
  return *b;
}

// The log's directory, emptied before each input.
fuzz::MemoryIo& files() {
  static auto* io = new fuzz::MemoryIo("/fuzz");
  return *io;
}

// The input's segments: it splits before every segment magic.
std::vector<std::vector<uint8_t>> split(const uint8_t* data, size_t size) {
  std::string_view all(reinterpret_cast<const char*>(data), size);
  std::string_view magic(lf::kMagic, sizeof lf::kMagic);
  std::vector<std::vector<uint8_t>> out;
  size_t begin = 0;
  while (out.size() + 1 < kMaxSegments) {
    size_t next = all.find(magic, begin + 1);
    if (next == std::string_view::npos) break;
    out.emplace_back(data + begin, data + next);
    begin = next;
  }
  out.emplace_back(data + begin, data + size);
  return out;
}

enum class Seal { None, Digests, Chain };

// Makes each segment's header checksum and (as far as the lengths lead)
// its entries' digests match; with Chain, each entry's predecessor fields
// name the entry before it, across segments.
void seal(std::vector<std::vector<uint8_t>>& segments, Seal how) {
  uint64_t last_seq = 0, last_digest = 0;
  for (std::vector<uint8_t>& s : segments) {
    if (s.size() < lf::kHeaderBytes) continue;
    fuzz::seal(s.data(), 0, 56, 56);
    uint64_t generation = fuzz::get64(s.data() + 24);
    for (uint64_t off = lf::kHeaderBytes; off + lf::kEntryHeaderBytes <= s.size();) {
      uint8_t* head = s.data() + off;
      uint32_t len = fuzz::get32(head);
      if (len > s.size() - off - lf::kEntryHeaderBytes) break;
      bool end = true;
      for (uint32_t i = 0; i < lf::kEntryHeaderBytes; ++i) end = end && head[i] == 0;
      if (end) break;
      if (how == Seal::Chain) {
        fuzz::put64(head + 16, last_seq);
        fuzz::put64(head + 24, last_digest);
      }
      uint64_t digest = XXH3_64bits_withSeed(head + lf::kEntryHeaderBytes, len, XXH3_64bits_withSeed(head, 32, generation));
      fuzz::put64(head + 32, digest);
      last_seq = fuzz::get64(head + 8);
      last_digest = digest;
      off += lf::entry_bytes(len);
    }
  }
}

// Rows in key order, each under the key its row holds.
void check_tables(storage::MemoryTables& tables) {
  const storage::Schema& schema = bank().schema;
  for (uint32_t t = 0; t < schema.tables.size(); ++t) {
    const storage::TableSchema& ts = schema.tables[t];
    vm::BTree& tree = tables.table(t);
    bool first = true;
    vm::Key last;
    const vm::KeySpec spec = storage::key_spec(ts);
    tree.for_each(tree.root(), [&](const vm::Key& k, const uint64_t* row) {
      vm::HeldKey held(spec, row);
      if (vm::key_cmp(k, held.key()) != 0) fuzz::oracle_failed("a row is under a key other than its own");
      if (!first && !vm::key_less(last, k)) fuzz::oracle_failed("rows out of key order");
      first = false;
      last = k;
    });
  }
}

struct Opened {
  Status status;
  std::unique_ptr<storage::Log> log;
  storage::LogOpenReport report;
  std::unique_ptr<storage::MemoryTables> tables;
};

Opened open_log(storage::Io& io, bool read_only) {
  const Bank& b = bank();
  Opened o;
  o.tables = std::make_unique<storage::MemoryTables>(b.schema);
  std::vector<uint64_t> covered(b.schema.tables.size() + 1, 0);
  storage::Log::Options lo;
  lo.segment_bytes = 4096;
  lo.read_only = read_only;
  o.status = storage::Log::open(
      io, files().dir(), lo,
      [&](const storage::LogEntry& e) -> Status {
        storage::PayloadSummary summary;
        Status s = storage::summarize_payload(e.payload, b.schema, summary);
        Status a = storage::apply_payload(e.payload, b.schema, b.map, e.seq, covered, *o.tables);
        if (!s.ok() && a.ok()) fuzz::oracle_failed("a payload applies that does not summarize: " + s.message);
        return a;
      },
      o.log, o.report);
  check_tables(*o.tables);
  return o;
}

// Opens the segments, then (when that succeeded) appends and reopens.
void open_append_reopen(fuzz::MemoryIo& io) {
  Opened first = open_log(io, false);
  if (!first.status.ok()) {
    if (first.status.message.empty()) fuzz::oracle_failed("a refusal without a message");
    return;
  }
  uint64_t seq = first.log->last_seq() + 1;
  if (seq == 0) return;  // no save number after the last
  // One more entry (var 0 set to 7), as the next commit would write it.
  const uint8_t payload[] = {0, 1, 0, 7 << 2};
  Status st = first.log->append(seq, payload);
  if (st.ok()) st = first.log->sync();
  if (!st.ok()) return;  // no room for a segment, say: a clean refusal
  first.log.reset();
  Opened again = open_log(io, true);
  if (!again.status.ok()) fuzz::oracle_failed("a log that opened and took an entry is refused: " + again.status.message);
  if (again.report.entries != first.report.entries + 1) fuzz::oracle_failed("the reopened log lost or gained entries");
  for (uint32_t t = 0; t < bank().schema.tables.size(); ++t) {
    if (again.tables->table(t).size() != first.tables->table(t).size()) fuzz::oracle_failed("the reopened log has other rows");
  }
}

void recover(const std::vector<std::vector<uint8_t>>& segments) {
  fuzz::MemoryIo& io = files();
  io.reset();
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::vector<uint8_t>& s = segments[i];
    // A segment is allocated whole (its header's size) before it is used:
    // the seeds keep only the bytes up to the end marker.
    uint64_t whole = s.size() >= 48 ? fuzz::get64(s.data() + 40) : 0;
    io.put("log-" + std::to_string(i), s.data(), s.size(), whole <= kMaxSegmentBytes ? whole : 0);
  }
  open_append_reopen(io);
  if (io.open_descriptors() != 0) fuzz::oracle_failed("the log left a file open");
  io.reset();  // freed within the input, as libFuzzer's leak check expects
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1 << 20) return 0;
  std::vector<std::vector<uint8_t>> segments = split(data, size);
  recover(segments);
  // The same files get the same verdict: a pass whose sealing changed no
  // byte (the input was sealed already) is not run again.
  std::vector<std::vector<uint8_t>> before = segments;
  seal(segments, Seal::Digests);
  if (segments != before) recover(segments);
  before = segments;
  seal(segments, Seal::Chain);
  if (segments != before) recover(segments);
  return 0;
}

// Change records: the payload of one log entry, holding every change one
// committed batch made (docs/store-format.md has the grammar).
//
//   payload := group*
//   group   := target (varint: 0 for the vars, t+1 for table t) | count | item*
//   item    := (table) op (1 byte: 1 put, 2 set, 3 remove) | key |
//                put: every other field in order | set: n, (field, value)*n
//            | (vars) var number | value
//   key     := the key fields' values in key order (one value for a
//              one-field key, as before composite keys)
//
// A batch's changes are reduced to their net effect per row before writing:
// several sets of one row become one `set` of the fields that changed (with
// their final values); a row added (or replaced) and then changed becomes
// one `put` of the final row; a row added and removed again writes nothing.
// Replaying a `put` inserts or replaces.
//
// Rows are not found again to be encoded: a change noted with where it
// left the row (its leaf position and the tree's node_epoch() then) is
// read there while the tree's epoch is the same, which proves the leaf is
// still the live tree's (vm/btree.h); the row is looked for by key in that
// leaf (it may have moved within it) and found by a descent from the root
// only when it moved to another leaf, the epoch changed, or its position
// was not noted. Whether a row is there at all is its last change's (a
// remove: gone; anything else: there), since every change is noted.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vm/btree.h"
#include "storage/schema.h"
#include "storage/status.h"

namespace aup::storage {

class Encoder;  // storage/codec.h

// What the store reads and recovers: the runtime's tables and vars.
class Tables {
 public:
  virtual ~Tables() = default;
  virtual vm::BTree& table(uint32_t t) = 0;
  virtual uint64_t var(uint32_t v) const = 0;
  // Takes over `value` (a heap text for a text var), releasing the old one.
  virtual void set_var(uint32_t v, uint64_t value) = 0;
  // Whether apply_payload tells each row it changes (a replica's state,
  // whose indexes follow every entry it applies; at an open, indexes are
  // built once the log is replayed, and nothing is told): row_leaving()
  // with the row as it was before a change (a replaced, set or removed
  // row), row_entered() with it after (a put or set row).
  virtual bool follows_rows() const { return false; }
  virtual void row_leaving(uint32_t t, const uint64_t* row) {
    (void)t;
    (void)row;
  }
  virtual void row_entered(uint32_t t, const uint64_t* row) {
    (void)t;
    (void)row;
  }
};

// Where a change left its row: the leaf position and the tree's
// node_epoch() right after the change (leaf null: not known).
struct RowPlace {
  vm::BTree::Pos pos;
  uint64_t epoch = 0;
};

// Collects a batch's changes (in the order they happened) and writes their
// net effect.
class BatchEncoder {
 public:
  explicit BatchEncoder(const Schema& schema) : schema_(schema) {}

  enum class Op : uint8_t { Insert, Set, Remove, Replace };
  using Where = RowPlace;
  // Changes in the order they happened; `where` for an insert, a replace
  // or a set (a remove has no row left).
  void note(Op op, uint32_t table, const vm::Key& key, uint32_t field = 0, Where where = {});
  void note_var(uint32_t var);
  bool empty() const { return used_ == 0 && vars_.empty(); }

  // Appends the payload to `out` (the log's entry buffer, behind its
  // header: storage/log.h), reading final values from `tables`, which have
  // not changed since the last note; adds each table's bytes to
  // `bytes_per_table` (for the checkpoint policy; the vars' bytes at index
  // tables.size()). Once per batch: clear() before the next notes.
  void encode(Tables& tables, std::vector<uint8_t>& out, std::vector<uint64_t>& bytes_per_table);
  bool encoded() const { return encoded_; }
  void clear();
  // Rows encode() has read where their changes left them, and rows it
  // had to find again, since the encoder was made (tests; a measure of the
  // shortcut).
  uint64_t rows_read_in_place() const { return in_place_; }
  uint64_t rows_found_again() const { return found_again_; }

 private:
  struct Touched {
    uint32_t table = 0;
    uint32_t slot = 0;  // its place in slots_
    vm::Key key;
    bool existed_before = false;
    bool rewritten = false;        // inserted or replaced in this batch
    bool present = false;          // there after its last change (not removed)
    Where where;                   // where the last change left it, if noted
    std::vector<uint32_t> fields;  // set in this batch (unique)
  };
  // The touched row for (table, key), made when it is the first change.
  Touched& touch(uint32_t table, const vm::Key& key, bool existed_before);
  static bool has_change(const Touched& r, const uint64_t* row);
  const uint64_t* final_row(const vm::BTree& tree, const Touched& r);
  static void write_record(Encoder& g, const TableSchema& ts, const vm::KeySpec& spec, const Touched& r,
                           const uint64_t* row);
  void grow_slots();

  const Schema& schema_;
  // Rows touched, in first-touch order: the first used_ entries. The ones
  // after are kept with their fields' capacity, and slots_ keeps its size,
  // so a batch allocates nothing once a batch as large has been seen (the
  // owner notes every change of every event).
  std::vector<Touched> touched_;
  size_t used_ = 0;
  // Open addressing over touched_ (index + 1; 0: empty), a power of two at
  // least twice used_.
  std::vector<uint32_t> slots_;
  std::vector<uint32_t> vars_;
  // encode()'s: touched rows by table, and one table's changed rows with
  // their rows as found (null: removed).
  struct Changed {
    uint32_t touched;
    const uint64_t* row;
  };
  std::vector<std::vector<uint32_t>> by_table_;
  std::vector<Changed> changed_;
  bool encoded_ = false;  // encode() ran since the last clear()
  uint64_t in_place_ = 0, found_again_ = 0;
  uint64_t checked_ = 0;  // rows read, for the sampled check against find()
};

// How records written under one schema land in tables of another (after a
// migration that added fields or tables): per stored table, its number in
// the target and, per stored field, the target field. Identity when equal.
struct SchemaMap {
  std::vector<int> table;                 // stored table -> target table
  std::vector<std::vector<uint32_t>> field;  // stored table, stored field -> target field
  std::vector<std::vector<uint64_t>> defaults;  // target table's row with defaults (texts owned elsewhere)
  // Stored table -> the target's text fields no stored field fills: a
  // put gives only these their default text (a new heap text each).
  std::vector<std::vector<uint32_t>> unfilled_texts;
  std::vector<int> var;                   // stored var -> target var
  const Schema* target = nullptr;
};
// Stored columns, tables and vars to the target's, by name (a migration
// only adds: compare_schemas in storage/schema_file.h refuses anything
// else). The identity when the two are equal.
SchemaMap map_schema(const Schema& stored, const Schema& target);

// Applies one entry's payload (written under `stored`) to `tables`; a
// table (or the vars, index tables.size()) whose image already covers
// `seq` (covered[t] >= seq) is skipped. Refuses a payload that does not
// decode, naming the byte.
// Adds the bytes of each target table's records it applied (vars: at index
// tables.size()) to `bytes` when given.
Status apply_payload(std::span<const uint8_t> payload, const Schema& stored, const SchemaMap& map,
                     uint64_t seq, const std::vector<uint64_t>& covered, Tables& tables,
                     std::vector<uint64_t>* bytes = nullptr);

// Counts per record kind, for `aup replay --entries`.
struct PayloadSummary {
  struct Group {
    int target = -1;  // -1: vars; else the stored table
    uint64_t puts = 0, sets = 0, removes = 0, vars = 0, bytes = 0;
  };
  std::vector<Group> groups;
};
Status summarize_payload(std::span<const uint8_t> payload, const Schema& stored, PayloadSummary& out);

}  // namespace aup::storage

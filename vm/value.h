// Values in registers, rows and containers: one 64-bit word each, untyped.
//
//   num    the binary64 bits          bool   0 or 1
//   text   TextObj*                   array  ArrayObj*
//   record, object, event arguments   RecObj*
//   row    RowRef* (a table and a key, with a cached position)
//   view   ViewObj*                   iterator IterObj* (loop state)
//
// The compiler knows the type of every register at every instruction, so
// values carry no tags; numbers are never boxed. Arrays, records and
// objects are values (copied on change when shared, see SHARE/UNSHARE);
// they, row references, views and iterators live in the arena of the event
// or query that made them, and die with it.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "vm/btree.h"
#include "vm/key.h"
#include "vm/text.h"

namespace aup::vm {

using Value = uint64_t;

inline double as_num(Value v) { return std::bit_cast<double>(v); }
inline Value num_value(double d) { return std::bit_cast<Value>(d); }
inline bool as_bool(Value v) { return v != 0; }
inline Value bool_value(bool b) { return b ? 1 : 0; }
template <class T>
inline T* as_ptr(Value v) {
  return reinterpret_cast<T*>(v);
}
template <class T>
inline Value ptr_value(T* p) {
  return reinterpret_cast<Value>(p);
}

// `%`: C's fmod (exact; the sign of the dividend). Whole numbers below
// 2^53 take an integer division instead, which gives the same bits (fmod
// is exact, and copysign keeps -0 for a negative dividend) in a few cycles
// where glibc's fmod loops; vm/jit/ emits the same two paths.
inline double num_mod(double a, double b) {
  if (std::fabs(a) < 0x1p53 && std::fabs(b) < 0x1p53 && b != 0 && a == std::trunc(a) && b == std::trunc(b)) {
    return std::copysign(static_cast<double>(static_cast<int64_t>(a) % static_cast<int64_t>(b)), a);
  }
  return std::fmod(a, b);
}

enum class ObjKind : uint8_t { Array, Record, Object };

// The first member of every array, record and object.
struct ObjHeader {
  ObjKind kind;
  bool shared;  // held by more than one place: copy before changing
};

struct ArrayObj {
  ObjHeader h;
  bool aggregate_items;  // items are arrays, records or objects
  uint32_t len;
  uint32_t cap;
  Value* items;
};

// A record value (desc: record number), an object (desc: shape number) or
// an event's arguments (a record).
struct RecObj {
  ObjHeader h;
  uint16_t count;
  uint32_t desc;
  Value fields[1];  // `count` of them
};

struct RowRef {
  uint32_t table;
  bool private_path;  // every node on its path had one reference at `version`: writable in place
  uint64_t version;   // of the table when `pos` was found
  BTree::Pos pos;
  Key key;
};

// `index` is kNoIndex for a view of the table's own rows; else the view
// is of index `index`'s entries (vm/state.h), bounds and order theirs, and
// each entry stands for the row its primary key finds.
inline constexpr uint32_t kNoIndex = UINT32_MAX;

struct ViewObj {
  uint32_t table;
  bool empty;  // a bound is NaN, or lo >= hi
  uint32_t index;
  Key lo;      // inclusive
  Key hi;      // exclusive
};

// Rows: a cursor, forward; RowsDown: positions, from `at` down to `stop`.
enum class IterKind : uint8_t { Array, Rows, RowsDown };

struct IterObj {
  IterKind kind;
  bool started;
  bool bounded;  // Rows: stop at `hi`
  uint32_t index;  // Array: next item
  uint32_t table;
  uint32_t tree_index;  // Rows, RowsDown: kNoIndex, or the index iterated
  ArrayObj* array;
  Key hi;
  size_t at;    // RowsDown: the next position is at - 1
  size_t stop;  // RowsDown: the first position of the range
  // Rows over an index: the entry last visited, copied to the arena (a
  // field assignment in the body may move that entry, freeing its key),
  // and the index's version then; the cursor re-seeks from it.
  Key last;
  uint64_t seen;
  BTree::Cursor cursor;
};

// Bounds on what one event may build; passing one fails it with `budget`.
inline constexpr uint32_t kMaxArrayItems = 1u << 24;
inline constexpr uint32_t kMaxCallDepth = 200;
// Bytes of temporaries (texts, arrays, records, objects; all in the arena
// until the event or query ends) one event or query may make. Checked at
// every step and before each concatenation: without it a loop of
// concatenations grows the process by 16 MiB a round until it is killed.
inline constexpr uint64_t kMaxTempBytes = uint64_t{1} << 30;

}  // namespace aup::vm

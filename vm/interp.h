// The interpreter: runs a module's functions against a State.
//
// One loop dispatches every instruction (vm/opcodes.def), through computed
// goto where the compiler has it (GCC, Clang) and a switch otherwise; both
// come from the same case bodies (AUP_VM_SWITCH forces the switch). Calls
// push a frame on an explicit stack, never the C++ one, so a failure deep
// in helpers simply returns: no exceptions cross the loop. The caller
// rolls the State back to its mark when `run` fails.
//
// Limits: `step budget` steps per run (a step is a backward jump, a call,
// or one comparison `distinct` makes between records, which is quadratic;
// straight-line code is bounded by its length), call depth
// kMaxCallDepth, kMaxArrayItems per array, kMaxTextBytes per text,
// kMaxTempBytes of temporaries per run. Passing one fails the run with
// code `budget`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stdlib/builtins.h"
#include "vm/arena.h"
#include "vm/module.h"
#include "vm/native.h"
#include "vm/state.h"
#include "vm/value.h"

namespace aup::vm {

// The failure codes of docs/protocol.md that code can cause.
enum class ErrorCode : uint8_t {
  Failed,      // `fail`
  NotFound,    // a missing key, an empty table's first/last, a position past the end
  Duplicate,   // `add` of a key that exists
  StaleRow,    // a row reference whose row was removed
  OutOfRange,  // an array index outside the array, `pop` of an empty array
  NotFinite,   // storing a number that is not finite
  BadNumber,   // `num()` of text that is not a number
  Budget,      // a step, depth, array or text limit
};
std::string_view error_code_name(ErrorCode c);

struct Failure {
  ErrorCode code = ErrorCode::Failed;
  std::string message;  // ends with the source position, `(bank.aup:23:17)`
};

inline constexpr uint64_t kDefaultStepBudget = 10'000'000;

class Vm {
 public:
  // `m` must be prepared (Module::prepare); both must outlive the Vm.
  Vm(const Module& m, State& s);
  Vm(const Vm&) = delete;
  Vm& operator=(const Vm&) = delete;

  // Runs function `fn` with `args` as its first registers (a handler: the
  // event's argument record; a query or helper: its parameters). `now` is
  // the event's accept time. On success `*result` holds the return value
  // (unset for a function returning nothing).
  bool run(uint32_t fn, const Value* args, uint32_t argc, double now, Value* result);
  const Failure& failure() const { return failure_; }

  void set_step_budget(uint64_t steps) { step_budget_ = steps; }
  // Run functions as this native code (vm/jit/) instead of interpreting
  // them; null: interpret. It must be compiled from this Vm's module.
  void set_native(const NativeCode* code) { native_ = code; }
  uint64_t steps_taken() const { return steps_taken_; }

  // Temporaries of the current event or query; reset between them.
  Arena& arena() { return arena_; }
  void reset_arena() { arena_.reset(); }

  // Values for the runtime's JSON conversion (in the arena).
  RecObj* new_record(uint32_t record);  // fields at their defaults
  RecObj* new_object(uint32_t shape);
  ArrayObj* new_array(bool aggregate_items);
  bool push(ArrayObj* a, Value v);  // false at kMaxArrayItems
  ArrayObj* sized_array(uint32_t n, bool aggregate_items);  // n items, for the caller to fill
  TextObj* new_text(std::string_view s) { return arena_text(arena_, s); }

  // Adds record `rec` (table `table`'s record, in the arena) as a row, as
  // `t.add` does: finite numbers, texts moved to the heap, -0 keys made
  // 0, the key and every unique index checked (`duplicate`), the change
  // journaled. False with failure() set. `aup load` adds its rows so
  // (cli/rows.h), the one way rows enter a table.
  bool add_row(uint32_t table, Value rec) { return tadd(table, rec, false); }
  // A row's values, or null if the row was removed.
  const Value* row_values(RowRef* r);
  // Every row of a view, in key order.
  void view_rows(const ViewObj* v, std::vector<const Value*>& out);

  const Module& module() const { return module_; }
  State& state() { return *state_; }
  // Runs later functions against another state of the same module (a
  // query thread moving to the newest snapshot). Not during a run.
  void rebind(State& s) { state_ = &s; }

 private:
  friend struct NativeAbi;  // the runtime calls of native code (native_abi.cpp)

  struct Frame {
    const Function* fn;
    const Instr* pc;
    Value* regs;
  };

  bool execute(const Function* fn, Value* regs, Value* result);
  bool fail(ErrorCode code, std::string message);
  std::string position(const Function* fn, const Instr* pc) const;
  std::string key_text(uint32_t table, const Key& k) const;

  // Instruction bodies too long to sit in the loop.
  Key key_of(uint32_t table, Value v) const;
  bool make_key(Value* r, uint32_t text_mask, uint32_t count, bool prefix);
  RowRef* make_row(uint32_t table, BTree::Pos pos, const Key& key);
  const Value* row_read(RowRef* r);
  Value* row_write(RowRef* r);
  template <class Where>
  bool stored(uint32_t type, Value v, Value* out, Where where);
  bool tget(uint32_t table, Value* r);
  bool tadd(uint32_t table, Value rec, bool replace);
  bool tdel(uint32_t table, Value key);
  bool tat(uint32_t table, Value* r);
  bool tend(uint32_t table, bool last, Value* r);
  ViewObj* make_view(uint32_t table, Value lo, Value hi);
  ViewObj* make_index_view(uint32_t index, Value lo, Value hi, bool whole);
  const BTree& tree_of(uint32_t table, uint32_t index) const;
  std::string view_name(const ViewObj* v) const;
  RowRef* tree_row_at(uint32_t table, uint32_t index, size_t p);
  std::pair<size_t, size_t> view_span(const ViewObj* v) const;
  uint64_t view_count(const ViewObj* v) const;
  bool view_end(const ViewObj* v, bool last, Value* r);
  bool view_at(const ViewObj* v, Value position, Value* r);
  bool iget(uint32_t index, Value* r);
  IterObj* table_iter(uint32_t table, bool down);
  IterObj* view_iter(const ViewObj* v, bool down);
  template <class F>
  void each_view_row(const ViewObj* v, F&& f);
  bool unique_ok(uint32_t table, const Value* row, const Key& k, uint32_t field);
  bool rset_indexed(RowRef* ref, Value* row, uint32_t field, Value nv);
  bool rget(Value row, uint32_t field, Value* r);
  bool rset(Value row, uint32_t field, Value v);
  bool rowval(Value row, Value* r);
  bool setv(uint32_t var, Value v);
  bool callb(uint32_t id, Value* args, uint32_t argc);
  bool builtin_failed(const stdlib::Builtin& b, stdlib::BuiltinStatus s, const stdlib::BuiltinArg* in,
                      const stdlib::BuiltinResult& out);
  bool builtin_result(const stdlib::Builtin& b, Value* args, const stdlib::BuiltinResult& out);
  bool text_result(std::string_view t, Value* r);
  bool texts_result(const std::vector<std::string_view>& parts, Value* r);
  // The row, or none (0): TFIND and IFIND, and under TGET and IGET.
  Value tfind(uint32_t table, Value key);
  Value ifind(uint32_t index, const Value* bounds);
  ArrayObj* sort(const ArrayObj* a, const TextObj* spec);
  bool concat(Value a, Value b, Value* r);
  bool index_of(const ArrayObj* a, Value i, uint32_t* out);
  Value copy_obj(Value v);
  // `==` on values: an explicit stack of the containers being compared,
  // not the C++ stack, since values nest without bound through arrays (a
  // record may hold an array of itself).
  struct EqFrame {
    const RecObj* rx;     // two records or objects, field by field; or
    const RecObj* ry;
    const ArrayObj* ax;   // two arrays of items of type `item_type`
    const ArrayObj* ay;
    uint32_t item_type;
    uint32_t next;        // the next field or item to compare
  };
  bool rec_equal(const RecObj* a, const RecObj* b) const;
  bool equal_open(Value a, Value b, uint32_t type) const;  // scalars now, containers onto the stack
  bool equal_walk() const;
  bool distinct(const ArrayObj* a, ItemKind kind, Value* r);
  void distinct_nums(const ArrayObj* a, ArrayObj* out);
  bool next(IterObj* it, Value* item);
  bool next_entry(IterObj* it, const BTree& t, Value* item);
  Value varr(const ViewObj* v);

  const Module& module_;
  State* state_;
  Arena arena_;
  std::vector<Value> regs_;
  std::vector<Frame> frames_;
  mutable std::vector<EqFrame> eq_stack_;  // equal_walk's; empty between uses
  std::vector<Value> distinct_slots_;     // distinct_nums' table
  // Per record and shape: the fields holding arrays, records or objects
  // (marked shared when their holder is copied), and record defaults.
  std::vector<std::vector<uint32_t>> record_aggregates_;
  std::vector<std::vector<uint32_t>> shape_aggregates_;
  std::vector<std::vector<Value>> record_defaults_;
  std::vector<TextObj*> default_texts_;  // owned
  Failure failure_;
  // callb's buffers, kept between calls: a text result is built in
  // scratch_, a split's pieces in parts_, an array argument read into
  // texts_in_ or nums_in_.
  std::string scratch_;
  std::vector<std::string_view> parts_;
  std::vector<std::string_view> texts_in_;
  std::vector<double> nums_in_;
  // The steps left, the event's time and the call depth, where native code
  // reads them; the interpreter uses the same fields.
  NativeCtx ctx_{};
  std::vector<const uint64_t*> constants_;  // ctx_.constants: each function's kvalues
  const NativeCode* native_ = nullptr;
  uint64_t step_budget_ = kDefaultStepBudget;
  uint64_t steps_taken_ = 0;

 public:
  ~Vm();
};

}  // namespace aup::vm

// The runtime calls native code makes (vm/native.h). Each is a thin door
// into the same Vm member the interpreter's instruction uses, so a table
// operation, a text or a failure message is one piece of code under both
// engines, and their outputs agree byte for byte.
//
// Conventions, the same for every entry: the first argument is the
// NativeCtx; values are 64-bit words (vm/value.h); flags are uint32_t (0 or
// 1: no reliance on how a C++ bool is passed); a call that can fail
// returns 0 (a null Value, a null pointer or 0 as uint32_t) after putting
// the failure in the Vm, and the generated code then calls `fail_at` with
// the instruction's position and returns false.
#include <fmt/format.h>

#include <cmath>

#include "vm/interp.h"
#include "vm/native.h"

namespace aup::vm {

struct NativeAbi {
  static Vm& vm(NativeCtx* c) { return *c->vm; }

  // ---- failures
  // Appends the position of instruction `instr` of function `fn`, as the
  // interpreter's `failed:` label does for the instruction that failed.
  static void fail_at(NativeCtx* c, uint32_t fn, uint32_t instr) {
    const Function& f = vm(c).module_.functions[fn];
    LineEntry e = f.position(instr);
    vm(c).failure_.message += fmt::format(" ({}:{}:{})", vm(c).module_.source_name, e.line, e.col);
  }
  static void fail_steps(NativeCtx* c) {
    vm(c).fail(ErrorCode::Budget, fmt::format("the step budget ({} steps) ran out", vm(c).step_budget_));
  }
  static void fail_temp(NativeCtx* c) {
    vm(c).fail(ErrorCode::Budget, fmt::format("temporary values would pass {} MiB", kMaxTempBytes >> 20));
  }
  static void fail_depth(NativeCtx* c) {
    vm(c).fail(ErrorCode::Budget, fmt::format("calls nested deeper than {}", kMaxCallDepth));
  }
  static void fail_text(NativeCtx* c, Value text) {
    vm(c).fail(ErrorCode::Failed, std::string(as_ptr<TextObj>(text)->view()));
  }
  // An index that index_of refused (the generated code checked it inline).
  static void fail_index(NativeCtx* c, Value array, Value index) {
    uint32_t k;
    bool ok = vm(c).index_of(as_ptr<ArrayObj>(array), index, &k);
    assert(!ok && "fail_index of an index in range");
    (void)ok;
  }
  static void fail_pop(NativeCtx* c) { vm(c).fail(ErrorCode::OutOfRange, "pop of an empty array"); }

  // ---- values
  static Value copy_obj(NativeCtx* c, Value v) { return vm(c).copy_obj(v); }
  static Value concat(NativeCtx* c, Value a, Value b) {
    Value r = 0;
    return vm(c).concat(a, b, &r) ? r : 0;
  }
  static uint32_t text_eq(Value a, Value b) { return equal(as_ptr<TextObj>(a), as_ptr<TextObj>(b)); }
  static int32_t text_cmp(Value a, Value b) { return compare(as_ptr<TextObj>(a), as_ptr<TextObj>(b)); }
  static uint32_t rec_equal(NativeCtx* c, Value a, Value b) {
    return vm(c).rec_equal(as_ptr<RecObj>(a), as_ptr<RecObj>(b));
  }
  static uint32_t callb(NativeCtx* c, uint32_t id, Value* args, uint32_t argc) {
    return vm(c).callb(id, args, argc);
  }
  static uint32_t make_key(NativeCtx* c, Value* parts, uint32_t text_mask, uint32_t count, uint32_t prefix) {
    return vm(c).make_key(parts, text_mask, count, prefix != 0);
  }
  static Value newrec(NativeCtx* c, uint32_t record) { return ptr_value(vm(c).new_record(record)); }
  static Value newobj(NativeCtx* c, uint32_t shape) { return ptr_value(vm(c).new_object(shape)); }
  static Value newarr(NativeCtx* c, uint32_t aggregate) { return ptr_value(vm(c).new_array(aggregate != 0)); }
  // Appends to an array already private (the code copied it if shared).
  static uint32_t push(NativeCtx* c, Value array, Value v) {
    if (vm(c).push(as_ptr<ArrayObj>(array), v)) return 1;
    vm(c).fail(ErrorCode::Budget, fmt::format("an array would hold more than {} items", kMaxArrayItems));
    return 0;
  }
  static Value aiter(NativeCtx* c, Value array) {
    auto* arr = as_ptr<ArrayObj>(array);
    arr->h.shared = true;  // as AITER: the loop holds the array too
    auto* it = vm(c).arena_.make<IterObj>();
    it->kind = IterKind::Array;
    it->array = arr;
    it->index = 0;
    return ptr_value(it);
  }
  static Value distinct(NativeCtx* c, Value array, uint32_t kind) {
    Value r = 0;
    return vm(c).distinct(as_ptr<ArrayObj>(array), static_cast<ItemKind>(kind), &r) ? r : 0;
  }
  static uint32_t next(NativeCtx* c, Value iter, Value* item) { return vm(c).next(as_ptr<IterObj>(iter), item); }

  // ---- vars
  static Value getv(NativeCtx* c, uint32_t var) { return vm(c).state_->var(var); }
  static uint32_t setv(NativeCtx* c, uint32_t var, Value v) { return vm(c).setv(var, v); }

  // ---- tables, rows, views
  static Value tget(NativeCtx* c, uint32_t table, Value key) {
    Value r = key;
    return vm(c).tget(table, &r) ? r : 0;
  }
  static uint32_t thas(NativeCtx* c, uint32_t table, Value key) {
    return vm(c).state_->table(table).find(vm(c).key_of(table, key)) != nullptr;
  }
  static uint32_t tadd(NativeCtx* c, uint32_t table, Value rec) { return vm(c).tadd(table, rec, false); }
  static uint32_t tput(NativeCtx* c, uint32_t table, Value rec) { return vm(c).tadd(table, rec, true); }
  static uint32_t tdel(NativeCtx* c, uint32_t table, Value key) { return vm(c).tdel(table, key); }
  static Value tat(NativeCtx* c, uint32_t table, Value position) {
    Value r = position;
    return vm(c).tat(table, &r) ? r : 0;
  }
  static Value tcount(NativeCtx* c, uint32_t table) {
    return num_value(static_cast<double>(vm(c).state_->table(table).size()));
  }
  static Value tend(NativeCtx* c, uint32_t table, uint32_t last) {
    Value r = 0;
    return vm(c).tend(table, last != 0, &r) ? r : 0;
  }
  static Value tview(NativeCtx* c, uint32_t table, Value lo, Value hi) {
    return ptr_value(vm(c).make_view(table, lo, hi));
  }
  static Value titer(NativeCtx* c, uint32_t table) { return ptr_value(vm(c).table_iter(table, false)); }
  static Value titerd(NativeCtx* c, uint32_t table) { return ptr_value(vm(c).table_iter(table, true)); }
  static const Value* row_read(NativeCtx* c, Value row) { return vm(c).row_read(as_ptr<RowRef>(row)); }
  static uint32_t rset(NativeCtx* c, Value row, uint32_t field, Value v) { return vm(c).rset(row, field, v); }
  static Value rowval(NativeCtx* c, Value row) {
    Value r = 0;
    return vm(c).rowval(row, &r) ? r : 0;
  }
  static Value vcount(NativeCtx* c, Value view) {
    return num_value(static_cast<double>(vm(c).view_count(as_ptr<ViewObj>(view))));
  }
  static uint32_t vempty(NativeCtx* c, Value view) { return vm(c).view_count(as_ptr<ViewObj>(view)) == 0; }
  static Value vend(NativeCtx* c, Value view, uint32_t last) {
    Value r = 0;
    return vm(c).view_end(as_ptr<ViewObj>(view), last != 0, &r) ? r : 0;
  }
  static Value viter(NativeCtx* c, Value view) { return ptr_value(vm(c).view_iter(as_ptr<ViewObj>(view), false)); }
  static Value viterd(NativeCtx* c, Value view) { return ptr_value(vm(c).view_iter(as_ptr<ViewObj>(view), true)); }
  static Value vat(NativeCtx* c, Value view, Value position) {
    Value r = 0;
    return vm(c).view_at(as_ptr<ViewObj>(view), position, &r) ? r : 0;
  }
  static Value iview(NativeCtx* c, uint32_t index, Value lo, Value hi) {
    return ptr_value(vm(c).make_index_view(index, lo, hi, false));
  }
  static Value iall(NativeCtx* c, uint32_t index) { return ptr_value(vm(c).make_index_view(index, 0, 0, true)); }
  static Value iget(NativeCtx* c, uint32_t index, Value lo, Value hi) {
    Value r[2] = {lo, hi};
    return vm(c).iget(index, r) ? r[0] : 0;
  }
  static Value tfind(NativeCtx* c, uint32_t table, Value key) { return vm(c).tfind(table, key); }
  static Value ifind(NativeCtx* c, uint32_t index, Value lo, Value hi) {
    Value bounds[2] = {lo, hi};
    return vm(c).ifind(index, bounds);
  }
  static Value sort(NativeCtx* c, Value array, Value keys) {
    return ptr_value(vm(c).sort(as_ptr<ArrayObj>(array), as_ptr<TextObj>(keys)));
  }
  static Value varr(NativeCtx* c, Value view) { return vm(c).varr(as_ptr<ViewObj>(view)); }
};

namespace {

template <class F>
void* address(F* f) {
  return reinterpret_cast<void*>(f);
}

}  // namespace

const std::vector<NativeSymbol>& native_symbols() {
  // Built once, read-only after: the names vm/jit/ declares and calls.
  static const std::vector<NativeSymbol> symbols = {
#define AUP_NATIVE(name) {"aup_" #name, address(&NativeAbi::name)}
      AUP_NATIVE(fail_at),  AUP_NATIVE(fail_steps), AUP_NATIVE(fail_temp), AUP_NATIVE(fail_depth),
      AUP_NATIVE(fail_text), AUP_NATIVE(fail_index), AUP_NATIVE(fail_pop),  AUP_NATIVE(copy_obj),
      AUP_NATIVE(concat),   AUP_NATIVE(text_eq),    AUP_NATIVE(text_cmp),  AUP_NATIVE(rec_equal),
      AUP_NATIVE(callb),    AUP_NATIVE(newrec),     AUP_NATIVE(newobj),    AUP_NATIVE(newarr),
      AUP_NATIVE(push),     AUP_NATIVE(aiter),      AUP_NATIVE(distinct),  AUP_NATIVE(next),
      AUP_NATIVE(getv),     AUP_NATIVE(setv),       AUP_NATIVE(tget),      AUP_NATIVE(thas),
      AUP_NATIVE(tadd),     AUP_NATIVE(tput),       AUP_NATIVE(tdel),      AUP_NATIVE(tat),
      AUP_NATIVE(tcount),   AUP_NATIVE(tend),       AUP_NATIVE(tview),     AUP_NATIVE(titer),
      AUP_NATIVE(row_read), AUP_NATIVE(rset),       AUP_NATIVE(rowval),    AUP_NATIVE(vcount),
      AUP_NATIVE(vempty),   AUP_NATIVE(vend),       AUP_NATIVE(viter),     AUP_NATIVE(varr),
      AUP_NATIVE(make_key), AUP_NATIVE(titerd),     AUP_NATIVE(viterd),    AUP_NATIVE(vat),
      AUP_NATIVE(iview),    AUP_NATIVE(iall),       AUP_NATIVE(iget),      AUP_NATIVE(tfind),
      AUP_NATIVE(ifind),    AUP_NATIVE(sort),
#undef AUP_NATIVE
  };
  return symbols;
}

}  // namespace aup::vm

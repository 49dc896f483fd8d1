// The checker's internal state, shared by check_decls.cpp (declarations,
// types, effects) and check_body.cpp (statements and expressions).
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/checker.h"
#include "compiler/suggest.h"
#include "stdlib/builtins.h"

namespace aup::detail {

enum class GlobalKind : uint8_t { Record, Table, Var, Event, Query, Fn };

struct Global {
  GlobalKind kind;
  uint32_t index;  // into the Program list of that kind (Query, Fn: functions)
  Pos pos;
};

// A `for` over a table or view that is running at this point.
struct Iteration {
  const TableInfo* table;
  Pos pos;
};

// A call of a helper, kept until effects are known for every function.
struct CallSite {
  FunctionInfo* caller;
  FunctionInfo* callee;
  Pos pos;
  uint32_t width;
  std::vector<Iteration> iterating;
};

struct Scope {
  std::vector<std::pair<Sym, uint32_t>> locals;  // name, index into FunctionInfo::locals
  uint32_t slot_base = 0;
};

struct Loop {
  bool has_break = false;
};

// Per-function state while its body is checked.
struct FnState {
  FunctionInfo* fn = nullptr;
  Sym args_name = 0;                 // Handler: the event's name
  const Type* args_type = nullptr;   // Handler: the argument record (Error if unknown)
  std::vector<Scope> scopes;
  std::vector<Loop> loops;
  std::vector<Iteration> iterating;
  uint32_t live_slots = 0;
  bool too_many_locals = false;
  // Query and Handler results.
  const Type* result = nullptr;
  Pos result_pos;
  bool bare_return = false;
  Pos bare_return_pos;
  std::unordered_set<Sym> unknown_reported;
};

class Checker {
 public:
  Checker(const SourceFile& file, Interner& names, Ast& ast, TypeTable& types, Program& program,
          Diagnostics& diags)
      : file_(file), names_(names), ast_(ast), types_(types), program_(program), diags_(diags) {}

  void run();

 private:
  // ---- check_decls.cpp ----
  void declare_globals();
  void declare(Decl* d);
  bool too_many_decls(const Decl* d, size_t n, std::string_view pool);
  bool add_record_info(Decl* d, uint32_t& index);
  bool add_decl_info(Decl* d, uint32_t& index);
  bool check_new_name(Sym name, Pos pos, uint32_t width, std::string_view what);
  void resolve_record_fields(RecordInfo& r);
  void check_record_cycles();
  void resolve_table(TableInfo& t);
  // How a field list's messages name it: "a key" / "an index", ...
  struct FieldListWords {
    std::string_view list, element, in, owner, rows_of;
  };
  bool resolve_field_list(const Decl* d, const RecordInfo& r, const FieldListWords& words,
                          std::vector<uint32_t>& fields, std::vector<const Type*>& types);
  void resolve_index(Decl* d);
  const Type* check_index_subscripts(Expr* e, const IndexInfo& x);
  void resolve_var(VarInfo& v);
  void declare_handler(Decl* d);
  void resolve_signature(FunctionInfo& f);
  void check_default(Expr* e, const Type* t, std::string_view what);
  // `rows`: whether a table's name may stand for a row of it here (the type
  // of a local, a helper's parameter or result), or only values may.
  const Type* resolve_type(TypeExpr* t, bool rows = false);
  void close_effects();
  void report_effect_violations();
  const Global* find_global(Sym name) const;
  std::vector<std::string_view> global_names(bool (*keep)(GlobalKind)) const;
  static std::string_view kind_noun(GlobalKind k);

  // ---- check_body.cpp ----
  void check_function(FunctionInfo& f);
  bool check_block(Block* b);
  bool check_stmt(Stmt* s);
  void check_let(Stmt* s);
  void check_assign(Stmt* s);
  bool assignable_name(const Expr* target);
  bool assignable_field(Expr* target);
  void check_for(Stmt* s);
  void check_return(Stmt* s);
  void check_expr_stmt(Stmt* s);
  void check_condition(Expr* e, std::string_view what);

  const Type* check_expr(Expr* e, const Type* expected);
  const Type* check_value(Expr* e, const Type* expected);
  const Type* check_name(Expr* e);
  const Type* check_unary(Expr* e);
  const Type* check_binary(Expr* e);
  const Type* check_range(Expr* e);
  const Type* check_field(Expr* e);
  const Type* check_record_field(Expr* e, const Type* base);
  const Type* check_object_field(Expr* e, const Type* base);
  const Type* check_table_index(Expr* e, const TableInfo& t);
  std::string key_names(const TableInfo& t) const;
  std::string key_context(const TableInfo& t, size_t i) const;
  void check_key_args(Expr* e, const TableInfo& t, std::string_view callee);
  const Type* check_index(Expr* e);
  const Type* check_call(Expr* e);
  const Type* check_fn_call(Expr* e, FunctionInfo& callee);
  const Type* check_builtin_call(Expr* e, const stdlib::Builtin& b);
  const Type* check_method(Expr* e);
  const Type* check_table_method(Expr* e, const TableInfo& t);
  const Type* check_array_method(Expr* e, const Type* array);
  stdlib::Ty array_receiver(const Type* array) const;
  bool method_elsewhere(const Expr* callee, stdlib::Ty receiver, const Type* self);
  const Type* check_text_method(Expr* e);
  const Type* check_method_builtin(Expr* e, const stdlib::Builtin& b, const Type* self);
  const Type* builtin_type(stdlib::Ty t, const Type* self);
  const Type* check_sorted(Expr* e, const Type* array);
  const Type* check_index_get(Expr* e, const Type* view);
  bool check_if_let(Stmt* s);
  const Type* check_record_lit(Expr* e);
  const Type* check_object_lit(Expr* e, const Type* expected);
  const Type* check_array_lit(Expr* e, const Type* expected);
  void check_args(Expr* call, std::string_view callee, const std::vector<const Type*>& params,
                  const std::vector<Sym>* param_names);
  bool check_arg_count(Expr* call, std::string_view callee, size_t min, size_t max);
  bool check_place(Expr* e);

  void push_scope();
  void pop_scope();
  uint32_t declare_local(Sym name, Pos pos, const Type* type, bool param, bool readonly);
  const LocalInfo* find_local(Sym name) const;
  bool local_name_ok(Sym name, Pos pos);
  void report_unknown(Expr* e, std::string_view what);

  void note_write(Pos pos, uint32_t width, std::string what);
  void note_membership(const TableInfo& t, Expr* e, std::string_view method);

  bool assignable(const Type* from, const Type* to) const;
  void mismatch(Pos pos, uint32_t width, std::string_view context, const Type* expected,
                const Type* found, bool hints = true);

  // ---- shared ----
  void error(Pos pos, uint32_t width, std::string message) {
    diags_.error(pos, width, std::move(message));
  }
  void error(Pos pos, std::string message) { diags_.error(pos, 1, std::move(message)); }
  std::string_view str(Sym s) const { return names_.str(s); }
  std::string tname(const Type* t) const { return type_name(t, names_); }
  static std::string at(Pos p) { return fmt::format("{}:{}", p.line, p.col); }

  const SourceFile& file_;
  Interner& names_;
  Ast& ast_;
  TypeTable& types_;
  Program& program_;
  Diagnostics& diags_;
  std::unordered_map<Sym, Global> globals_;
  std::vector<CallSite> calls_;
  FnState* fs_ = nullptr;  // the function being checked
  const Expr* maybe_ok_ = nullptr;  // the value of the `if let` being checked: may be a MaybeRow
};

}  // namespace aup::detail

// Bodies: statements, expressions, locals, control flow, and the effects
// each function has on state.
#include <algorithm>

#include "compiler/checker_impl.h"

namespace aup {
namespace detail {

namespace {

bool is_true_literal(const Expr* e) { return e && e->kind == ExprKind::Bool && e->boolean; }

std::string_view binary_spelling(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::And: return "and";
    case BinaryOp::Or: return "or";
  }
  return "?";
}

constexpr std::string_view kTableMembers[] = {"count", "first", "last", "has", "get",
                                              "add",   "put",   "remove", "at"};
constexpr std::string_view kViewMembers[] = {"count", "first", "last", "empty", "at"};
constexpr std::string_view kArrayMembers[] = {"count", "push", "pop"};

template <size_t N>
std::vector<std::string_view> as_list(const std::string_view (&a)[N]) {
  return std::vector<std::string_view>(a, a + N);
}

std::string join_names(const std::vector<std::string_view>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) s += i + 1 == names.size() ? " and " : ", ";
    s += "`";
    s += names[i];
    s += "`";
  }
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------
// functions, scopes, locals

void Checker::check_function(FunctionInfo& f) {
  FnState state;
  state.fn = &f;
  fs_ = &state;
  const Decl* d = f.decl;
  push_scope();
  if (f.kind == FnKind::Handler) {
    state.args_name = f.name;
    state.args_type = f.event == UINT32_MAX ? types_.error()
                                            : program_.events[f.event]->args->type;
  } else {
    // Parameters were resolved with the signature (resolve_signature).
    for (uint32_t i = 0; i < f.param_count; ++i) {
      state.scopes.back().locals.emplace_back(f.locals[i].name, i);
    }
    state.live_slots = f.param_count;
  }
  if (!d->body) {  // a broken signature: the body was not parsed
    pop_scope();
    f.result = f.result ? f.result : types_.error();
    fs_ = nullptr;
    return;
  }
  bool falls_through = check_block(d->body);
  pop_scope();

  const Pos end = d->body->end;
  if (f.kind == FnKind::Query) {
    if (!state.result && !d->body_had_errors) {
      error(f.pos, fmt::format("query `{}` never returns a value; a query must `return` one",
                               str(f.name)));
    } else if (falls_through && !d->body_had_errors) {
      error(end, fmt::format("query `{}` can reach its end without returning a value",
                             str(f.name)));
    }
    f.result = state.result ? state.result : types_.error();
  } else if (f.kind == FnKind::Handler) {
    if (state.result && falls_through && !d->body_had_errors) {
      error(end, fmt::format("handler `{}` returns a value at {} but can also reach its end "
                             "without one",
                             str(f.name), at(state.result_pos)));
    }
    f.result = state.result ? state.result : types_.void_();
  } else if (!f.result->is(TypeKind::Void) && falls_through && !d->body_had_errors) {
    error(end, fmt::format("`{}` can reach its end without returning a `{}`", str(f.name),
                           tname(f.result)));
  }
  fs_ = nullptr;
}

void Checker::push_scope() {
  Scope s;
  s.slot_base = fs_->live_slots;
  fs_->scopes.push_back(std::move(s));
}

// Slots of a closed scope are reused by the next one: the frame holds the
// most locals alive at once, not every local ever declared.
void Checker::pop_scope() {
  fs_->live_slots = fs_->scopes.back().slot_base;
  fs_->scopes.pop_back();
}

const LocalInfo* Checker::find_local(Sym name) const {
  for (auto s = fs_->scopes.rbegin(); s != fs_->scopes.rend(); ++s) {
    for (const auto& [sym, index] : s->locals) {
      if (sym == name) return &fs_->fn->locals[index];
    }
  }
  return nullptr;
}

// A local may not reuse a top-level name, a built-in, the handler's
// argument name, or a local already visible in the function.
bool Checker::local_name_ok(Sym name, Pos pos) {
  uint32_t width = static_cast<uint32_t>(str(name).size());
  if (!check_new_name(name, pos, width, "local")) return false;
  if (const Global* g = find_global(name)) {
    error(pos, width,
          fmt::format("`{}` is {} (declared at {}); a local may not take a top-level name",
                      str(name), kind_noun(g->kind), at(g->pos)));
    return false;
  }
  if (fs_->args_name == name) {
    error(pos, width,
          fmt::format("`{}` names this handler's arguments; choose another name", str(name)));
    return false;
  }
  if (const LocalInfo* l = find_local(name)) {
    error(pos, width, fmt::format("`{}` is already declared at {}", str(name), at(l->pos)));
    return false;
  }
  return true;
}

uint32_t Checker::declare_local(Sym name, Pos pos, const Type* type, bool param, bool readonly) {
  FunctionInfo& f = *fs_->fn;
  if (fs_->live_slots >= kMaxLocals) {
    if (!fs_->too_many_locals) {
      error(pos, fmt::format("too many locals alive at once in `{}` (limit {})", str(f.name),
                             kMaxLocals));
    }
    fs_->too_many_locals = true;
    // Keep checking with a shared overflow slot; no code is generated.
    fs_->live_slots = kMaxLocals - 1;
  }
  LocalInfo l;
  l.name = name;
  l.pos = pos;
  l.type = type;
  l.slot = fs_->live_slots++;
  l.param = param;
  l.readonly = readonly;
  f.frame_slots = std::max(f.frame_slots, fs_->live_slots);
  f.locals.push_back(l);
  fs_->scopes.back().locals.emplace_back(name, static_cast<uint32_t>(f.locals.size() - 1));
  return l.slot;
}

void Checker::report_unknown(Expr* e, std::string_view what) {
  if (!fs_->unknown_reported.insert(e->sym).second) return;
  // A local of that name whose block has ended explains it best.
  for (const LocalInfo& l : fs_->fn->locals) {
    if (l.name != e->sym || l.pos.offset >= e->pos.offset) continue;
    error(e->pos, e->width,
          fmt::format("unknown {} `{}`: the `{}` declared at {} is out of scope here (its block "
                      "has ended)",
                      what, str(e->sym), str(e->sym), at(l.pos)));
    return;
  }
  std::vector<std::string_view> candidates;
  for (const Scope& s : fs_->scopes) {
    for (const auto& [sym, index] : s.locals) candidates.push_back(str(sym));
  }
  if (fs_->args_name) candidates.push_back(str(fs_->args_name));
  for (const auto& [sym, g] : globals_) {
    if (g.kind == GlobalKind::Var || g.kind == GlobalKind::Table || g.kind == GlobalKind::Fn) {
      candidates.push_back(str(sym));
    }
  }
  for (const stdlib::Builtin& b : stdlib::builtins()) candidates.push_back(b.name);
  std::sort(candidates.begin(), candidates.end());
  error(e->pos, e->width,
        fmt::format("unknown {} `{}`{}", what, str(e->sym), did_you_mean(str(e->sym), candidates)));
}

// ---------------------------------------------------------------------------
// effects

void Checker::note_write(Pos pos, uint32_t width, std::string what) {
  FunctionInfo& f = *fs_->fn;
  if (f.kind == FnKind::Query) {
    error(pos, width, fmt::format("a query cannot change state; this {}", what));
    return;
  }
  if (!f.writes) {
    f.writes = true;
    f.write_site = EffectSite{pos, std::move(what), &f};
  }
}

void Checker::note_membership(const TableInfo& t, Expr* e, std::string_view method) {
  std::string what = method == "add"   ? fmt::format("adds rows to `{}`", str(t.name))
                     : method == "put" ? fmt::format("puts rows into `{}`", str(t.name))
                                       : fmt::format("removes rows from `{}`", str(t.name));
  note_write(e->pos, e->width, what);
  for (const Iteration& it : fs_->iterating) {
    if (it.table != &t) continue;
    error(e->pos, e->width,
          fmt::format("`{}.{}` changes which rows `{}` has while the `for` over it at {} is "
                      "running; collect the changes and apply them after the loop",
                      str(t.name), method, str(t.name), at(it.pos)));
    break;
  }
  FunctionInfo& f = *fs_->fn;
  auto has = std::any_of(f.membership.begin(), f.membership.end(),
                         [&](const auto& m) { return m.first == &t; });
  if (!has) f.membership.emplace_back(&t, EffectSite{e->pos, what, &f});
}

// ---------------------------------------------------------------------------
// types

bool Checker::assignable(const Type* from, const Type* to) const {
  if (from == to || from->is_error() || to->is_error()) return true;
  // A row is copied into a record value.
  if (from->is(TypeKind::Row) && to->is(TypeKind::Record)) return from->record == to->record;
  // A view is copied into an array of its rows.
  if (from->is(TypeKind::View) && to->is(TypeKind::Array) && to->elem->is(TypeKind::Record)) {
    return from->record == to->elem->record;
  }
  return false;
}

void Checker::mismatch(Pos pos, uint32_t width, std::string_view context, const Type* expected,
                       const Type* found, bool hints) {
  std::string hint;
  if (hints && expected->is(TypeKind::Text) && found->is(TypeKind::Num)) {
    hint = " (convert with `text(n)`)";
  }
  if (hints && expected->is(TypeKind::Num) && found->is(TypeKind::Text)) {
    hint = " (convert with `num(t)`)";
  }
  error(pos, width,
        fmt::format("{}: expected `{}`, found `{}`{}", context, tname(expected), tname(found), hint));
}

// ---------------------------------------------------------------------------
// statements

// Returns whether control can reach the end of the block.
bool Checker::check_block(Block* b) {
  push_scope();
  bool live = true;
  const Stmt* leaver = nullptr;
  bool reported = false;
  for (Stmt* s : b->stmts) {
    if (!live && !reported && s->kind != StmtKind::Error) {
      error(s->pos, fmt::format("unreachable code: the statement at {} always leaves before it",
                                at(leaver->pos)));
      reported = true;
    }
    bool falls = check_stmt(s);
    if (live && !falls) {
      live = false;
      leaver = s;
    }
  }
  pop_scope();
  return live;
}

bool Checker::check_stmt(Stmt* s) {
  switch (s->kind) {
    case StmtKind::Let: check_let(s); return true;
    case StmtKind::Assign: check_assign(s); return true;
    case StmtKind::If: {
      if (s->name) return check_if_let(s);
      check_condition(s->expr, "an `if` condition");
      bool then_falls = check_block(s->body);
      bool else_falls = s->else_body ? check_block(s->else_body) : true;
      return then_falls || else_falls;
    }
    case StmtKind::While: {
      check_condition(s->expr, "a `while` condition");
      fs_->loops.push_back(Loop{});
      check_block(s->body);
      bool has_break = fs_->loops.back().has_break;
      fs_->loops.pop_back();
      // `while true` without a `break` never ends (Java's rule).
      return !(is_true_literal(s->expr) && !has_break);
    }
    case StmtKind::For: check_for(s); return true;
    case StmtKind::Break:
    case StmtKind::Continue:
      if (fs_->loops.empty()) {
        error(s->pos, fmt::format("`{}` outside a loop", s->kind == StmtKind::Break ? "break" : "continue"));
      } else if (s->kind == StmtKind::Break) {
        fs_->loops.back().has_break = true;
      }
      return false;
    case StmtKind::Return: check_return(s); return false;
    case StmtKind::Fail: {
      const Type* t = check_value(s->expr, types_.text());
      if (!assignable(t, types_.text())) {
        mismatch(s->expr->start, s->expr->width, "`fail` takes a text message", types_.text(), t);
      }
      return false;
    }
    case StmtKind::Expr: check_expr_stmt(s); return true;
    case StmtKind::Block: return check_block(s->body);
    case StmtKind::Error: return true;
  }
  return true;
}

void Checker::check_condition(Expr* e, std::string_view what) {
  const Type* t = check_value(e, types_.boolean());
  if (!assignable(t, types_.boolean())) {
    error(e->start, fmt::format("{} must be `bool`, found `{}`", what, tname(t)));
  }
}

// let -> 'let' NAME [':' type] '=' expr
// `if let r = t.get(k) { ... } else { ... }`: r, a row that is there,
// only inside the first block.
bool Checker::check_if_let(Stmt* s) {
  maybe_ok_ = s->expr;
  const Type* t = s->expr ? check_value(s->expr, nullptr) : types_.error();
  maybe_ok_ = nullptr;
  const Type* row = types_.error();
  if (t->is(TypeKind::MaybeRow)) {
    row = types_.row(t->table);
  } else if (!t->is_error()) {
    error(s->expr->start, s->expr->width,
          fmt::format("`if let` takes a row that may be missing (`t.get(key)`), found `{}`; test a `bool` "
                      "with `if`, or hold a value with `let`",
                      tname(t)));
  }
  push_scope();
  if (!local_name_ok(s->name, s->name_pos)) row = types_.error();
  s->slot = declare_local(s->name, s->name_pos, row, false, false);
  s->type = row;
  bool then_falls = check_block(s->body);
  pop_scope();
  bool else_falls = s->else_body ? check_block(s->else_body) : true;
  return then_falls || else_falls;
}

void Checker::check_let(Stmt* s) {
  const Type* declared = s->decl_type ? resolve_type(s->decl_type, true) : nullptr;
  const Type* t = s->expr ? check_value(s->expr, declared) : types_.error();
  if (declared) {
    if (!assignable(t, declared)) {
      mismatch(s->expr->start, s->expr->width,
               fmt::format("the value of `let {}: {}`", str(s->name), tname(declared)), declared, t);
    }
    t = declared;
  }
  if (!local_name_ok(s->name, s->name_pos)) t = types_.error();
  s->slot = declare_local(s->name, s->name_pos, t, false, false);
  s->type = t;
}

// A place a value may be stored in: a mutable local, or a field or element
// of one. Reports why not, and returns false, otherwise.
bool Checker::check_place(Expr* e) {
  switch (e->kind) {
    case ExprKind::Name:
      if (e->ref == Ref::Local) {
        const LocalInfo* l = find_local(e->sym);
        if (l && l->readonly) {
          error(e->pos, e->width, fmt::format("loop variable `{}` is read-only", str(e->sym)));
          return false;
        }
        return true;
      }
      if (e->ref == Ref::EventArgs) {
        error(e->pos, e->width,
              fmt::format("event arguments are read-only; copy what you change into a local "
                          "(`let x = {}.field`)",
                          str(e->sym)));
        return false;
      }
      return e->ref == Ref::Var || e->ref == Ref::None;
    case ExprKind::Field:
      if (e->lhs->type && e->lhs->type->is(TypeKind::Row)) return true;  // writes the table
      return e->ref != Ref::RecordField || check_place(e->lhs);
    case ExprKind::Index:
      if (e->ref == Ref::ArrayElem) return check_place(e->lhs);
      return e->ref == Ref::None;
    case ExprKind::Error: return true;
    default:
      error(e->start, "cannot change a temporary value; store it in a local first");
      return false;
  }
}

// Whether a name can be assigned: a local (not a loop's), a var (a state
// change); not the event's arguments, a table or `now`.
bool Checker::assignable_name(const Expr* target) {
  switch (target->ref) {
    case Ref::Local: {
      const LocalInfo* l = find_local(target->sym);
      if (l && l->readonly) {
        error(target->pos, target->width,
              fmt::format("loop variable `{}` cannot be assigned", str(target->sym)));
        return false;
      }
      break;
    }
    case Ref::Var:
      note_write(target->pos, target->width, fmt::format("assigns var `{}`", str(target->sym)));
      break;
    case Ref::EventArgs:
      error(target->pos, target->width, "event arguments are read-only");
      return false;
    case Ref::TableName:
      error(target->pos, target->width,
            fmt::format("cannot assign to table `{}`; change rows with `add`, `put`, "
                        "`remove`, or by assigning their fields",
                        str(target->sym)));
      return false;
    case Ref::Now:
      error(target->pos, target->width, "`now` cannot be assigned");
      return false;
    default: return false;  // already reported by check_expr
  }
  return true;
}

// Whether a field can be assigned: a row's (a state change; not its key)
// or one of a record held in a place.
bool Checker::assignable_field(Expr* target) {
  bool ok = true;
  const Type* base = target->lhs->type;
  if (target->ref != Ref::RecordField) {
    if (target->ref != Ref::None) {
      error(target->pos, target->width,
            fmt::format("`{}` cannot be assigned", str(target->sym)));
    }
    ok = false;
  } else if (base->is(TypeKind::Row)) {
    const TableInfo& t = *base->table;
    if (t.is_key_field(target->index)) {
      error(target->pos, target->width,
            fmt::format("`{}` is {} of `{}`; a row's key cannot change (remove the row "
                        "and add a new one)",
                        str(target->sym), t.composite() ? "part of the key" : "the key", str(t.name)));
      ok = false;
    } else {
      note_write(target->pos, target->width,
                 fmt::format("sets field `{}` of a row of `{}`", str(target->sym), str(t.name)));
    }
  } else {
    ok = check_place(target->lhs);
  }
  return ok;
}

// assign -> target '=' expr
void Checker::check_assign(Stmt* s) {
  Expr* target = s->target;
  const Type* tt = check_expr(target, nullptr);
  const Type* expected = tt;
  bool ok = true;
  switch (target->kind) {
    case ExprKind::Name: ok = assignable_name(target); break;
    case ExprKind::Field: ok = assignable_field(target); break;
    case ExprKind::Index:
      if (target->ref == Ref::ArrayElem) {
        ok = check_place(target->lhs);
      } else if (target->ref == Ref::TableRow || target->ref == Ref::TableView || target->ref == Ref::IndexRow ||
                 target->ref == Ref::IndexView) {
        error(target->pos, target->width,
              "a table's rows are not assigned whole; assign their fields (`t[k].f = v`) or "
              "replace a row with `t.put(...)`");
        ok = false;
      } else {
        ok = false;
      }
      break;
    case ExprKind::Error: ok = false; break;
    default:
      error(target->start, "cannot assign to this expression");
      ok = false;
      break;
  }
  const Type* vt = check_value(s->expr, ok ? expected : nullptr);
  if (!ok) return;
  if (expected->is(TypeKind::Row) && !assignable(vt, expected)) {
    error(s->expr->start,
          fmt::format("`{}` holds a row of `{}`; it can be given another row of `{}`, not `{}` "
                      "(declare it `let x: {} = ...` to hold a copy instead)",
                      str(target->sym), str(expected->table->name), str(expected->table->name),
                      tname(vt), str(expected->record->name)));
    return;
  }
  if (!assignable(vt, expected)) mismatch(s->expr->start, s->expr->width, "assignment", expected, vt);
}

// for -> 'for' NAME 'in' (array | table | view | range) block
void Checker::check_for(Stmt* s) {
  const Type* subject = check_expr(s->expr, nullptr);
  const Type* var = types_.error();
  bool readonly = true;
  bool iterates_table = false;
  if (subject->is(TypeKind::Table) || subject->is(TypeKind::View)) {
    s->for_kind = subject->is(TypeKind::Table) ? ForKind::Table : ForKind::View;
    var = types_.row(subject->table);
    iterates_table = true;
  }
  if (s->descending && !iterates_table && !subject->is_error()) {
    error(s->pos, "`desc` walks the rows of a table or a view last first; an array or a range has no `desc`");
  }
  switch (subject->kind) {
    case TypeKind::Table:
    case TypeKind::View: break;
    case TypeKind::Array:
      s->for_kind = ForKind::Array;
      var = subject->elem;
      break;
    case TypeKind::Range:
      s->for_kind = ForKind::Range;
      if (subject->elem->is(TypeKind::Text)) {
        error(s->expr->pos, "a `for` over a range counts numbers; a text range selects table rows "
                            "(`for r in t[a .. b]`)");
      } else {
        var = types_.num();
      }
      break;
    case TypeKind::Error: break;
    case TypeKind::Void:
      error(s->expr->start, "this call returns no value to iterate over");
      break;
    default:
      error(s->expr->start,
            fmt::format("cannot iterate over `{}`; `for` takes an array, a table, a view "
                        "`t[a .. b]` or a range `a .. b`",
                        tname(subject)));
      break;
  }
  push_scope();
  if (!local_name_ok(s->name, s->name_pos)) var = types_.error();
  s->slot = declare_local(s->name, s->name_pos, var, false, readonly);
  s->type = var;
  if (iterates_table) fs_->iterating.push_back(Iteration{subject->table, s->pos});
  fs_->loops.push_back(Loop{});
  check_block(s->body);
  fs_->loops.pop_back();
  if (iterates_table) fs_->iterating.pop_back();
  pop_scope();
}

void Checker::check_return(Stmt* s) {
  FunctionInfo& f = *fs_->fn;
  if (f.kind == FnKind::Helper) {
    if (f.result->is(TypeKind::Void)) {
      if (s->expr) {
        check_value(s->expr, nullptr);
        error(s->expr->start,
              fmt::format("`{}` declares no result type; declare one (`fn {}(...): T`) to return "
                          "a value",
                          str(f.name), str(f.name)));
      }
      return;
    }
    if (!s->expr) {
      error(s->pos, fmt::format("`{}` must return a `{}`", str(f.name), tname(f.result)));
      return;
    }
    const Type* t = check_value(s->expr, f.result);
    if (!assignable(t, f.result)) {
      mismatch(s->expr->start, s->expr->width, fmt::format("the result of `{}`", str(f.name)),
               f.result, t);
    }
    return;
  }
  // Queries and handlers: the first value returned fixes the result type.
  if (!s->expr) {
    if (f.kind == FnKind::Query) {
      error(s->pos, "a query must return a value: `return expr`");
    } else if (fs_->result) {
      error(s->pos, fmt::format("`return` without a value, but this handler returns a value at {}",
                                at(fs_->result_pos)));
    } else if (!fs_->bare_return) {
      fs_->bare_return = true;
      fs_->bare_return_pos = s->pos;
    }
    return;
  }
  const Type* t = check_value(s->expr, fs_->result);
  // Results travel as JSON: rows and views are sent as values.
  if (t->is(TypeKind::Row)) t = types_.value_of(t);
  if (t->is(TypeKind::View)) t = types_.array(types_.record(t->record));
  if (!fs_->result) {
    if (f.kind == FnKind::Handler && fs_->bare_return) {
      error(s->expr->start, fmt::format("this handler returns a value here but none at {}",
                                        at(fs_->bare_return_pos)));
    }
    fs_->result = t;
    fs_->result_pos = s->pos;
  } else if (!assignable(t, fs_->result)) {
    error(s->expr->start, fmt::format("this `return` gives `{}`, but the one at {} gives `{}`",
                                      tname(t), at(fs_->result_pos), tname(fs_->result)));
  }
}

void Checker::check_expr_stmt(Stmt* s) {
  Expr* e = s->expr;
  const Type* t = check_expr(e, nullptr);
  if (e->kind == ExprKind::Call || t->is_error()) return;
  std::string hint;
  if (e->kind == ExprKind::Binary && e->binary == BinaryOp::Eq) hint = "; to assign, write `=`";
  error(e->start, fmt::format("this expression's value is unused{}", hint));
}

// ---------------------------------------------------------------------------
// expressions

// check_value: an expression used as a value (not a table, range or nothing).
const Type* Checker::check_value(Expr* e, const Type* expected) {
  const Type* t = check_expr(e, expected);
  switch (t->kind) {
    case TypeKind::Table:
      error(e->start, e->width,
            fmt::format("`{}` is a table; use a row `{}[key]`, a view `{}[a .. b]`, or "
                        "`for row in {}`",
                        str(t->table->name), str(t->table->name), str(t->table->name),
                        str(t->table->name)));
      return e->type = types_.error();
    case TypeKind::Range:
      error(e->pos, "a range `a .. b` can only follow `for x in` or select rows `t[a .. b]`");
      return e->type = types_.error();
    case TypeKind::Void:
      error(e->start, "this call returns no value");
      return e->type = types_.error();
    default: return t;
  }
}

const Type* Checker::check_expr(Expr* e, const Type* expected) {
  const Type* t = types_.error();
  switch (e->kind) {
    case ExprKind::Number: t = types_.num(); break;
    case ExprKind::Text: t = types_.text(); break;
    case ExprKind::Bool: t = types_.boolean(); break;
    case ExprKind::Name: t = check_name(e); break;
    case ExprKind::Unary: t = check_unary(e); break;
    case ExprKind::Binary: t = check_binary(e); break;
    case ExprKind::Range: t = check_range(e); break;
    case ExprKind::Field: t = check_field(e); break;
    case ExprKind::Index: t = check_index(e); break;
    case ExprKind::Call: t = check_call(e); break;
    case ExprKind::RecordLit: t = check_record_lit(e); break;
    case ExprKind::ObjectLit: t = check_object_lit(e, expected); break;
    case ExprKind::ArrayLit: t = check_array_lit(e, expected); break;
    case ExprKind::Error: break;
  }
  if (t->is(TypeKind::MaybeRow) && e != maybe_ok_) {
    std::string_view table = str(t->table->name);
    error(e->start, fmt::format("`{}.get(...)` may find no row; test it first: `if let r = {}.get(...) {{ ... }}`",
                                table, table));
    t = types_.error();
  }
  e->type = t;
  return t;
}

const Type* Checker::check_name(Expr* e) {
  if (const LocalInfo* l = find_local(e->sym)) {
    e->ref = Ref::Local;
    e->index = l->slot;
    return l->type;
  }
  if (fs_->args_name && e->sym == fs_->args_name) {
    e->ref = Ref::EventArgs;
    return fs_->args_type;
  }
  std::string_view name = str(e->sym);
  if (const Global* g = find_global(e->sym)) {
    switch (g->kind) {
      case GlobalKind::Var:
        e->ref = Ref::Var;
        e->index = g->index;
        return program_.vars[g->index]->type ? program_.vars[g->index]->type : types_.error();
      case GlobalKind::Table: {
        const TableInfo& t = *program_.tables[g->index];
        e->ref = Ref::TableName;
        e->index = g->index;
        return t.record ? types_.table(&t) : types_.error();
      }
      case GlobalKind::Record:
        error(e->pos, e->width,
              fmt::format("`{}` is a record type; build a value with `{} {{ field: value }}`", name,
                          name));
        return types_.error();
      case GlobalKind::Event:
        error(e->pos, e->width,
              fmt::format("`{}` is an event; its arguments are visible only inside `on {}`", name,
                          name));
        return types_.error();
      case GlobalKind::Query:
        error(e->pos, e->width,
              fmt::format("`{}` is a query; queries are called by clients, not by code", name));
        return types_.error();
      case GlobalKind::Fn:
        error(e->pos, e->width, fmt::format("`{}` is a function; call it: `{}(...)`", name, name));
        return types_.error();
    }
  }
  if (const stdlib::Builtin* b = stdlib::find_builtin(name)) {
    if (b->is_value) {
      e->ref = Ref::Now;
      return types_.num();
    }
    error(e->pos, e->width,
          fmt::format("`{}` is a built-in function; call it: `{}(...)`", name, name));
    return types_.error();
  }
  if (name == "num" || name == "text" || name == "bool") {
    error(e->pos, e->width, fmt::format("`{}` is a type, not a value", name));
    return types_.error();
  }
  report_unknown(e, "name");
  return types_.error();
}

const Type* Checker::check_unary(Expr* e) {
  bool neg = e->unary == UnaryOp::Neg;
  const Type* want = neg ? types_.num() : types_.boolean();
  const Type* t = check_value(e->lhs, want);
  if (t->is_error()) return types_.error();
  if (t != want) {
    error(e->pos, e->width,
          fmt::format("`{}` needs a `{}`, found `{}`", neg ? "-" : "not", tname(want), tname(t)));
    return types_.error();
  }
  return want;
}

const Type* Checker::check_binary(Expr* e) {
  const Type* l = check_value(e->lhs, nullptr);
  const Type* r = check_value(e->rhs, nullptr);
  if (l->is_error() || r->is_error()) return types_.error();
  std::string_view op = binary_spelling(e->binary);
  auto both = [&](TypeKind k) { return l->is(k) && r->is(k); };
  switch (e->binary) {
    case BinaryOp::Add:
      if (both(TypeKind::Num)) return types_.num();
      if (both(TypeKind::Text)) return types_.text();
      error(e->pos, e->width,
            fmt::format("`+` adds two numbers or joins two texts; found `{}` and `{}`{}", tname(l),
                        tname(r),
                        (l->is(TypeKind::Text) || r->is(TypeKind::Text)) ? " (convert with `text(n)`)"
                                                                          : ""));
      return types_.error();
    case BinaryOp::Sub:
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Mod:
      if (both(TypeKind::Num)) return types_.num();
      error(e->pos, e->width,
            fmt::format("`{}` needs two numbers; found `{}` and `{}`", op, tname(l), tname(r)));
      return types_.error();
    case BinaryOp::Eq:
    case BinaryOp::Ne: {
      bool scalar = both(TypeKind::Num) || both(TypeKind::Text) || both(TypeKind::Bool);
      bool records = l->has_record_fields() && r->has_record_fields() && l->record == r->record;
      if (scalar || records) return types_.boolean();
      if (l->has_record_fields() || l->is(TypeKind::Num) || l->is(TypeKind::Text) ||
          l->is(TypeKind::Bool)) {
        if (r->has_record_fields() || r->is(TypeKind::Num) || r->is(TypeKind::Text) ||
            r->is(TypeKind::Bool)) {
          error(e->pos, e->width,
                fmt::format("cannot compare `{}` with `{}`", tname(l), tname(r)));
          return types_.error();
        }
      }
      const Type* bad = (l->is(TypeKind::Array) || l->is(TypeKind::Object) || l->is(TypeKind::View)) ? l : r;
      error(e->pos, e->width,
            fmt::format("`{}` compares numbers, texts, bools and records, not `{}`", op, tname(bad)));
      return types_.error();
    }
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
      if (both(TypeKind::Num) || both(TypeKind::Text)) return types_.boolean();
      error(e->pos, e->width,
            fmt::format("`{}` orders two numbers or two texts; found `{}` and `{}`", op, tname(l),
                        tname(r)));
      return types_.error();
    case BinaryOp::And:
    case BinaryOp::Or:
      if (both(TypeKind::Bool)) return types_.boolean();
      error(e->pos, e->width,
            fmt::format("`{}` needs `bool` on both sides; found `{}` and `{}`", op, tname(l),
                        tname(r)));
      return types_.error();
  }
  return types_.error();
}

const Type* Checker::check_range(Expr* e) {
  const Type* l = check_value(e->lhs, nullptr);
  const Type* r = check_value(e->rhs, nullptr);
  if (l->is_error() || r->is_error()) return types_.error();
  if ((l->is(TypeKind::Num) || l->is(TypeKind::Text)) && l == r) return types_.range(l);
  error(e->pos, e->width,
        fmt::format("a range `a .. b` needs two numbers or two texts; found `{}` and `{}`", tname(l),
                    tname(r)));
  return types_.error();
}

const Type* Checker::check_field(Expr* e) {
  const Type* base = check_expr(e->lhs, nullptr);
  std::string_view name = str(e->sym);
  auto unknown_member = [&](std::string_view owner, const std::vector<std::string_view>& members) {
    error(e->pos, e->width,
          fmt::format("{} has no member `{}`{} (members: {})", owner, name,
                      did_you_mean(name, members), join_names(members)));
    return types_.error();
  };
  auto method_without_call = [&](std::string_view subject) {
    error(e->pos, e->width,
          fmt::format("`{}.{}` is a method; call it: `{}.{}(...)`", subject, name, subject, name));
    return types_.error();
  };
  switch (base->kind) {
    case TypeKind::Error: return types_.error();
    case TypeKind::Table: {
      const TableInfo& t = *base->table;
      for (const IndexInfo* x : t.indexes) {
        if (x->name != e->sym) continue;
        e->ref = Ref::IndexAll;
        e->index = x->index;
        return types_.view(&t);
      }
      if (name == "count") { e->ref = Ref::TableCount; return types_.num(); }
      if (name == "first") { e->ref = Ref::TableFirst; return types_.row(&t); }
      if (name == "last") { e->ref = Ref::TableLast; return types_.row(&t); }
      if (name == "has" || name == "add" || name == "put" || name == "remove" || name == "at") {
        return method_without_call(str(t.name));
      }
      return unknown_member(fmt::format("table `{}`", str(t.name)), as_list(kTableMembers));
    }
    case TypeKind::View:
      if (name == "count") { e->ref = Ref::ViewCount; return types_.num(); }
      if (name == "first") { e->ref = Ref::ViewFirst; return types_.row(base->table); }
      if (name == "last") { e->ref = Ref::ViewLast; return types_.row(base->table); }
      if (name == "empty") { e->ref = Ref::ViewEmpty; return types_.boolean(); }
      if (name == "at") return method_without_call("view");
      return unknown_member("a view", as_list(kViewMembers));
    case TypeKind::Array:
      if (name == "count") { e->ref = Ref::ArrayCount; return types_.num(); }
      if (name == "push" || name == "pop" || stdlib::find_method(array_receiver(base), name)) {
        return method_without_call("array");
      }
      return unknown_member(fmt::format("`{}`", tname(base)), as_list(kArrayMembers));
    case TypeKind::Record:
    case TypeKind::Row: return check_record_field(e, base);
    case TypeKind::Object: return check_object_field(e, base);
    case TypeKind::Text:
      if (stdlib::find_method(stdlib::Ty::Text, name)) return method_without_call("text");
      error(e->pos, e->width,
            fmt::format("a text has no field `{}`{}", name,
                        name == "len" || name == "length" || name == "count" || name == "size"
                            ? "; its length is `len(t)`"
                            : ""));
      return types_.error();
    case TypeKind::Range:
      error(e->pos, e->width, "a range has no fields; it can only follow `for x in` or select rows");
      return types_.error();
    case TypeKind::Void:
      error(e->lhs->start, "this call returns no value");
      return types_.error();
    default:
      error(e->pos, e->width, fmt::format("`{}` has no field `{}`", tname(base), name));
      return types_.error();
  }
}

// `x.f` where x is a record value or a row: one of its record's fields.
const Type* Checker::check_record_field(Expr* e, const Type* base) {
  const RecordInfo& r = *base->record;
  int i = r.field_index(e->sym);
  if (i < 0 && r.broken) return types_.error();  // the field may be in the unread part
  if (i < 0) {
    std::vector<std::string_view> fields;
    for (const FieldInfo& f : r.fields) fields.push_back(str(f.name));
    error(e->pos, e->width,
          fmt::format("no field `{}` in {}`{}`{}", str(e->sym), r.is_event_args ? "event " : "",
                      str(r.name), did_you_mean(str(e->sym), fields)));
    return types_.error();
  }
  e->ref = Ref::RecordField;
  e->index = static_cast<uint32_t>(i);
  return r.fields[static_cast<size_t>(i)].type;
}

// `x.f` where x is an object: one of its fields, by name.
const Type* Checker::check_object_field(Expr* e, const Type* base) {
  for (size_t i = 0; i < base->fields.size(); ++i) {
    if (base->fields[i].name != e->sym) continue;
    e->ref = Ref::RecordField;
    e->index = static_cast<uint32_t>(i);
    return base->fields[i].type;
  }
  std::vector<std::string_view> fields;
  for (const ObjectField& f : base->fields) fields.push_back(str(f.name));
  error(e->pos, e->width,
        fmt::format("no field `{}` in `{}`{}", str(e->sym), tname(base), did_you_mean(str(e->sym), fields)));
  return types_.error();
}

const Type* Checker::check_index(Expr* e) {
  const Type* base = check_expr(e->lhs, nullptr);
  switch (base->kind) {
    case TypeKind::Table:
      return check_table_index(e, *base->table);
    case TypeKind::Array: {
      if (e->args.size() > 1) {
        error(e->args[1]->start, "an array takes one index");
        for (Expr* a : e->args) check_expr(a, nullptr);
        return types_.error();
      }
      const Type* i = check_value(e->rhs, types_.num());
      e->ref = Ref::ArrayElem;
      if (!assignable(i, types_.num())) mismatch(e->rhs->start, e->rhs->width, "an array index", types_.num(), i);
      return base->elem;
    }
    case TypeKind::Error:
      for (Expr* a : e->args) check_expr(a, nullptr);
      return types_.error();
    case TypeKind::View:
      if (e->lhs->kind == ExprKind::Field && e->lhs->ref == Ref::IndexAll) {
        return check_index_subscripts(e, *program_.indexes[e->lhs->index]);
      }
      for (Expr* a : e->args) check_expr(a, nullptr);
      error(e->pos, "a view cannot be indexed; use `.first`, `.last`, `.at(i)` or iterate it");
      return types_.error();
    default:
      for (Expr* a : e->args) check_expr(a, nullptr);
      error(e->pos, fmt::format("`{}` cannot be indexed", tname(base)));
      return types_.error();
  }
}

// `t[k]`, `t[a .. b]`, and for a composite key `t[k1, k2, ...]`: every field
// of the key selects a row; fewer select the view of the rows whose key
// starts with them; a range as the last subscript selects the rows whose
// next key field lies in it.
const Type* Checker::check_table_index(Expr* e, const TableInfo& t) {
  size_t n = e->args.size();
  size_t arity = t.key_fields.size();
  if (n > arity) {
    error(e->args[arity]->start,
          fmt::format("`{}` is keyed by {}; found {} subscripts", str(t.name), key_names(t), n));
    for (Expr* a : e->args) check_expr(a, nullptr);
    return types_.error();
  }
  bool range = e->args.back()->kind == ExprKind::Range;
  bool misplaced = false;
  for (size_t i = 0; i + (range ? 1 : 0) < n; ++i) {
    Expr* a = e->args[i];
    if (a->kind == ExprKind::Range) {
      error(a->pos, a->width, "a range selects rows only as the last subscript");
      check_expr(a, nullptr);
      misplaced = true;
      continue;
    }
    const Type* k = check_value(a, t.key_types[i]);
    if (!assignable(k, t.key_types[i])) mismatch(a->start, a->width, key_context(t, i), t.key_types[i], k);
  }
  if (misplaced) {
    if (range) check_expr(e->args.back(), nullptr);
    return types_.error();
  }
  if (range) {
    Expr* r = e->args.back();
    const Type* got = check_expr(r, nullptr);
    const Type* want = t.key_types[n - 1];
    if (!got->is_error() && got->elem != want) {
      error(r->pos, r->width,
            arity == 1 ? fmt::format("`{}` is keyed by `{}`; this range is of `{}`", str(t.name), tname(want),
                                     tname(got->elem))
                       : fmt::format("{} is `{}`; this range is of `{}`", key_context(t, n - 1), tname(want),
                                     tname(got->elem)));
    }
    e->ref = Ref::TableView;
    return types_.view(&t);
  }
  e->ref = n == arity ? Ref::TableRow : Ref::TableView;
  return n == arity ? types_.row(&t) : types_.view(&t);
}

// `t.by_x[v1, ..]`: as a composite key's subscripts (check_table_index),
// over the index fields; every field of a unique index selects its row.
const Type* Checker::check_index_subscripts(Expr* e, const IndexInfo& x) {
  const TableInfo& t = *x.table;
  size_t n = e->args.size();
  size_t arity = x.fields.size();
  std::string name = fmt::format("`{}.{}`", str(t.name), str(x.name));
  auto field_name = [&](size_t i) { return str(t.record->fields[x.fields[i]].name); };
  if (n > arity) {
    std::string fields;
    for (size_t i = 0; i < arity; ++i) fields += fmt::format("{}`{}`", i ? ", " : "", field_name(i));
    error(e->args[arity]->start, fmt::format("{} is ordered by {}; found {} subscripts", name, fields, n));
    for (Expr* a : e->args) check_expr(a, nullptr);
    return types_.error();
  }
  bool range = e->args.back()->kind == ExprKind::Range;
  bool bad = false;
  for (size_t i = 0; i < n; ++i) {
    Expr* a = e->args[i];
    std::string context = fmt::format("field `{}` of {}", field_name(i), name);
    if (a->kind == ExprKind::Range && i + 1 < n) {
      error(a->pos, a->width, "a range selects rows only as the last subscript");
      check_expr(a, nullptr);
      bad = true;
    } else if (a->kind == ExprKind::Range) {
      const Type* got = check_expr(a, nullptr);
      if (!got->is_error() && got->elem != x.field_types[i]) {
        error(a->pos, a->width,
              fmt::format("{} is `{}`; this range is of `{}`", context, tname(x.field_types[i]), tname(got->elem)));
      }
    } else {
      const Type* k = check_value(a, x.field_types[i]);
      if (!assignable(k, x.field_types[i])) mismatch(a->start, a->width, context, x.field_types[i], k);
    }
  }
  if (bad) return types_.error();
  if (!range && n == arity && x.unique) {
    e->ref = Ref::IndexRow;
    e->index = x.index;
    return types_.row(&t);
  }
  e->ref = Ref::IndexView;
  e->index = x.index;
  return types_.view(&t);
}

// "(w, d, o)", or "`id`" for a one-field key.
std::string Checker::key_names(const TableInfo& t) const {
  const RecordInfo& r = *t.record;
  if (!t.composite()) return fmt::format("`{}`", str(r.fields[t.key_fields[0]].name));
  std::string out = "(";
  for (size_t i = 0; i < t.key_fields.size(); ++i) {
    out += (i ? ", " : "") + std::string(str(r.fields[t.key_fields[i]].name));
  }
  return out + ")";
}

// What a mismatched subscript or argument is: "the key of `t`", or for a
// composite key "key field `d` of `t`".
std::string Checker::key_context(const TableInfo& t, size_t i) const {
  if (!t.composite()) return fmt::format("the key of `{}`", str(t.name));
  return fmt::format("key field `{}` of `{}`", str(t.record->fields[t.key_fields[i]].name), str(t.name));
}

bool Checker::check_arg_count(Expr* call, std::string_view callee, size_t min, size_t max) {
  size_t n = call->args.size();
  if (n >= min && n <= max) return true;
  std::string want;
  if (min == max) {
    want = fmt::format("{} argument{}", min, min == 1 ? "" : "s");
  } else if (max == stdlib::kVariadic) {
    // The count is an 8-bit operand (CALLB's C), so "or more" stops there.
    want = n > max ? fmt::format("at most {} arguments", max) : fmt::format("{} or more arguments", min);
  } else {
    want = fmt::format("{} to {} arguments", min, max);
  }
  error(call->pos, fmt::format("`{}` takes {}, found {}", callee, want, n));
  for (Expr* a : call->args) check_expr(a, nullptr);
  return false;
}

void Checker::check_args(Expr* call, std::string_view callee,
                         const std::vector<const Type*>& params,
                         const std::vector<Sym>* param_names) {
  for (size_t i = 0; i < call->args.size(); ++i) {
    Expr* a = call->args[i];
    const Type* want = params[std::min(i, params.size() - 1)];
    const Type* got = check_value(a, want);
    if (assignable(got, want)) continue;
    std::string context =
        param_names ? fmt::format("argument {} of `{}` (`{}`)", i + 1, callee, str((*param_names)[i]))
                    : fmt::format("argument {} of `{}`", i + 1, callee);
    mismatch(a->start, a->width, context, want, got);
  }
}

const Type* Checker::check_call(Expr* e) {
  Expr* callee = e->lhs;
  bool sorting = callee->kind == ExprKind::Field && str(callee->sym) == "sorted";
  for (Expr* a : e->args) {
    if (a->desc && !sorting) error(a->desc_pos, "`desc` follows a sort key only inside `sorted(...)`");
  }
  if (callee->kind == ExprKind::Field) return check_method(e);
  if (callee->kind != ExprKind::Name) {
    check_expr(callee, nullptr);
    for (Expr* a : e->args) check_expr(a, nullptr);
    if (!callee->type->is_error()) error(e->pos, "this cannot be called");
    return types_.error();
  }
  std::string_view name = str(callee->sym);
  if (find_local(callee->sym) || (fs_->args_name && callee->sym == fs_->args_name)) {
    for (Expr* a : e->args) check_expr(a, nullptr);
    error(callee->pos, callee->width, fmt::format("`{}` is not a function", name));
    return types_.error();
  }
  if (const Global* g = find_global(callee->sym)) {
    if (g->kind == GlobalKind::Fn) return check_fn_call(e, *program_.functions[g->index]);
    for (Expr* a : e->args) check_expr(a, nullptr);
    switch (g->kind) {
      case GlobalKind::Query:
        error(callee->pos, callee->width,
              fmt::format("`{}` is a query; queries are called by clients, not by code (move the "
                          "shared part into a `fn`)",
                          name));
        break;
      case GlobalKind::Record:
        error(callee->pos, callee->width,
              fmt::format("`{}` is a record; build it with `{} {{ field: value }}`, not `{}(...)`",
                          name, name, name));
        break;
      default:
        error(callee->pos, callee->width,
              fmt::format("`{}` is {}, not a function", name, kind_noun(g->kind)));
        break;
    }
    return types_.error();
  }
  if (const stdlib::Builtin* b = stdlib::find_builtin(name)) {
    if (b->is_value) {
      for (Expr* a : e->args) check_expr(a, nullptr);
      error(callee->pos, callee->width, "`now` is a value, not a function: write `now`");
      return types_.error();
    }
    return check_builtin_call(e, *b);
  }
  for (Expr* a : e->args) check_expr(a, nullptr);
  if (fs_->unknown_reported.insert(callee->sym).second) {
    std::vector<std::string_view> candidates =
        global_names([](GlobalKind k) { return k == GlobalKind::Fn; });
    for (const stdlib::Builtin& b : stdlib::builtins()) {
      if (!b.is_value) candidates.push_back(b.name);
    }
    error(callee->pos, callee->width,
          fmt::format("unknown function `{}`{}", name, did_you_mean(name, candidates)));
  }
  return types_.error();
}

const Type* Checker::check_fn_call(Expr* e, FunctionInfo& callee) {
  Expr* name = e->lhs;
  name->ref = Ref::None;
  e->ref = Ref::CallFn;
  e->index = callee.index;
  const Decl* d = callee.decl;
  if (d->broken) {  // its parameters are not known whole
    for (Expr* a : e->args) check_expr(a, nullptr);
    return types_.error();
  }
  std::string_view fname = str(callee.name);
  if (check_arg_count(e, fname, d->params.size(), d->params.size())) {
    std::vector<const Type*> params;
    std::vector<Sym> names;
    for (uint32_t i = 0; i < callee.param_count; ++i) {
      params.push_back(callee.locals[i].type);
      names.push_back(callee.locals[i].name);
    }
    if (!params.empty()) check_args(e, fname, params, &names);
  }
  calls_.push_back(CallSite{fs_->fn, &callee, name->pos, name->width, fs_->iterating});
  return callee.result ? callee.result : types_.error();
}

const Type* Checker::check_builtin_call(Expr* e, const stdlib::Builtin& b) {
  e->ref = Ref::CallBuiltin;
  e->index = static_cast<uint32_t>(b.id);
  e->lhs->ref = Ref::None;
  if (!check_arg_count(e, b.name, b.min_args, b.max_args)) return builtin_type(b.result, types_.error());
  // A function's parameters are num, text or bool, or any array (no expected type).
  auto basic = [&](stdlib::Ty t) { return builtin_type(t, nullptr); };
  const Type* same = types_.error();
  for (size_t i = 0; i < e->args.size(); ++i) {
    Expr* a = e->args[i];
    stdlib::Ty want = b.param(i);
    const Type* got = check_value(a, basic(want));
    if (want == stdlib::Ty::AnyArray) {
      if (got->is(TypeKind::Array)) {
        TypeKind k = got->elem->kind;
        bool comparable = k == TypeKind::Num || k == TypeKind::Text || k == TypeKind::Bool ||
                          k == TypeKind::Record || k == TypeKind::Error;
        if (!comparable) {
          error(a->start, fmt::format("`{}` compares items with `==`, which `{}` items do not "
                                      "support",
                                      b.name, tname(got->elem)));
        }
        same = got;
      } else if (got->is_error()) {
        same = got;
      } else {
        error(a->start, fmt::format("`{}` takes an array, found `{}`", b.name, tname(got)));
      }
      continue;
    }
    const Type* wt = basic(want);
    if (!assignable(got, wt)) {
      std::string context = b.min_args == 1 && b.max_args == 1
                                ? fmt::format("`{}`", b.name)
                                : fmt::format("argument {} of `{}`", i + 1, b.name);
      // No "convert with text(n)" advice inside text() itself.
      mismatch(a->start, a->width, context, wt, got, false);
    }
  }
  if (b.result == stdlib::Ty::SameArray) return same;
  return basic(b.result);
}

const Type* Checker::check_method(Expr* e) {
  Expr* callee = e->lhs;
  const Type* base = check_expr(callee->lhs, nullptr);
  switch (base->kind) {
    case TypeKind::Table: return check_table_method(e, *base->table);
    case TypeKind::Array: return check_array_method(e, base);
    case TypeKind::Text: return check_text_method(e);
    case TypeKind::View:
      if (str(callee->sym) == "at") {
        callee->type = types_.error();
        e->ref = Ref::ViewAt;
        if (check_arg_count(e, "at", 1, 1)) check_args(e, "at", {types_.num()}, nullptr);
        return types_.row(base->table);
      }
      if (str(callee->sym) == "get" && callee->lhs->ref == Ref::IndexAll) return check_index_get(e, base);
      // A view given where an array of its rows is expected: an array method.
      if (stdlib::find_method(stdlib::Ty::AnyArray, str(callee->sym))) {
        return check_array_method(e, types_.array(types_.record(base->record)));
      }
      break;
    case TypeKind::Error:
      for (Expr* a : e->args) check_expr(a, nullptr);
      return types_.error();
    default: break;
  }
  // Not a receiver of methods: type the member access for the message.
  for (Expr* a : e->args) check_expr(a, nullptr);
  std::string_view name = str(callee->sym);
  if (base->has_record_fields() && base->record->field_index(callee->sym) >= 0) {
    error(callee->pos, callee->width, fmt::format("`{}` is a field, not a method", name));
  } else if (base->is(TypeKind::View)) {
    error(callee->pos, callee->width,
          fmt::format("a view has no method `{}` (members: {})", name, join_names(as_list(kViewMembers))));
  } else {
    error(callee->pos, callee->width, fmt::format("`{}` has no method `{}`", tname(base), name));
  }
  return types_.error();
}

// The arguments of `t.has(...)` and `t.remove(...)`: the key's fields.
void Checker::check_key_args(Expr* e, const TableInfo& t, std::string_view callee) {
  if (!t.composite()) {
    check_args(e, callee, {t.key_types[0]}, nullptr);
    return;
  }
  for (size_t i = 0; i < e->args.size(); ++i) {
    Expr* a = e->args[i];
    const Type* k = check_value(a, t.key_types[i]);
    if (!assignable(k, t.key_types[i])) mismatch(a->start, a->width, key_context(t, i), t.key_types[i], k);
  }
}

const Type* Checker::check_table_method(Expr* e, const TableInfo& t) {
  Expr* callee = e->lhs;
  callee->type = types_.error();
  std::string_view name = str(callee->sym);
  std::string full = fmt::format("{}.{}", str(t.name), name);
  const Type* row_value = t.record->type;
  if (name == "get") {
    e->ref = Ref::TableGet;
    if (check_arg_count(e, full, t.key_fields.size(), t.key_fields.size())) check_key_args(e, t, full);
    return types_.maybe_row(&t);
  }
  if (name == "has" || name == "remove") {
    e->ref = name == "has" ? Ref::TableHas : Ref::TableRemove;
    if (check_arg_count(e, full, t.key_fields.size(), t.key_fields.size())) check_key_args(e, t, full);
    if (e->ref == Ref::TableRemove) note_membership(t, callee, name);
    return name == "has" ? types_.boolean() : types_.void_();
  }
  if (name == "add" || name == "put") {
    e->ref = name == "add" ? Ref::TableAdd : Ref::TablePut;
    if (check_arg_count(e, full, 1, 1)) check_args(e, full, {row_value}, nullptr);
    note_membership(t, callee, name);
    return types_.void_();
  }
  if (name == "at") {
    e->ref = Ref::TableAt;
    if (check_arg_count(e, full, 1, 1)) check_args(e, full, {types_.num()}, nullptr);
    return types_.row(&t);
  }
  for (Expr* a : e->args) check_expr(a, nullptr);
  if (name == "count" || name == "first" || name == "last") {
    error(callee->pos, callee->width,
          fmt::format("`{}` is a property, not a method: write `{}` without `()`", full, full));
    return types_.error();
  }
  error(callee->pos, callee->width,
        fmt::format("table `{}` has no method `{}`{} (members: {})", str(t.name), name,
                    did_you_mean(name, as_list(kTableMembers)), join_names(as_list(kTableMembers))));
  return types_.error();
}

const Type* Checker::check_array_method(Expr* e, const Type* array) {
  Expr* callee = e->lhs;
  callee->type = types_.error();
  std::string_view name = str(callee->sym);
  if (name == "push") {
    e->ref = Ref::ArrayPush;
    if (check_arg_count(e, "push", 1, 1)) check_args(e, "push", {array->elem}, nullptr);
    check_place(callee->lhs);
    return types_.void_();
  }
  if (name == "pop") {
    e->ref = Ref::ArrayPop;
    check_arg_count(e, "pop", 0, 0);
    check_place(callee->lhs);
    return array->elem;
  }
  stdlib::Ty receiver = array_receiver(array);
  if (name == "sorted") return check_sorted(e, array);
  if (const stdlib::Builtin* b = stdlib::find_method(receiver, name)) return check_method_builtin(e, *b, array);
  for (Expr* a : e->args) check_expr(a, nullptr);
  if (name == "count") {
    error(callee->pos, callee->width, "`count` is a property, not a method: write `.count`");
    return types_.error();
  }
  std::vector<std::string_view> members = as_list(kArrayMembers);
  for (std::string_view m : stdlib::method_names(receiver)) members.push_back(m);
  if (method_elsewhere(callee, receiver, array)) return types_.error();
  error(callee->pos, callee->width,
        fmt::format("an array has no method `{}`{} (members: {})", name, did_you_mean(name, members),
                    join_names(members)));
  return types_.error();
}

// A method of texts or of other arrays used on `self`: says whose it is.
bool Checker::method_elsewhere(const Expr* callee, stdlib::Ty receiver, const Type* self) {
  std::string_view name = str(callee->sym);
  std::vector<std::string_view> owners;
  for (auto [t, spelled] : {std::pair{stdlib::Ty::Text, "text"}, std::pair{stdlib::Ty::TextArray, "[text]"},
                            std::pair{stdlib::Ty::NumArray, "[num]"}}) {
    if (t != receiver && stdlib::find_method(t, name) && !stdlib::find_method(stdlib::Ty::AnyArray, name)) {
      owners.push_back(spelled);
    }
  }
  if (owners.empty()) return false;
  error(callee->pos, callee->width,
        fmt::format("`{}` is a method of {}, not of `{}`", name, join_names(owners), tname(self)));
  return true;
}

stdlib::Ty Checker::array_receiver(const Type* array) const {
  if (array->elem->is(TypeKind::Text)) return stdlib::Ty::TextArray;
  if (array->elem->is(TypeKind::Num)) return stdlib::Ty::NumArray;
  return stdlib::Ty::AnyArray;
}

const Type* Checker::check_text_method(Expr* e) {
  Expr* callee = e->lhs;
  callee->type = types_.error();
  std::string_view name = str(callee->sym);
  if (const stdlib::Builtin* b = stdlib::find_method(stdlib::Ty::Text, name)) {
    return check_method_builtin(e, *b, types_.text());
  }
  for (Expr* a : e->args) check_expr(a, nullptr);
  if (method_elsewhere(callee, stdlib::Ty::Text, types_.text())) return types_.error();
  std::vector<std::string_view> members = stdlib::method_names(stdlib::Ty::Text);
  std::string hint = did_you_mean(name, members);
  if (hint.empty() && (name == "len" || name == "length" || name == "count" || name == "size")) {
    hint = "; its length is `len(t)`";
  }
  error(callee->pos, callee->width,
        fmt::format("a text has no method `{}`{} (methods: {})", name, hint, join_names(members)));
  return types_.error();
}

// A built-in method: `receiver` (the callee's subject, of type `self`) is
// its value 0, the arguments the rest.
const Type* Checker::check_method_builtin(Expr* e, const stdlib::Builtin& b, const Type* self) {
  e->ref = Ref::CallBuiltin;
  e->index = static_cast<uint32_t>(b.id);
  const Type* result = builtin_type(b.result, self);
  if (!check_arg_count(e, b.name, b.min_args, b.max_args)) return result;
  for (size_t i = 0; i < e->args.size(); ++i) {
    Expr* a = e->args[i];
    const Type* want = builtin_type(b.param(i + 1), self);
    const Type* got = check_value(a, want);
    if (!assignable(got, want)) {
      std::string context = b.max_args == 1 ? fmt::format("`{}`", b.name)
                                            : fmt::format("argument {} of `{}`", i + 1, b.name);
      mismatch(a->start, a->width, context, want, got);
    }
  }
  return result;
}

// The checker's type for a signature's: `self` is the receiver's, for a
// result that is its items (`min` of `[text]`) or the same array.
const Type* Checker::builtin_type(stdlib::Ty t, const Type* self) {
  switch (t) {
    case stdlib::Ty::Num: return types_.num();
    case stdlib::Ty::Text: return types_.text();
    case stdlib::Ty::Bool: return types_.boolean();
    case stdlib::Ty::TextArray: return types_.array(types_.text());
    case stdlib::Ty::NumArray: return types_.array(types_.num());
    case stdlib::Ty::AnyArray:
    case stdlib::Ty::SameArray: return self;
  }
  return types_.error();
}

// `xs.sorted()`, `xs.sorted(desc)` for numbers, texts and bools;
// `rows.sorted(f, g desc, ...)` for records: fields of the items, each
// num, text or bool, none twice.
const Type* Checker::check_sorted(Expr* e, const Type* array) {
  e->ref = Ref::ArraySorted;
  for (Expr* a : e->args) a->type = types_.error();  // sort keys are names of fields, not values
  const Type* item = array->elem;
  auto scalar = [](const Type* t) { return t->is(TypeKind::Num) || t->is(TypeKind::Text) || t->is(TypeKind::Bool); };
  if (item->is_error()) return array;
  if (scalar(item)) {
    bool ok = e->args.empty() || (e->args.size() == 1 && e->args[0]->kind == ExprKind::Name &&
                                  str(e->args[0]->sym) == "desc" && !e->args[0]->desc);
    if (!ok) {
      error(e->args[0]->start, fmt::format("`sorted` on `{}` takes nothing or `desc`: `xs.sorted()`, "
                                           "`xs.sorted(desc)`",
                                           tname(array)));
    }
    return array;
  }
  if (!item->is(TypeKind::Record)) {
    for (Expr* a : e->args) check_expr(a, nullptr);
    error(e->lhs->pos, e->lhs->width,
          fmt::format("`sorted` orders numbers, texts, bools or records by their fields; not `{}` items",
                      tname(item)));
    return types_.error();
  }
  const RecordInfo& r = *item->record;
  if (e->args.empty()) {
    error(e->pos, fmt::format("name the fields of `{}` to sort by: `xs.sorted(field, other desc)`",
                              str(r.name)));
    return array;
  }
  std::vector<int> seen;
  for (Expr* a : e->args) {
    if (a->kind != ExprKind::Name) {
      error(a->start, fmt::format("a sort key is a field of `{}`, optionally followed by `desc`", str(r.name)));
      continue;
    }
    int f = r.field_index(a->sym);
    if (f < 0) {
      std::vector<std::string_view> fields;
      for (const auto& fi : r.fields) fields.push_back(str(fi.name));
      error(a->pos, a->width, fmt::format("no field `{}` in `{}`{}", str(a->sym), str(r.name),
                                          did_you_mean(str(a->sym), fields)));
      continue;
    }
    a->index = static_cast<uint32_t>(f);
    if (!scalar(r.fields[f].type)) {
      error(a->pos, a->width, fmt::format("cannot sort by `{}`: it is `{}` (sort keys are num, text or bool)",
                                          str(a->sym), tname(r.fields[f].type)));
    } else if (std::find(seen.begin(), seen.end(), f) != seen.end()) {
      error(a->pos, a->width, fmt::format("`{}` is a sort key twice", str(a->sym)));
    }
    seen.push_back(f);
  }
  return array;
}

// `t.ix.get(v1, ..., vn)`: a unique index given every field.
const Type* Checker::check_index_get(Expr* e, const Type* view) {
  Expr* callee = e->lhs;
  callee->type = types_.error();
  const TableInfo& t = *view->table;
  const IndexInfo& x = *program_.indexes[callee->lhs->index];
  std::string full = fmt::format("{}.{}.get", str(t.name), str(x.name));
  if (!x.unique) {
    for (Expr* a : e->args) check_expr(a, nullptr);
    error(callee->pos, callee->width,
          fmt::format("`{}` is not unique, so a value can have many rows: use the view `{}.{}[...]`", str(x.name),
                      str(t.name), str(x.name)));
    return types_.error();
  }
  e->ref = Ref::IndexGet;
  e->index = x.index;
  if (check_arg_count(e, full, x.fields.size(), x.fields.size())) check_args(e, full, x.field_types, nullptr);
  return types_.maybe_row(&t);
}

// R { field: value, ... }: every field without a default is given, once.
const Type* Checker::check_record_lit(Expr* e) {
  std::string_view name = str(e->sym);
  const Global* g = find_global(e->sym);
  if (!g || g->kind != GlobalKind::Record) {
    for (FieldInit& f : e->fields) check_value(f.value, nullptr);
    if (!g) {
      std::vector<std::string_view> records =
          global_names([](GlobalKind k) { return k == GlobalKind::Record; });
      error(e->pos, e->width, fmt::format("unknown record `{}`{}", name, did_you_mean(name, records)));
    } else {
      error(e->pos, e->width,
            fmt::format("`{}` is {}, not a record; `Name {{ ... }}` builds a record", name,
                        kind_noun(g->kind)));
    }
    return types_.error();
  }
  const RecordInfo& r = *program_.records[g->index];
  std::vector<bool> given(r.fields.size(), false);
  for (FieldInit& f : e->fields) {
    int i = r.field_index(f.name);
    if (i < 0) {
      check_value(f.value, nullptr);
      if (r.broken) continue;
      std::vector<std::string_view> fields;
      for (const FieldInfo& fi : r.fields) fields.push_back(str(fi.name));
      error(f.pos, fmt::format("no field `{}` in `{}`{}", str(f.name), name,
                               did_you_mean(str(f.name), fields)));
      continue;
    }
    const FieldInfo& field = r.fields[static_cast<size_t>(i)];
    f.index = static_cast<uint32_t>(i);
    const Type* t = check_value(f.value, field.type);
    if (given[f.index]) {
      error(f.pos, fmt::format("field `{}` is given twice", str(f.name)));
      continue;
    }
    given[f.index] = true;
    if (!assignable(t, field.type)) {
      mismatch(f.value->start, f.value->width, fmt::format("field `{}` of `{}`", str(f.name), name),
               field.type, t);
    }
  }
  std::vector<std::string_view> missing;
  for (size_t i = 0; i < r.fields.size() && !r.broken; ++i) {
    if (!given[i] && !r.fields[i].default_value) missing.push_back(str(r.fields[i].name));
  }
  if (!missing.empty()) {
    error(e->pos, e->width,
          fmt::format("`{} {{ ... }}` is missing field{} {}", name, missing.size() == 1 ? "" : "s",
                      join_names(missing)));
  }
  return r.type;
}

// { name: value, ... }: an anonymous object; an expected object type lends
// its field types to the values (so `[]` inside can be typed).
const Type* Checker::check_object_lit(Expr* e, const Type* expected) {
  std::vector<ObjectField> fields;
  bool bad = false;
  for (FieldInit& f : e->fields) {
    const Type* hint = nullptr;
    if (expected && expected->is(TypeKind::Object)) {
      for (const ObjectField& of : expected->fields) {
        if (of.name == f.name) hint = of.type;
      }
    }
    const Type* t = types_.value_of(check_value(f.value, hint));
    if (t->is(TypeKind::View)) t = types_.array(types_.record(t->record));
    bool dup = std::any_of(fields.begin(), fields.end(),
                           [&](const ObjectField& o) { return o.name == f.name; });
    if (dup) {
      error(f.pos, fmt::format("field `{}` appears twice in this object", str(f.name)));
      bad = true;
      continue;
    }
    if (fields.size() == kMaxFields) {
      error(f.pos, fmt::format("an object has at most {} fields", kMaxFields));
      return types_.error();
    }
    f.index = static_cast<uint32_t>(fields.size());
    fields.push_back(ObjectField{f.name, t});
    bad = bad || t->is_error();
  }
  if (bad) return types_.error();
  // The same fields in another order than the expected type: build the
  // object in the expected order (JSON objects are unordered).
  if (expected && expected->is(TypeKind::Object) && expected->fields.size() == fields.size()) {
    bool same = true;
    std::vector<uint32_t> where(fields.size());
    for (size_t i = 0; i < fields.size() && same; ++i) {
      auto it = std::find_if(expected->fields.begin(), expected->fields.end(),
                             [&](const ObjectField& o) { return o.name == fields[i].name; });
      same = it != expected->fields.end() && assignable(fields[i].type, it->type);
      if (same) where[i] = static_cast<uint32_t>(it - expected->fields.begin());
    }
    if (same) {
      for (size_t i = 0; i < e->fields.size(); ++i) e->fields[i].index = where[i];
      return expected;
    }
  }
  return types_.object(std::move(fields));
}

// [a, b, ...]: elements share one type; `[]` needs an expected type.
const Type* Checker::check_array_lit(Expr* e, const Type* expected) {
  const Type* elem =
      expected && expected->is(TypeKind::Array) ? expected->elem : nullptr;
  if (e->args.empty()) {
    if (elem) return expected;
    error(e->pos, "cannot tell the element type of `[]`; declare it (`let xs: [num] = []`)");
    return types_.error();
  }
  for (size_t i = 0; i < e->args.size(); ++i) {
    Expr* a = e->args[i];
    const Type* t = types_.value_of(check_value(a, elem));
    if (t->is(TypeKind::View)) t = types_.array(types_.record(t->record));
    if (!elem) {
      elem = t;
      continue;
    }
    if (!assignable(t, elem)) {
      mismatch(a->start, a->width, fmt::format("element {} of the array", i + 1), elem, t);
    }
  }
  return elem->is_error() ? types_.error() : types_.array(elem);
}

}  // namespace detail
}  // namespace aup

// Declarations: the global namespace, records, tables, vars, events,
// function signatures; then the closing of state effects over calls.
#include <algorithm>
#include <deque>

#include "compiler/checker_impl.h"
#include "vm/key.h"

namespace aup {
namespace detail {

namespace {
bool is_type_name(std::string_view s) { return s == "num" || s == "text" || s == "bool"; }
}  // namespace

std::string_view Checker::kind_noun(GlobalKind k) {
  switch (k) {
    case GlobalKind::Record: return "a record";
    case GlobalKind::Table: return "a table";
    case GlobalKind::Var: return "a var";
    case GlobalKind::Event: return "an event";
    case GlobalKind::Query: return "a query";
    case GlobalKind::Fn: return "a function";
  }
  return "";
}

const Global* Checker::find_global(Sym name) const {
  auto it = globals_.find(name);
  return it == globals_.end() ? nullptr : &it->second;
}

std::vector<std::string_view> Checker::global_names(bool (*keep)(GlobalKind)) const {
  std::vector<std::string_view> out;
  for (const auto& [sym, g] : globals_) {
    if (keep(g.kind)) out.push_back(str(sym));
  }
  std::sort(out.begin(), out.end());  // deterministic suggestions
  return out;
}

// A name about to be declared must not be a built-in type or function.
bool Checker::check_new_name(Sym name, Pos pos, uint32_t width, std::string_view what) {
  std::string_view s = str(name);
  if (is_type_name(s)) {
    error(pos, width, fmt::format("`{}` is a built-in type; choose another name for this {}", s, what));
    return false;
  }
  if (const stdlib::Builtin* b = stdlib::find_builtin(s)) {
    error(pos, width,
          fmt::format("`{}` is a built-in {}; choose another name for this {}", s,
                      b->is_value ? "value" : "function", what));
    return false;
  }
  return true;
}

void Checker::run() {
  declare_globals();
  for (auto& r : program_.records) resolve_record_fields(*r);
  check_record_cycles();
  for (auto& t : program_.tables) resolve_table(*t);
  for (Decl* d : ast_.module.decls) {
    if (d->kind == DeclKind::Index) resolve_index(d);
  }
  for (auto& v : program_.vars) resolve_var(*v);
  for (Decl* d : ast_.module.decls) {
    if (d->kind == DeclKind::On) declare_handler(d);
  }
  for (auto& e : program_.events) {
    if (!e->handler && !e->decl->broken) {
      error(e->decl->name_pos, e->decl->name_width,
            fmt::format("event `{}` has no handler; add `on {} {{ ... }}`", str(e->name),
                        str(e->name)));
    }
  }
  for (auto& f : program_.functions) {
    if (f->kind != FnKind::Handler) resolve_signature(*f);
  }
  for (auto& f : program_.functions) check_function(*f);
  close_effects();
  report_effect_violations();
}

// ---------------------------------------------------------------------------
// the global namespace

void Checker::declare_globals() {
  for (Decl* d : ast_.module.decls) {
    if (d->kind != DeclKind::On && d->kind != DeclKind::Index) declare(d);
  }
}

void Checker::declare(Decl* d) {
  GlobalKind kind{};
  std::string_view what;
  switch (d->kind) {
    case DeclKind::Record: kind = GlobalKind::Record; what = "record"; break;
    case DeclKind::Table: kind = GlobalKind::Table; what = "table"; break;
    case DeclKind::Var: kind = GlobalKind::Var; what = "var"; break;
    case DeclKind::Event: kind = GlobalKind::Event; what = "event"; break;
    case DeclKind::Query: kind = GlobalKind::Query; what = "query"; break;
    case DeclKind::Fn: kind = GlobalKind::Fn; what = "function"; break;
    case DeclKind::On:
    case DeclKind::Index: return;
  }
  if (!check_new_name(d->name, d->name_pos, d->name_width, what)) return;
  if (const Global* g = find_global(d->name)) {
    error(d->name_pos, d->name_width,
          fmt::format("`{}` is already declared at {} (as {}); all top-level names share one "
                      "namespace",
                      str(d->name), at(g->pos), kind_noun(g->kind)));
    return;
  }
  uint32_t index = 0;
  if (!add_decl_info(d, index)) return;
  globals_.emplace(d->name, Global{kind, index, d->name_pos});
}

// Records and events share one numbering (an event's arguments are a
// record), as do queries and helpers; the message names the pool.
bool Checker::too_many_decls(const Decl* d, size_t n, std::string_view pool) {
  if (n < kMaxDeclsPerKind) return false;
  error(d->name_pos, d->name_width, fmt::format("more than {} {}", kMaxDeclsPerKind, pool));
  return true;
}

namespace {

// A new entry at the end of `pool` for declaration `d`, numbered by its
// place, named and placed as the declaration is.
template <class Info>
Info& add_info(std::vector<std::unique_ptr<Info>>& pool, const Decl* d) {
  auto info = std::make_unique<Info>();
  info->index = static_cast<uint32_t>(pool.size());
  info->name = d->name;
  info->pos = d->name_pos;
  info->decl = d;
  pool.push_back(std::move(info));
  return *pool.back();
}

}  // namespace

// A record's, or an event's with its arguments' record: `index` is the
// record's, or the event's.
bool Checker::add_record_info(Decl* d, uint32_t& index) {
  bool event = d->kind == DeclKind::Event;
  if (too_many_decls(d, program_.records.size(), "records and events")) return false;
  if (event && too_many_decls(d, program_.events.size(), "events")) return false;
  RecordInfo& r = add_info(program_.records, d);
  r.is_event_args = event;
  r.broken = d->broken;
  r.type = types_.record(&r);
  index = r.index;
  if (event) {
    EventInfo& e = add_info(program_.events, d);
    e.args = &r;
    index = e.index;
  }
  return true;
}

// The program's entry for a declaration, numbered in its pool: false when
// the pool is full (said).
bool Checker::add_decl_info(Decl* d, uint32_t& index) {
  switch (d->kind) {
    case DeclKind::Record:
    case DeclKind::Event: return add_record_info(d, index);
    case DeclKind::Table:
      if (too_many_decls(d, program_.tables.size(), "tables")) return false;
      index = add_info(program_.tables, d).index;
      return true;
    case DeclKind::Var: {
      if (too_many_decls(d, program_.vars.size(), "vars")) return false;
      VarInfo& v = add_info(program_.vars, d);
      v.init = d->init;
      index = v.index;
      return true;
    }
    case DeclKind::Query:
    case DeclKind::Fn: {
      if (too_many_decls(d, program_.functions.size(), "queries and functions")) return false;
      FunctionInfo& f = add_info(program_.functions, d);
      f.kind = d->kind == DeclKind::Query ? FnKind::Query : FnKind::Helper;
      index = f.index;
      return true;
    }
    case DeclKind::On:
    case DeclKind::Index: break;
  }
  return false;
}

// ---------------------------------------------------------------------------
// types as written

const Type* Checker::resolve_type(TypeExpr* t, bool rows) {
  switch (t->kind) {
    case TypeExprKind::Error: return types_.error();
    case TypeExprKind::Array: {
      // A bad element type makes the whole type unknown (no `[?]` in messages).
      const Type* elem = resolve_type(t->elem, false);
      return elem->is_error() ? elem : types_.array(elem);
    }
    case TypeExprKind::Object: {
      std::vector<ObjectField> fields;
      bool bad = false;
      for (const TypeExprField& f : t->fields) {
        const Type* ft = resolve_type(f.type);
        bad = bad || ft->is_error();
        auto dup = std::find_if(fields.begin(), fields.end(),
                                [&](const ObjectField& o) { return o.name == f.name; });
        if (dup != fields.end()) {
          error(f.pos, fmt::format("field `{}` appears twice in this object type", str(f.name)));
          continue;
        }
        if (fields.size() == kMaxFields) {
          error(f.pos, fmt::format("an object type has at most {} fields", kMaxFields));
          return types_.error();
        }
        fields.push_back(ObjectField{f.name, ft});
      }
      return bad ? types_.error() : types_.object(std::move(fields));
    }
    case TypeExprKind::Named: break;
  }
  std::string_view name = str(t->name);
  if (name == "num") return types_.num();
  if (name == "text") return types_.text();
  if (name == "bool") return types_.boolean();
  uint32_t width = static_cast<uint32_t>(name.size());
  if (const Global* g = find_global(t->name)) {
    switch (g->kind) {
      case GlobalKind::Record: return program_.records[g->index]->type;
      case GlobalKind::Table: {
        // A table's name as a type: a reference to one of its rows.
        const TableInfo& tab = *program_.tables[g->index];
        if (rows) return tab.record ? types_.row(&tab) : types_.error();
        std::string rec = tab.decl->record ? std::string(str(tab.decl->record)) : "its record";
        error(t->pos, width,
              fmt::format("`{}` as a type is a reference to a row, which only a local, or a "
                          "parameter or result of a `fn`, can hold; use the record type `{}` here",
                          name, rec));
        return types_.error();
      }
      default:
        error(t->pos, width, fmt::format("`{}` is {}, not a type", name, kind_noun(g->kind)));
        return types_.error();
    }
  }
  std::vector<std::string_view> candidates =
      global_names([](GlobalKind k) { return k == GlobalKind::Record; });
  candidates.insert(candidates.end(), {"num", "text", "bool"});
  error(t->pos, width, fmt::format("unknown type `{}`{}", name, did_you_mean(name, candidates)));
  return types_.error();
}

// A default (and a var's initial value) is a literal of the field's type.
void Checker::check_default(Expr* e, const Type* t, std::string_view what) {
  const Type* found = nullptr;
  if (t->is_error()) {  // the type was reported; its literal cannot be judged
    e->type = t;
    return;
  }
  if (e->kind == ExprKind::Number) {
    found = types_.num();
  } else if (e->kind == ExprKind::Unary && e->unary == UnaryOp::Neg && e->lhs->kind == ExprKind::Number) {
    found = types_.num();
    e->lhs->type = found;
  } else if (e->kind == ExprKind::Text) {
    found = types_.text();
  } else if (e->kind == ExprKind::Bool) {
    found = types_.boolean();
  } else if (e->kind == ExprKind::ArrayLit && e->args.empty() && t->is(TypeKind::Array)) {
    found = t;
  } else {
    error(e->start, fmt::format("{} must be a literal (a number, a text, `true` or `false`)", what));
    e->type = types_.error();
    return;
  }
  e->type = found;
  if (!assignable(found, t)) mismatch(e->start, e->width, what, t, found);
}

// ---------------------------------------------------------------------------
// records, tables, vars

void Checker::resolve_record_fields(RecordInfo& r) {
  std::string_view what = r.is_event_args ? "event" : "record";
  for (const FieldDecl& f : r.decl->fields) {
    const Type* ft = resolve_type(f.type);
    int dup = r.field_index(f.name);
    if (dup >= 0) {
      error(f.pos, fmt::format("field `{}` appears twice in {} `{}` (first at {})", str(f.name), what,
                               str(r.name), at(r.fields[static_cast<size_t>(dup)].pos)));
      continue;
    }
    if (r.fields.size() == kMaxFields) {
      error(f.pos, fmt::format("{} `{}` has more than {} fields", what, str(r.name), kMaxFields));
      break;
    }
    if (f.default_value) {
      check_default(f.default_value, ft, fmt::format("the default of `{}`", str(f.name)));
    }
    r.fields.push_back(FieldInfo{f.name, f.pos, ft, f.default_value});
  }
}

// A record may not contain itself through record-typed fields: its values
// would be infinite. (Through an array it may: arrays can be empty.) The
// message shows the whole cycle, `A.b -> B.a -> A`.
//
// Depth first on an explicit stack, not by recursion: records may chain
// through fields up to kMaxDeclsPerKind deep (R0 { r: R1 }, R1 { r: R2 },
// ...), far deeper than the C++ stack allows.
void Checker::check_record_cycles() {
  enum class Mark : uint8_t { None, Active, Done };
  std::vector<Mark> mark(program_.records.size(), Mark::None);
  struct Visit {
    RecordInfo* r;
    size_t next_field;
  };
  std::vector<Visit> stack;
  // path[i]: the field followed out of stack[i] (one fewer than the stack).
  std::vector<std::pair<RecordInfo*, FieldInfo*>> path;
  for (auto& root : program_.records) {
    if (mark[root->index] != Mark::None) continue;
    mark[root->index] = Mark::Active;
    stack.push_back(Visit{root.get(), 0});
    while (!stack.empty()) {
      Visit& v = stack.back();
      if (v.next_field == v.r->fields.size()) {
        mark[v.r->index] = Mark::Done;
        stack.pop_back();
        if (!path.empty()) path.pop_back();
        continue;
      }
      RecordInfo& r = *v.r;
      FieldInfo& f = r.fields[v.next_field++];
      if (!f.type->is(TypeKind::Record)) continue;
      RecordInfo& inner = *program_.records[f.type->record->index];
      if (mark[inner.index] == Mark::Active) {
        path.emplace_back(&r, &f);
        std::string cycle;
        size_t from = 0;
        while (path[from].first != &inner) ++from;
        for (size_t i = from; i < path.size(); ++i) {
          cycle += fmt::format("{}.{} -> ", str(path[i].first->name), str(path[i].second->name));
        }
        cycle += str(inner.name);
        error(f.pos, fmt::format("record `{}` contains itself ({}); a record cannot hold "
                                 "itself (keep a key, or an array, instead)",
                                 str(inner.name), cycle));
        f.type = types_.error();  // cut the cycle so later passes terminate
        path.pop_back();
      } else if (mark[inner.index] == Mark::None) {
        path.emplace_back(&r, &f);
        mark[inner.index] = Mark::Active;
        stack.push_back(Visit{&inner, 0});  // `v` may dangle from here
      }
    }
  }
}

void Checker::resolve_table(TableInfo& t) {
  const Decl* d = t.decl;
  if (d->broken) return;  // reported by the parser; uses of it stay quiet
  uint32_t rec_width = static_cast<uint32_t>(str(d->record).size());
  const Global* g = find_global(d->record);
  if (is_type_name(str(d->record))) {
    error(d->record_pos, rec_width,
          fmt::format("`{}` is a built-in type; a table holds rows of a record type", str(d->record)));
    return;
  }
  if (!g) {
    std::vector<std::string_view> records =
        global_names([](GlobalKind k) { return k == GlobalKind::Record; });
    error(d->record_pos, rec_width,
          fmt::format("unknown record `{}`{}", str(d->record), did_you_mean(str(d->record), records)));
    return;
  }
  if (g->kind != GlobalKind::Record) {
    error(d->record_pos, rec_width,
          fmt::format("`{}` is {}; a table holds rows of a record type", str(d->record),
                      kind_noun(g->kind)));
    return;
  }
  RecordInfo& r = *program_.records[g->index];
  if (r.broken) return;
  t.record = &r;
  FieldListWords words{"a key", "a key", "the key", str(t.name), ""};
  if (!resolve_field_list(t.decl, r, words, t.key_fields, t.key_types)) {
    t.record = nullptr;
    return;
  }
  if (!r.stored) {
    for (const FieldInfo& f : r.fields) {
      TypeKind k = f.type->kind;
      if (k == TypeKind::Num || k == TypeKind::Text || k == TypeKind::Bool || k == TypeKind::Error) {
        continue;
      }
      error(d->record_pos, rec_width,
            fmt::format("rows of a table hold only `num`, `text` and `bool` fields; field `{}` of "
                        "`{}` is `{}`",
                        str(f.name), str(r.name), tname(f.type)));
      t.record = nullptr;
      return;
    }
  }
  r.stored = true;
}

// A key's or an index's fields: each a `num` or `text` field of the
// record, none twice, at most vm::kMaxKeyFields (the KEY instruction's text
// mask is 8 bits). `words` name what the list is in the messages.
bool Checker::resolve_field_list(const Decl* d, const RecordInfo& r, const FieldListWords& words,
                                 std::vector<uint32_t>& fields, std::vector<const Type*>& types) {
  if (d->keys.size() > vm::kMaxKeyFields) {
    const KeyName& extra = d->keys[vm::kMaxKeyFields];
    error(extra.pos, static_cast<uint32_t>(str(extra.name).size()),
          fmt::format("{} has at most {} fields; `{}` has {}", words.list, vm::kMaxKeyFields, words.owner,
                      d->keys.size()));
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < d->keys.size(); ++i) {
    const KeyName& k = d->keys[i];
    uint32_t width = static_cast<uint32_t>(str(k.name).size());
    int field = r.field_index(k.name);
    if (field < 0) {
      std::vector<std::string_view> names;
      for (const FieldInfo& f : r.fields) names.push_back(str(f.name));
      error(k.pos, width,
            fmt::format("no field `{}` in `{}`{}{}", str(k.name), str(r.name), words.rows_of,
                        did_you_mean(str(k.name), names)));
      ok = false;
      continue;
    }
    const Type* kt = r.fields[static_cast<uint32_t>(field)].type;
    if (!kt->is(TypeKind::Num) && !kt->is(TypeKind::Text) && !kt->is_error()) {
      error(k.pos, width,
            fmt::format("{} must be `num` or `text`; `{}` of `{}` is `{}`", words.element, str(k.name), str(r.name),
                        tname(kt)));
      ok = false;
      continue;
    }
    for (size_t j = 0; j < i; ++j) {
      if (d->keys[j].name == k.name) {
        error(k.pos, width, fmt::format("`{}` is in {} twice", str(k.name), words.in));
        ok = false;
      }
    }
    fields.push_back(static_cast<uint32_t>(field));
    types.push_back(kt);
  }
  return ok;
}

// Names a table already answers to after `.`: an index may not take one.
constexpr std::string_view kTableMemberNames[] = {"count", "first", "last", "empty", "has", "add",
                                                  "put",   "remove", "at",   "get"};

// An index names a member of its table (`t.name[...]`), not a global: its
// name is unique among the table's indexes and members.
void Checker::resolve_index(Decl* d) {
  if (d->broken) return;
  std::string_view table_name = str(d->record);
  uint32_t table_width = static_cast<uint32_t>(table_name.size());
  const Global* g = find_global(d->record);
  if (!g || g->kind != GlobalKind::Table) {
    std::vector<std::string_view> tables = global_names([](GlobalKind k) { return k == GlobalKind::Table; });
    error(d->record_pos, table_width,
          g ? fmt::format("`{}` is {}; an index is on a table", table_name, kind_noun(g->kind))
            : fmt::format("unknown table `{}`{}", table_name, did_you_mean(table_name, tables)));
    return;
  }
  TableInfo& t = *program_.tables[g->index];
  if (!t.record) return;  // the table's own errors are reported
  std::string_view name = str(d->name);
  for (std::string_view m : kTableMemberNames) {
    if (m == name) {
      error(d->name_pos, d->name_width,
            fmt::format("`{}` is a member of every table (`{}.{}`); choose another name for this index", name,
                        table_name, name));
      return;
    }
  }
  for (const IndexInfo* other : t.indexes) {
    if (other->name == d->name) {
      error(d->name_pos, d->name_width,
            fmt::format("`{}` already has an index `{}` (at {})", table_name, name, at(other->pos)));
      return;
    }
  }
  if (program_.indexes.size() >= kMaxDeclsPerKind) {
    error(d->name_pos, d->name_width, fmt::format("more than {} indexes", kMaxDeclsPerKind));
    return;
  }
  auto x = std::make_unique<IndexInfo>();
  x->index = static_cast<uint32_t>(program_.indexes.size());
  x->name = d->name;
  x->pos = d->name_pos;
  x->decl = d;
  x->table = &t;
  x->unique = d->unique;
  std::string rows_of = fmt::format(" (the rows of `{}`)", str(t.name));
  FieldListWords words{"an index", "an index field", "the index", str(x->name), rows_of};
  if (!resolve_field_list(d, *t.record, words, x->fields, x->field_types)) return;
  t.indexes.push_back(x.get());
  program_.indexes.push_back(std::move(x));
}

void Checker::resolve_var(VarInfo& v) {
  if (v.decl->broken) {
    v.type = types_.error();
    return;
  }
  const Type* t = resolve_type(v.decl->type);
  if (!t->is(TypeKind::Num) && !t->is(TypeKind::Text) && !t->is(TypeKind::Bool) && !t->is_error()) {
    error(v.decl->type->pos, fmt::format("a var holds `num`, `text` or `bool`, not `{}`", tname(t)));
    t = types_.error();
  }
  v.type = t;
  check_default(v.decl->init, t, fmt::format("the initial value of `{}`", str(v.name)));
}

// ---------------------------------------------------------------------------
// functions

void Checker::declare_handler(Decl* d) {
  FunctionInfo& f = add_info(program_.functions, d);
  f.kind = FnKind::Handler;
  f.event = UINT32_MAX;  // unknown until found below
  const Global* g = find_global(d->name);
  if (g && g->kind == GlobalKind::Event) {
    EventInfo& e = *program_.events[g->index];
    if (e.handler) {
      error(d->name_pos, d->name_width,
            fmt::format("event `{}` already has a handler at {}", str(d->name), at(e.handler->pos)));
    } else {
      e.handler = &f;
      f.event = e.index;
    }
  } else if (g) {
    error(d->name_pos, d->name_width,
          fmt::format("`{}` is {}, not an event; `on` handles an event", str(d->name),
                      kind_noun(g->kind)));
  } else {
    std::vector<std::string_view> events =
        global_names([](GlobalKind k) { return k == GlobalKind::Event; });
    error(d->name_pos, d->name_width,
          fmt::format("no event `{}`{}", str(d->name), did_you_mean(str(d->name), events)));
  }
}

void Checker::resolve_signature(FunctionInfo& f) {
  const Decl* d = f.decl;
  f.result = d->ret ? resolve_type(d->ret, f.kind == FnKind::Helper) : types_.void_();
  if (d->broken) f.result = types_.error();
  if (d->params.size() > kMaxParams) {
    error(d->params[kMaxParams].pos,
          fmt::format("`{}` has more than {} parameters", str(f.name), kMaxParams));
  }
  // Parameters are the first locals (slots 0..n-1); a bad name or type is
  // reported here once and the parameter is kept with the Error type, so
  // callers still see the right count.
  for (const Param& p : d->params) {
    const Type* t = resolve_type(p.type, f.kind == FnKind::Helper);
    uint32_t width = static_cast<uint32_t>(str(p.name).size());
    if (!check_new_name(p.name, p.pos, width, "parameter")) {
      t = types_.error();
    } else if (const Global* g = find_global(p.name)) {
      error(p.pos, width,
            fmt::format("`{}` is {} (declared at {}); a parameter may not take a top-level name",
                        str(p.name), kind_noun(g->kind), at(g->pos)));
      t = types_.error();
    } else {
      for (const LocalInfo& other : f.locals) {
        if (other.name == p.name) {
          error(p.pos, width,
                fmt::format("parameter `{}` appears twice (first at {})", str(p.name), at(other.pos)));
          t = types_.error();
          break;
        }
      }
    }
    LocalInfo l;
    l.name = p.name;
    l.pos = p.pos;
    l.type = t;
    l.slot = static_cast<uint32_t>(f.locals.size());
    l.param = true;
    f.locals.push_back(l);
  }
  f.param_count = static_cast<uint32_t>(f.locals.size());
  f.frame_slots = f.param_count;
}

// ---------------------------------------------------------------------------
// effects

// Close writes and row-membership changes over calls: a function that
// calls one that writes, writes. A worklist: when a function gains an
// effect, only its callers are looked at again, and each (function,
// effect) pair is added once, so the work is the call sites times the
// effects. (Sweeping every call site until nothing changed took one sweep
// per link of a call chain: minutes for 65,535 helpers calling each other.)
void Checker::close_effects() {
  std::vector<std::vector<const CallSite*>> callers(program_.functions.size());
  for (const CallSite& c : calls_) callers[c.callee->index].push_back(&c);
  std::deque<const FunctionInfo*> work;
  for (const auto& f : program_.functions) {
    if (f->writes || !f->membership.empty()) work.push_back(f.get());
  }
  while (!work.empty()) {
    const FunctionInfo& callee = *work.front();
    work.pop_front();
    for (const CallSite* c : callers[callee.index]) {
      FunctionInfo& caller = *c->caller;
      bool changed = false;
      if (callee.writes && !caller.writes) {
        caller.writes = true;
        caller.write_site = callee.write_site;
        changed = true;
      }
      for (const auto& [table, site] : callee.membership) {
        auto has = std::any_of(caller.membership.begin(), caller.membership.end(),
                               [&](const auto& m) { return m.first == table; });
        if (!has) {
          caller.membership.emplace_back(table, site);
          changed = true;
        }
      }
      if (changed) work.push_back(&caller);
    }
  }
}

void Checker::report_effect_violations() {
  for (const CallSite& c : calls_) {
    const FunctionInfo& callee = *c.callee;
    if (c.caller->kind == FnKind::Query && callee.writes) {
      const EffectSite& w = callee.write_site;
      std::string how = w.where && w.where != &callee
                            ? fmt::format("through `{}`, which {}", str(w.where->name), w.what)
                            : fmt::format("it {}", w.what);
      error(c.pos, c.width,
            fmt::format("a query cannot change state, and `{}` does: {} (at {})", str(callee.name),
                        how, at(w.pos)));
    }
    for (const Iteration& it : c.iterating) {
      for (const auto& [table, site] : callee.membership) {
        if (table != it.table) continue;
        std::string via = site.where && site.where != &callee
                              ? fmt::format(" through `{}`", str(site.where->name))
                              : "";
        error(c.pos, c.width,
              fmt::format("`{}` adds or removes rows of `{}`{} (at {}) while the `for` over `{}` "
                          "at {} is running; collect the changes and apply them after the loop",
                          str(callee.name), str(table->name), via, at(site.pos), str(table->name),
                          at(it.pos)));
      }
    }
  }
}

}  // namespace detail

void check(const SourceFile& file, Interner& names, Ast& ast, TypeTable& types, Program& program,
           Diagnostics& diags) {
  detail::Checker checker(file, names, ast, types, program, diags);
  checker.run();
}

}  // namespace aup

#include "compiler/codegen.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <map>
#include <tuple>

#include "stdlib/builtins.h"

namespace aup {
namespace {

using vm::Instr;
using vm::Op;

bool is_aggregate(const Type* t) {
  return t->is(TypeKind::Array) || t->is(TypeKind::Record) || t->is(TypeKind::Object);
}

// An expression naming a value that something else also holds (a variable,
// a part of a value). Storing it elsewhere makes a second holder, so the
// stored aggregate is marked shared (SHARE) and copied on its next change.
bool borrowed(const Expr* e) {
  switch (e->kind) {
    case ExprKind::Name: return true;
    case ExprKind::Field: return e->ref == Ref::RecordField && !e->lhs->type->is(TypeKind::Row);
    case ExprKind::Index: return e->ref == Ref::ArrayElem;
    default: return false;
  }
}

class ModuleGen {
 public:
  ModuleGen(const CheckedModule& m, vm::Module& out, Diagnostics& diags)
      : m_(m), out_(out), diags_(diags) {}

  bool run();
  uint32_t type_id(const Type* t);
  vm::Constant literal(const Expr* e) const;
  void error(Pos pos, std::string message) {
    diags_.error(pos, std::move(message));
    failed_ = true;
  }
  const CheckedModule& module() const { return m_; }
  vm::Module& out() { return out_; }

 private:
  uint32_t add_type(vm::TypeDesc d);

  const CheckedModule& m_;
  vm::Module& out_;
  Diagnostics& diags_;
  bool failed_ = false;
  std::map<const Type*, uint32_t> ids_;
  // out_.types and out_.shapes by content: found by search, 65,536 object
  // shapes took seconds to compile (quadratic).
  std::map<std::pair<vm::TypeCode, uint32_t>, uint32_t> type_index_;
  std::map<std::pair<std::vector<std::string>, std::vector<uint32_t>>, uint32_t> shape_index_;
};

class FnGen {
 public:
  FnGen(ModuleGen& mg, const FunctionInfo& fi, vm::Function& out)
      : mg_(mg), fi_(fi), f_(out), prog_(mg.module().program) {
    base_ = fi.kind == FnKind::Handler ? 1 : 0;  // R[0]: the event's arguments
    top_ = max_ = base_ + fi.frame_slots;
  }
  void run();

 private:
  // ---- emitting ----
  void emit(Instr i);
  // Once registers ran out (reported by alloc; this function's code is
  // dropped) operands computed from them may pass 255: clamp them, so the
  // rest is still emitted well-formed instead of failing an assertion.
  uint32_t r8(uint32_t x) const { return too_many_registers_ ? std::min<uint32_t>(x, vm::kMaxRegisters - 1) : x; }
  void abc(Op op, uint32_t a, uint32_t b = 0, uint32_t c = 0) { emit(vm::make_abc(op, r8(a), r8(b), r8(c))); }
  void abx(Op op, uint32_t a, uint32_t bx) { emit(vm::make_abx(op, r8(a), bx)); }
  size_t jump(Op op, uint32_t a = 0);
  void patch(size_t at, size_t target);
  void jump_to(Op op, uint32_t a, size_t target);
  uint32_t konst(const vm::Constant& c);
  uint32_t konst_num(double d);
  uint32_t konst_text(std::string_view s);
  void load_num(uint32_t dst, double d);
  uint32_t reg(uint32_t slot) const { return base_ + slot; }
  uint32_t alloc();

  // ---- statements ----
  void block(const Block* b);
  void stmt(const Stmt* s);
  void assign(const Stmt* s);
  void for_loop(const Stmt* s);
  void loop_body(const Block* body, size_t top, size_t exit_jump, Pos loop);
  // Conditions as jumps: `jumps` gets the jumps taken when `c` is `when`.
  void cond_jump(const Expr* c, bool when, std::vector<size_t>& jumps);
  void patch_all(const std::vector<size_t>& jumps, size_t target) {
    for (size_t j : jumps) patch(j, target);
  }

  // ---- expressions ----
  void expr_to(const Expr* e, uint32_t dst);
  uint32_t expr_reg(const Expr* e);
  void value_to(const Expr* e, uint32_t dst, const Type* target);
  uint32_t value_reg(const Expr* e, const Type* target);
  void finish_value(uint32_t r, const Expr* e, const Type* target);
  bool fold(const Expr* e, uint32_t dst);
  void binary(const Expr* e, uint32_t dst);
  void field(const Expr* e, uint32_t dst);
  void index(const Expr* e, uint32_t dst);
  void call(const Expr* e, uint32_t dst);
  void call_fn(const Expr* e, uint32_t dst);
  void call_builtin(const Expr* e, uint32_t dst);
  void call_method(const Expr* e, uint32_t dst);
  void receiver_to(const Expr* e, uint32_t dst);
  void sorted(const Expr* e, uint32_t dst);
  void key_to(const std::vector<Expr*>& parts, const TableInfo& t, uint32_t dst);
  void composite_view(const Expr* e, uint32_t full_mask, Op op, uint32_t bx, uint32_t dst);
  uint32_t alloc_block(uint32_t n);
  void record_lit(const Expr* e, uint32_t dst);
  void object_lit(const Expr* e, uint32_t dst);
  void array_lit(const Expr* e, uint32_t dst);
  bool refers_to(const Expr* e, uint32_t r) const;

  // A value place being changed: the registers that hold each level, so
  // the changed level can be written back into its parent.
  struct PlaceStep {
    const Expr* e;
    uint32_t parent;
    uint32_t index;
    uint32_t value;
  };
  struct Place {
    uint32_t reg = 0;
    std::vector<PlaceStep> steps;
  };
  Place load_place(const Expr* e);
  void write_back(const Place& p);

  struct Loop {
    size_t top;                  // where `continue` goes
    std::vector<size_t> breaks;  // jumps to patch to the exit
  };

  ModuleGen& mg_;
  const FunctionInfo& fi_;
  vm::Function& f_;
  const Program& prog_;
  uint32_t base_;
  uint32_t top_;
  uint32_t max_;
  bool too_many_registers_ = false;
  Pos pos_;
  std::vector<Loop> loops_;
  std::map<std::tuple<int, uint64_t, std::string>, uint32_t> konst_index_;
};

// ---------------------------------------------------------------------------
// module

// Records, rows, views, arrays and objects (the four first types are set
// in run() and never come here).
uint32_t ModuleGen::add_type(vm::TypeDesc d) {
  auto [it, added] = type_index_.try_emplace({d.code, d.index}, static_cast<uint32_t>(out_.types.size()));
  if (added) out_.types.push_back(d);
  return it->second;
}

uint32_t ModuleGen::type_id(const Type* t) {
  auto it = ids_.find(t);
  if (it != ids_.end()) return it->second;
  uint32_t id = vm::kTypeVoid;
  switch (t->kind) {
    case TypeKind::Num: id = vm::kTypeNum; break;
    case TypeKind::Text: id = vm::kTypeText; break;
    case TypeKind::Bool: id = vm::kTypeBool; break;
    case TypeKind::Record: id = add_type({vm::TypeCode::Record, t->record->index}); break;
    case TypeKind::Row: id = add_type({vm::TypeCode::Row, t->table->index}); break;
    case TypeKind::View: id = add_type({vm::TypeCode::View, t->table->index}); break;
    case TypeKind::Array: id = add_type({vm::TypeCode::Array, type_id(t->elem)}); break;
    case TypeKind::Object: {
      vm::ShapeDesc shape;
      for (const ObjectField& f : t->fields) {
        shape.names.emplace_back(m_.names.str(f.name));
        shape.types.push_back(type_id(f.type));
      }
      auto [at, added] = shape_index_.try_emplace(std::make_pair(shape.names, shape.types),
                                                  static_cast<uint32_t>(out_.shapes.size()));
      if (added) out_.shapes.push_back(std::move(shape));
      id = add_type({vm::TypeCode::Object, at->second});
      break;
    }
    default: break;  // Void; Error, Range and Table never reach code
  }
  ids_.emplace(t, id);
  return id;
}

vm::Constant ModuleGen::literal(const Expr* e) const {
  vm::Constant c;
  switch (e->kind) {
    case ExprKind::Number: c.num = e->number; break;
    case ExprKind::Unary: c.num = -e->lhs->number; break;
    case ExprKind::Text:
      c.kind = vm::Constant::Kind::Text;
      c.text = std::string(m_.names.str(e->sym));
      break;
    case ExprKind::Bool:
      c.kind = vm::Constant::Kind::Bool;
      c.boolean = e->boolean;
      break;
    default: break;  // `[]`: an empty array, no value to keep
  }
  return c;
}

bool ModuleGen::run() {
  const Program& p = m_.program;
  out_.source_name = m_.file.name();
  auto slash = out_.source_name.find_last_of('/');
  if (slash != std::string::npos) out_.source_name.erase(0, slash + 1);
  out_.types = {vm::TypeDesc{vm::TypeCode::Void, 0}, vm::TypeDesc{vm::TypeCode::Num, 0},
                vm::TypeDesc{vm::TypeCode::Text, 0}, vm::TypeDesc{vm::TypeCode::Bool, 0}};
  out_.records.resize(p.records.size());
  for (const auto& r : p.records) {
    vm::RecordDesc& d = out_.records[r->index];
    d.name = std::string(m_.names.str(r->name));
    d.event_args = r->is_event_args;
    for (const FieldInfo& f : r->fields) {
      vm::FieldDesc fd;
      fd.name = std::string(m_.names.str(f.name));
      fd.type = type_id(f.type);
      fd.has_default = f.default_value != nullptr;
      if (f.default_value) fd.default_value = literal(f.default_value);
      d.fields.push_back(std::move(fd));
    }
  }
  for (const auto& t : p.tables) {
    out_.tables.push_back({std::string(m_.names.str(t->name)), t->record->index, t->key_fields});
  }
  for (const auto& x : p.indexes) {
    out_.indexes.push_back({std::string(m_.names.str(x->name)), x->table->index, x->fields, x->unique});
  }
  for (const auto& v : p.vars) {
    out_.vars.push_back({std::string(m_.names.str(v->name)), type_id(v->type), literal(v->init)});
  }
  for (const auto& e : p.events) {
    out_.events.push_back({std::string(m_.names.str(e->name)), e->args->index, e->handler->index});
  }
  out_.functions.resize(p.functions.size());
  for (const auto& fi : p.functions) {
    vm::Function& f = out_.functions[fi->index];
    f.name = std::string(m_.names.str(fi->name));
    f.kind = fi->kind == FnKind::Handler ? vm::FnKind::Handler
             : fi->kind == FnKind::Query ? vm::FnKind::Query
                                         : vm::FnKind::Helper;
    f.event = fi->event;
    for (uint32_t i = 0; i < fi->param_count; ++i) {
      f.param_names.emplace_back(m_.names.str(fi->locals[i].name));
      f.param_types.push_back(type_id(fi->locals[i].type));
    }
    f.result_type = type_id(fi->result);
    FnGen gen(*this, *fi, f);
    gen.run();
  }
  return !failed_;
}

// ---------------------------------------------------------------------------
// emitting

void FnGen::emit(Instr i) {
  uint32_t pc = static_cast<uint32_t>(f_.code.size());
  if (pos_.line != 0 && (f_.lines.empty() || f_.lines.back().line != pos_.line ||
                         f_.lines.back().col != pos_.col)) {
    if (!f_.lines.empty() && f_.lines.back().pc == pc) f_.lines.pop_back();
    f_.lines.push_back(vm::LineEntry{pc, pos_.line, pos_.col});
  }
  f_.code.push_back(i);
}

uint32_t FnGen::alloc() {
  if (top_ >= vm::kMaxRegisters) {
    if (!too_many_registers_) {
      mg_.error(pos_, fmt::format("`{}` needs more than {} registers here; split it into helpers",
                                  mg_.module().names.str(fi_.name), vm::kMaxRegisters));
    }
    too_many_registers_ = true;
    return vm::kMaxRegisters - 1;
  }
  uint32_t r = top_++;
  max_ = std::max(max_, top_);
  return r;
}

size_t FnGen::jump(Op op, uint32_t a) {
  size_t at = f_.code.size();
  emit(vm::make_asbx(op, r8(a), 0));
  return at;
}

void FnGen::patch(size_t at, size_t target) {
  int64_t offset = static_cast<int64_t>(target) - static_cast<int64_t>(at + 1);
  if (offset < -vm::kMaxJump || offset > vm::kMaxJump) {
    mg_.error(pos_, fmt::format("`{}` is too long: a jump spans more than {} instructions; split "
                                "it into helpers",
                                mg_.module().names.str(fi_.name), vm::kMaxJump));
    return;
  }
  Instr i = f_.code[at];
  f_.code[at] = vm::make_asbx(vm::op_of(i), vm::a_of(i), static_cast<int32_t>(offset));
}

void FnGen::jump_to(Op op, uint32_t a, size_t target) { patch(jump(op, a), target); }

uint32_t FnGen::konst(const vm::Constant& c) {
  auto key = std::make_tuple(static_cast<int>(c.kind),
                             c.kind == vm::Constant::Kind::Num ? std::bit_cast<uint64_t>(c.num)
                                                               : uint64_t{c.boolean},
                             c.text);
  auto it = konst_index_.find(key);
  if (it != konst_index_.end()) return it->second;
  if (f_.constants.size() > vm::kMaxBx) {
    mg_.error(pos_, fmt::format("`{}` has more than {} constants; split it into helpers",
                                mg_.module().names.str(fi_.name), vm::kMaxBx + 1));
    return 0;
  }
  uint32_t index = static_cast<uint32_t>(f_.constants.size());
  f_.constants.push_back(c);
  konst_index_.emplace(key, index);
  return index;
}

uint32_t FnGen::konst_num(double d) {
  vm::Constant c;
  c.num = d;
  return konst(c);
}

uint32_t FnGen::konst_text(std::string_view s) {
  vm::Constant c;
  c.kind = vm::Constant::Kind::Text;
  c.text = std::string(s);
  return konst(c);
}

void FnGen::load_num(uint32_t dst, double d) {
  // Small integers ride in the instruction; -0 keeps its sign bit in K.
  bool minus_zero = d == 0 && std::signbit(d);
  if (d == std::floor(d) && d >= -vm::kSBxBias && d <= vm::kSBxBias && !minus_zero) {
    emit(vm::make_asbx(Op::LOADI, r8(dst), static_cast<int32_t>(d)));
  } else {
    abx(Op::LOADK, dst, konst_num(d));
  }
}

// ---------------------------------------------------------------------------
// functions and statements

void FnGen::run() {
  pos_ = fi_.pos;
  if (fi_.decl->body) block(fi_.decl->body);
  pos_ = fi_.decl->body ? fi_.decl->body->end : fi_.pos;
  abc(Op::RET0, 0);
  f_.frame_size = std::max<uint32_t>(max_, 1);
}

void FnGen::block(const Block* b) {
  for (const Stmt* s : b->stmts) stmt(s);
}

void FnGen::stmt(const Stmt* s) {
  uint32_t mark = top_;
  pos_ = s->pos;
  switch (s->kind) {
    case StmtKind::Let: value_to(s->expr, reg(s->slot), s->type); break;
    case StmtKind::Assign: assign(s); break;
    case StmtKind::If: {
      std::vector<size_t> skip;
      if (s->name) {  // `if let r = t.get(k)`: none is 0
        expr_to(s->expr, reg(s->slot));
        skip.push_back(jump(Op::JF, reg(s->slot)));
      } else {
        cond_jump(s->expr, false, skip);
      }
      top_ = mark;
      block(s->body);
      if (s->else_body) {
        size_t over = jump(Op::JMP);
        patch_all(skip, f_.code.size());
        block(s->else_body);
        patch(over, f_.code.size());
      } else {
        patch_all(skip, f_.code.size());
      }
      break;
    }
    case StmtKind::While: {
      size_t top = f_.code.size();
      std::vector<size_t> exits;
      cond_jump(s->expr, false, exits);
      top_ = mark;
      loops_.push_back(Loop{top, exits});
      block(s->body);
      pos_ = s->pos;
      jump_to(Op::JMP, 0, top);
      patch_all(loops_.back().breaks, f_.code.size());
      loops_.pop_back();
      break;
    }
    case StmtKind::For: for_loop(s); break;
    case StmtKind::Break: loops_.back().breaks.push_back(jump(Op::JMP)); break;
    case StmtKind::Continue: jump_to(Op::JMP, 0, loops_.back().top); break;
    case StmtKind::Return:
      if (!s->expr) {
        abc(Op::RET0, 0);
      } else {
        abc(Op::RET, value_reg(s->expr, fi_.result));
      }
      break;
    case StmtKind::Fail: {
      uint32_t r = expr_reg(s->expr);
      pos_ = s->pos;
      abc(Op::FAIL, r);
      break;
    }
    case StmtKind::Expr: expr_to(s->expr, alloc()); break;
    case StmtKind::Block: block(s->body); break;
    case StmtKind::Error: break;  // never in a checked module
  }
  top_ = mark;
}

// A condition as jumps, without making a bool where none is needed:
// `not` swaps the sense, `and`/`or` short-circuit into the jump lists,
// `!=` jumps on the equality's opposite, a literal jumps or falls through.
void FnGen::cond_jump(const Expr* c, bool when, std::vector<size_t>& jumps) {
  uint32_t mark = top_;
  if (c->kind == ExprKind::Bool) {
    if (c->boolean == when) jumps.push_back(jump(Op::JMP));
    return;
  }
  if (c->kind == ExprKind::Unary && c->unary == UnaryOp::Not) {
    cond_jump(c->lhs, !when, jumps);
    return;
  }
  if (c->kind == ExprKind::Binary && (c->binary == BinaryOp::And || c->binary == BinaryOp::Or)) {
    // `a and b` is false when either is; true only when both are.
    bool short_on = c->binary == BinaryOp::Or;  // the value that decides at once
    if (when == short_on) {
      cond_jump(c->lhs, when, jumps);
      cond_jump(c->rhs, when, jumps);
    } else {
      std::vector<size_t> decided;
      cond_jump(c->lhs, short_on, decided);
      cond_jump(c->rhs, when, jumps);
      patch_all(decided, f_.code.size());
    }
    return;
  }
  bool literal_operands = c->kind == ExprKind::Binary && c->lhs->kind == ExprKind::Number &&
                          c->rhs->kind == ExprKind::Number;  // folded below instead
  if (c->kind == ExprKind::Binary && c->binary == BinaryOp::Ne && !literal_operands) {
    // `a != b` jumps when `a == b` does the opposite.
    Expr eq = *c;
    eq.binary = BinaryOp::Eq;
    uint32_t r = alloc();
    binary(&eq, r);
    jumps.push_back(jump(when ? Op::JF : Op::JT, r));
    top_ = mark;
    return;
  }
  top_ = mark;
  uint32_t r = expr_reg(c);
  jumps.push_back(jump(when ? Op::JT : Op::JF, r));
  top_ = mark;
}

// The loop's body, then the jump back to `top`; `exit_jump` and every
// `break` land after it.
void FnGen::loop_body(const Block* body, size_t top, size_t exit_jump, Pos loop) {
  loops_.push_back(Loop{top, {}});
  block(body);
  pos_ = loop;  // a step budget running out is reported at the loop
  jump_to(Op::JMP, 0, top);
  size_t exit = f_.code.size();
  patch(exit_jump, exit);
  for (size_t b : loops_.back().breaks) patch(b, exit);
  loops_.pop_back();
}

void FnGen::for_loop(const Stmt* s) {
  uint32_t var = reg(s->slot);
  if (s->for_kind == ForKind::Range) {
    // R[it] counts from a while below R[it+1]; RNEXT puts the value in R[it+2].
    uint32_t it = alloc();
    alloc();
    alloc();
    expr_to(s->expr->lhs, it);
    expr_to(s->expr->rhs, it + 1);
    pos_ = s->pos;
    size_t top = f_.code.size();
    size_t exit = jump(Op::RNEXT, it);
    abc(Op::MOVE, var, it + 2);
    loop_body(s->body, top, exit, s->pos);
    return;
  }
  uint32_t it = alloc();
  alloc();
  switch (s->for_kind) {
    case ForKind::Array: abc(Op::AITER, it, expr_reg(s->expr)); break;
    case ForKind::Table: abx(s->descending ? Op::TITERD : Op::TITER, it, s->expr->index); break;
    case ForKind::View: abc(s->descending ? Op::VITERD : Op::VITER, it, expr_reg(s->expr)); break;
    case ForKind::Range: break;
  }
  pos_ = s->pos;
  size_t top = f_.code.size();
  size_t exit = jump(Op::NEXT, it);
  abc(Op::MOVE, var, it + 1);
  loop_body(s->body, top, exit, s->pos);
}

void FnGen::assign(const Stmt* s) {
  const Expr* target = s->target;
  const Expr* value = s->expr;
  switch (target->kind) {
    case ExprKind::Name:
      if (target->ref == Ref::Var) {
        uint32_t r = value_reg(value, target->type);
        pos_ = target->pos;
        abx(Op::SETV, r, target->index);
      } else {
        uint32_t slot = reg(target->index);
        if (refers_to(value, slot)) {
          // `x = R { a: x.a }`: build the value aside, then move it in.
          uint32_t t = alloc();
          value_to(value, t, target->type);
          abc(Op::MOVE, slot, t);
        } else {
          value_to(value, slot, target->type);
        }
      }
      return;
    case ExprKind::Field:
      if (target->lhs->type->is(TypeKind::Row)) {
        uint32_t row = expr_reg(target->lhs);
        uint32_t v = value_reg(value, target->type);
        pos_ = target->pos;
        abc(Op::RSET, row, target->index, v);
      } else {
        Place p = load_place(target->lhs);
        uint32_t v = value_reg(value, target->type);
        abc(Op::SETF, p.reg, target->index, v);
        write_back(p);
      }
      return;
    case ExprKind::Index: {
      Place p = load_place(target->lhs);
      uint32_t i = expr_reg(target->rhs);
      uint32_t v = value_reg(value, target->type);
      pos_ = target->pos;
      abc(Op::ASET, p.reg, i, v);
      write_back(p);
      return;
    }
    default: return;  // never in a checked module
  }
}

FnGen::Place FnGen::load_place(const Expr* e) {
  if (e->kind == ExprKind::Name) return Place{reg(e->index), {}};
  Place p = load_place(e->lhs);
  // The parent becomes private first, so a copy made now marks the child
  // shared and the change below copies the child too.
  abc(Op::UNSHARE, p.reg);
  uint32_t t = alloc();
  PlaceStep step{e, p.reg, 0, t};
  pos_ = e->pos;
  if (e->kind == ExprKind::Field) {
    abc(Op::GETF, t, p.reg, e->index);
  } else {
    step.index = expr_reg(e->rhs);
    abc(Op::AGET, t, p.reg, step.index);
  }
  p.steps.push_back(step);
  p.reg = t;
  return p;
}

void FnGen::write_back(const Place& p) {
  for (auto it = p.steps.rbegin(); it != p.steps.rend(); ++it) {
    if (it->e->kind == ExprKind::Field) {
      abc(Op::SETF, it->parent, it->e->index, it->value);
    } else {
      abc(Op::ASET, it->parent, it->index, it->value);
    }
  }
}

// ---------------------------------------------------------------------------
// expressions

bool FnGen::refers_to(const Expr* e, uint32_t r) const {
  if (!e) return false;
  if (e->kind == ExprKind::Name && e->ref == Ref::Local && reg(e->index) == r) return true;
  if (refers_to(e->lhs, r) || refers_to(e->rhs, r)) return true;
  for (const Expr* a : e->args) {
    if (refers_to(a, r)) return true;
  }
  for (const FieldInit& f : e->fields) {
    if (refers_to(f.value, r)) return true;
  }
  return false;
}

uint32_t FnGen::expr_reg(const Expr* e) {
  if (e->kind == ExprKind::Name && e->ref == Ref::Local) return reg(e->index);
  if (e->kind == ExprKind::Name && e->ref == Ref::EventArgs) return 0;
  uint32_t r = alloc();
  expr_to(e, r);
  return r;
}

// Where a value is stored into a variable, a container, an argument or a
// result: a row becomes a record value, a view an array, and a borrowed
// aggregate gains a holder.
void FnGen::finish_value(uint32_t r, const Expr* e, const Type* target) {
  const Type* from = e->type;
  if (from->is(TypeKind::Row) && target->is(TypeKind::Record)) {
    abc(Op::ROWVAL, r, r);
  } else if (from->is(TypeKind::View) && target->is(TypeKind::Array)) {
    abc(Op::VARR, r, r);
  } else if (is_aggregate(target) && borrowed(e)) {
    abc(Op::SHARE, r);
  }
}

void FnGen::value_to(const Expr* e, uint32_t dst, const Type* target) {
  expr_to(e, dst);
  finish_value(dst, e, target);
}

uint32_t FnGen::value_reg(const Expr* e, const Type* target) {
  bool converts = (e->type->is(TypeKind::Row) && target->is(TypeKind::Record)) ||
                  (e->type->is(TypeKind::View) && target->is(TypeKind::Array));
  uint32_t r = converts ? alloc() : expr_reg(e);
  if (converts) expr_to(e, r);
  finish_value(r, e, target);
  return r;
}

void FnGen::expr_to(const Expr* e, uint32_t dst) {
  uint32_t mark = top_;
  switch (e->kind) {
    case ExprKind::Number: load_num(dst, e->number); break;
    case ExprKind::Text: abx(Op::LOADK, dst, konst_text(mg_.module().names.str(e->sym))); break;
    case ExprKind::Bool: abc(Op::LOADB, dst, e->boolean ? 1 : 0); break;
    case ExprKind::Name:
      switch (e->ref) {
        case Ref::Local:
          if (reg(e->index) != dst) abc(Op::MOVE, dst, reg(e->index));
          break;
        case Ref::Var: abx(Op::GETV, dst, e->index); break;
        case Ref::EventArgs:
          if (dst != 0) abc(Op::MOVE, dst, 0);
          break;
        case Ref::Now: abc(Op::NOW, dst); break;
        default: assert(false && "a name that is not a value");
      }
      break;
    case ExprKind::Unary:
      if (fold(e, dst)) break;
      abc(e->unary == UnaryOp::Neg ? Op::NEG : Op::NOT, dst, expr_reg(e->lhs));
      break;
    case ExprKind::Binary: binary(e, dst); break;
    case ExprKind::Field: field(e, dst); break;
    case ExprKind::Index: index(e, dst); break;
    case ExprKind::Call: call(e, dst); break;
    case ExprKind::RecordLit: record_lit(e, dst); break;
    case ExprKind::ObjectLit: object_lit(e, dst); break;
    case ExprKind::ArrayLit: array_lit(e, dst); break;
    case ExprKind::Range:
    case ExprKind::Error: assert(false && "not a value in a checked module"); break;
  }
  top_ = mark;
}

// Constant folding of operations on literals.
bool FnGen::fold(const Expr* e, uint32_t dst) {
  if (e->kind == ExprKind::Unary) {
    if (e->unary == UnaryOp::Neg && e->lhs->kind == ExprKind::Number) {
      load_num(dst, -e->lhs->number);
      return true;
    }
    if (e->unary == UnaryOp::Not && e->lhs->kind == ExprKind::Bool) {
      abc(Op::LOADB, dst, e->lhs->boolean ? 0 : 1);
      return true;
    }
    return false;
  }
  const Expr* l = e->lhs;
  const Expr* r = e->rhs;
  if (l->kind == ExprKind::Number && r->kind == ExprKind::Number) {
    double a = l->number, b = r->number;
    switch (e->binary) {
      case BinaryOp::Add: load_num(dst, a + b); return true;
      case BinaryOp::Sub: load_num(dst, a - b); return true;
      case BinaryOp::Mul: load_num(dst, a * b); return true;
      case BinaryOp::Div: load_num(dst, a / b); return true;
      case BinaryOp::Mod: load_num(dst, std::fmod(a, b)); return true;
      case BinaryOp::Eq: abc(Op::LOADB, dst, a == b); return true;
      case BinaryOp::Ne: abc(Op::LOADB, dst, a != b); return true;
      case BinaryOp::Lt: abc(Op::LOADB, dst, a < b); return true;
      case BinaryOp::Le: abc(Op::LOADB, dst, a <= b); return true;
      case BinaryOp::Gt: abc(Op::LOADB, dst, a > b); return true;
      case BinaryOp::Ge: abc(Op::LOADB, dst, a >= b); return true;
      default: return false;
    }
  }
  if (l->kind == ExprKind::Text && r->kind == ExprKind::Text && e->binary == BinaryOp::Add) {
    std::string joined(mg_.module().names.str(l->sym));
    joined += mg_.module().names.str(r->sym);
    if (joined.size() > vm::kMaxTextBytes) return false;
    abx(Op::LOADK, dst, konst_text(joined));
    return true;
  }
  return false;
}

void FnGen::binary(const Expr* e, uint32_t dst) {
  if (fold(e, dst)) return;
  if (e->binary == BinaryOp::And || e->binary == BinaryOp::Or) {
    // Short circuit: the right side runs only when the left does not decide.
    expr_to(e->lhs, dst);
    size_t done = jump(e->binary == BinaryOp::And ? Op::JF : Op::JT, dst);
    expr_to(e->rhs, dst);
    patch(done, f_.code.size());
    return;
  }
  const Type* lt = e->lhs->type;
  uint32_t l = expr_reg(e->lhs);
  uint32_t r = expr_reg(e->rhs);
  pos_ = e->pos;
  bool num = lt->is(TypeKind::Num);
  bool text = lt->is(TypeKind::Text);
  switch (e->binary) {
    case BinaryOp::Add: abc(text ? Op::CONCAT : Op::ADD, dst, l, r); return;
    case BinaryOp::Sub: abc(Op::SUB, dst, l, r); return;
    case BinaryOp::Mul: abc(Op::MUL, dst, l, r); return;
    case BinaryOp::Div: abc(Op::DIV, dst, l, r); return;
    case BinaryOp::Mod: abc(Op::MOD, dst, l, r); return;
    case BinaryOp::Eq:
    case BinaryOp::Ne: {
      Op op = num ? Op::EQ : text ? Op::EQT : lt->is(TypeKind::Bool) ? Op::EQB : Op::EQR;
      if (op == Op::EQR) {
        // Rows compare as the record values they hold.
        if (lt->is(TypeKind::Row)) {
          uint32_t t = alloc();
          abc(Op::ROWVAL, t, l);
          l = t;
        }
        if (e->rhs->type->is(TypeKind::Row)) {
          uint32_t t = alloc();
          abc(Op::ROWVAL, t, r);
          r = t;
        }
      }
      abc(op, dst, l, r);
      if (e->binary == BinaryOp::Ne) abc(Op::NOT, dst, dst);
      return;
    }
    case BinaryOp::Lt: abc(num ? Op::LT : Op::LTT, dst, l, r); return;
    case BinaryOp::Le: abc(num ? Op::LE : Op::LET, dst, l, r); return;
    case BinaryOp::Gt: abc(num ? Op::LT : Op::LTT, dst, r, l); return;
    case BinaryOp::Ge: abc(num ? Op::LE : Op::LET, dst, r, l); return;
    case BinaryOp::And:
    case BinaryOp::Or: return;
  }
}

void FnGen::field(const Expr* e, uint32_t dst) {
  uint32_t table = e->lhs->index;  // for table members: the TableName's table
  switch (e->ref) {
    case Ref::RecordField: {
      uint32_t b = expr_reg(e->lhs);
      pos_ = e->pos;
      abc(e->lhs->type->is(TypeKind::Row) ? Op::RGET : Op::GETF, dst, b, e->index);
      return;
    }
    case Ref::TableCount: abx(Op::TCOUNT, dst, table); return;
    case Ref::TableFirst: pos_ = e->pos; abx(Op::TFIRST, dst, table); return;
    case Ref::TableLast: pos_ = e->pos; abx(Op::TLAST, dst, table); return;
    case Ref::ViewCount: abc(Op::VCOUNT, dst, expr_reg(e->lhs)); return;
    case Ref::ViewFirst: {
      uint32_t v = expr_reg(e->lhs);
      pos_ = e->pos;
      abc(Op::VFIRST, dst, v);
      return;
    }
    case Ref::ViewLast: {
      uint32_t v = expr_reg(e->lhs);
      pos_ = e->pos;
      abc(Op::VLAST, dst, v);
      return;
    }
    case Ref::ViewEmpty: abc(Op::VEMPTY, dst, expr_reg(e->lhs)); return;
    case Ref::ArrayCount: abc(Op::ALEN, dst, expr_reg(e->lhs)); return;
    case Ref::IndexAll: abx(Op::IALL, dst, e->index); return;
    default: assert(false && "unresolved field");
  }
}

void FnGen::index(const Expr* e, uint32_t dst) {
  switch (e->ref) {
    case Ref::ArrayElem: {
      uint32_t b = expr_reg(e->lhs);
      uint32_t i = expr_reg(e->rhs);
      pos_ = e->pos;
      abc(Op::AGET, dst, b, i);
      return;
    }
    case Ref::TableRow:
      key_to(e->args, *prog_.tables[e->lhs->index], dst);
      pos_ = e->start;
      abx(Op::TGET, dst, e->lhs->index);
      return;
    case Ref::TableView: {
      if (prog_.tables[e->lhs->index]->composite()) {
        composite_view(e, prog_.tables[e->lhs->index]->text_mask(), Op::TVIEW, e->lhs->index, dst);
        return;
      }
      uint32_t lo = alloc();
      alloc();
      expr_to(e->rhs->lhs, lo);
      expr_to(e->rhs->rhs, lo + 1);
      abx(Op::TVIEW, lo, e->lhs->index);
      if (dst != lo) abc(Op::MOVE, dst, lo);
      return;
    }
    case Ref::IndexView:
    case Ref::IndexRow: {
      const IndexInfo& x = *prog_.indexes[e->index];
      composite_view(e, x.text_mask(), e->ref == Ref::IndexRow ? Op::IGET : Op::IVIEW, x.index, dst);
      return;
    }
    default: assert(false && "unresolved index");
  }
}

// A key into `dst`: a one-field key's value, or a composite key made by KEY
// from its fields' values in consecutive fresh registers.
void FnGen::key_to(const std::vector<Expr*>& parts, const TableInfo& t, uint32_t dst) {
  if (!t.composite()) {
    expr_to(parts[0], dst);
    return;
  }
  auto n = static_cast<uint32_t>(parts.size());
  uint32_t base = alloc_block(n);
  for (uint32_t i = 0; i < n; ++i) expr_to(parts[i], base + i);
  pos_ = parts[0]->start;
  abc(Op::KEY, base, t.text_mask(), n);
  if (dst != base) abc(Op::MOVE, dst, base);
}

// A view of a composite-key table: over a prefix of the key (KEYPFX gives
// both bounds), or with a range as the last subscript (two KEYs: the
// prefix with the range's start, and with its end).
void FnGen::composite_view(const Expr* e, uint32_t full_mask, Op op, uint32_t bx, uint32_t dst) {
  auto n = static_cast<uint32_t>(e->args.size());
  uint32_t mask = full_mask & ((1u << n) - 1);
  const Expr* last = e->args.back();
  uint32_t lo = alloc_block(std::max(n, 2u));
  for (uint32_t i = 0; i + 1 < n; ++i) expr_to(e->args[i], lo + i);
  pos_ = e->pos;
  if (last->kind != ExprKind::Range) {
    expr_to(last, lo + n - 1);
    abc(Op::KEYPFX, lo, mask, n);
  } else {
    uint32_t hi = alloc_block(n);
    for (uint32_t i = 0; i + 1 < n; ++i) abc(Op::MOVE, hi + i, lo + i);
    expr_to(last->lhs, lo + n - 1);
    expr_to(last->rhs, hi + n - 1);
    pos_ = e->pos;
    abc(Op::KEY, lo, mask, n);
    abc(Op::KEY, hi, mask, n);
    abc(Op::MOVE, lo + 1, hi);
  }
  pos_ = e->pos;
  abx(op, lo, bx);
  if (dst != lo) abc(Op::MOVE, dst, lo);
}

// `n` consecutive fresh registers; the first.
uint32_t FnGen::alloc_block(uint32_t n) {
  uint32_t first = alloc();
  for (uint32_t i = 1; i < n; ++i) alloc();
  return first;
}

void FnGen::call(const Expr* e, uint32_t dst) {
  switch (e->ref) {
    case Ref::CallFn: return call_fn(e, dst);
    case Ref::CallBuiltin: return call_builtin(e, dst);
    default: return call_method(e, dst);
  }
}

void FnGen::call_fn(const Expr* e, uint32_t dst) {
  const FunctionInfo& fn = *prog_.functions[e->index];
  // Arguments go to consecutive registers; the callee's frame starts at
  // the first, where its result comes back.
  uint32_t base = top_;
  for (size_t i = 0; i < std::max<size_t>(e->args.size(), 1); ++i) alloc();
  for (size_t i = 0; i < e->args.size(); ++i) {
    value_to(e->args[i], base + static_cast<uint32_t>(i), fn.locals[i].type);
  }
  pos_ = e->lhs->pos;
  abx(Op::CALL, base, e->index);
  if (dst != base) abc(Op::MOVE, dst, base);
}

void FnGen::call_builtin(const Expr* e, uint32_t dst) {
  auto id = static_cast<stdlib::BuiltinId>(e->index);
  if (id == stdlib::BuiltinId::Distinct) {
    uint32_t a = expr_reg(e->args[0]);
    TypeKind k = e->args[0]->type->elem->kind;
    vm::ItemKind kind = k == TypeKind::Num    ? vm::ItemKind::Num
                        : k == TypeKind::Text ? vm::ItemKind::Text
                        : k == TypeKind::Bool ? vm::ItemKind::Bool
                                              : vm::ItemKind::Record;
    abc(Op::DISTINCT, dst, a, static_cast<uint32_t>(kind));
    return;
  }
  // A method's receiver is value 0 (a view given as the array of its rows).
  std::vector<const Expr*> values;
  if (stdlib::builtin(id).form == stdlib::Form::Method) values.push_back(e->lhs->lhs);
  for (const Expr* a : e->args) values.push_back(a);
  uint32_t base = top_;
  for (size_t i = 0; i < std::max<size_t>(values.size(), 1); ++i) alloc();
  for (size_t i = 0; i < values.size(); ++i) receiver_to(values[i], base + static_cast<uint32_t>(i));
  pos_ = e->lhs->pos;
  abc(Op::CALLB, base, e->index, static_cast<uint32_t>(values.size()));
  if (dst != base) abc(Op::MOVE, dst, base);
}

// A value into `dst`, a view made the array of its rows.
void FnGen::receiver_to(const Expr* e, uint32_t dst) {
  expr_to(e, dst);
  if (e->type->is(TypeKind::View)) abc(Op::VARR, dst, dst);
}

// `xs.sorted(...)`: SORT's keys as a text constant (vm/bytecode.h).
void FnGen::sorted(const Expr* e, uint32_t dst) {
  const Expr* receiver = e->lhs->lhs;
  const Type* item = e->type->elem;
  auto kind_of = [](const Type* t) {
    return static_cast<uint8_t>(t->is(TypeKind::Num) ? vm::ItemKind::Num
                                : t->is(TypeKind::Text) ? vm::ItemKind::Text
                                                        : vm::ItemKind::Bool);
  };
  std::string keys;
  if (!item->is(TypeKind::Record)) {
    bool desc = !e->args.empty();  // `xs.sorted(desc)`
    keys += static_cast<char>(vm::kSortItself);
    keys += static_cast<char>(kind_of(item) | (desc ? vm::kSortDescending : 0));
  } else {
    for (const Expr* a : e->args) {
      keys += static_cast<char>(a->index);
      keys += static_cast<char>(kind_of(item->record->fields[a->index].type) | (a->desc ? vm::kSortDescending : 0));
    }
  }
  uint32_t k = konst_text(keys);
  receiver_to(receiver, dst);
  pos_ = e->lhs->pos;
  abx(Op::SORT, dst, k);
}

// A method: the callee is `receiver.name`.
void FnGen::call_method(const Expr* e, uint32_t dst) {
  const Expr* callee = e->lhs;
  const Expr* receiver = callee->lhs;
  if (e->ref == Ref::ViewAt) {
    uint32_t v = expr_reg(receiver);
    uint32_t i = expr_reg(e->args[0]);
    pos_ = callee->pos;
    abc(Op::VAT, dst, v, i);
    return;
  }
  if (e->ref == Ref::ArraySorted) return sorted(e, dst);
  if (e->ref == Ref::IndexGet) {
    const IndexInfo& x = *prog_.indexes[e->index];
    composite_view(e, x.text_mask(), Op::IFIND, x.index, dst);
    return;
  }
  uint32_t table = receiver->index;
  switch (e->ref) {
    case Ref::TableGet:
      key_to(e->args, *prog_.tables[table], dst);
      pos_ = callee->pos;
      abx(Op::TFIND, dst, table);
      return;
    case Ref::TableHas:
      key_to(e->args, *prog_.tables[table], dst);
      abx(Op::THAS, dst, table);
      return;
    case Ref::TableAt:
      expr_to(e->args[0], dst);
      pos_ = callee->pos;
      abx(Op::TAT, dst, table);
      return;
    case Ref::TableAdd:
    case Ref::TablePut: {
      const Type* row = prog_.tables[table]->record->type;
      uint32_t r = value_reg(e->args[0], row);
      pos_ = callee->pos;
      abx(e->ref == Ref::TableAdd ? Op::TADD : Op::TPUT, r, table);
      return;
    }
    case Ref::TableRemove: {
      uint32_t k = 0;
      if (prog_.tables[table]->composite()) {
        k = alloc();
        key_to(e->args, *prog_.tables[table], k);
      } else {
        k = expr_reg(e->args[0]);
      }
      pos_ = callee->pos;
      abx(Op::TDEL, k, table);
      return;
    }
    case Ref::ArrayPush: {
      Place p = load_place(receiver);
      uint32_t v = value_reg(e->args[0], receiver->type->elem);
      abc(Op::APUSH, p.reg, v);
      write_back(p);
      return;
    }
    case Ref::ArrayPop: {
      Place p = load_place(receiver);
      pos_ = callee->pos;
      abc(Op::APOP, dst, p.reg);
      write_back(p);
      return;
    }
    default: assert(false && "unresolved call");
  }
}

void FnGen::record_lit(const Expr* e, uint32_t dst) {
  const RecordInfo& r = *e->type->record;
  uint32_t rec = refers_to(e, dst) ? alloc() : dst;
  abx(Op::NEWREC, rec, r.index);
  for (const FieldInit& f : e->fields) {
    uint32_t mark = top_;
    uint32_t v = value_reg(f.value, r.fields[f.index].type);
    abc(Op::SETF, rec, f.index, v);
    top_ = mark;
  }
  if (rec != dst) abc(Op::MOVE, dst, rec);
}

void FnGen::object_lit(const Expr* e, uint32_t dst) {
  const Type* t = e->type;
  uint32_t obj = refers_to(e, dst) ? alloc() : dst;
  const vm::TypeDesc& d = mg_.out().types[mg_.type_id(t)];
  if (d.index > vm::kMaxBx) {  // NEWOBJ names the shape in its 16-bit Bx
    mg_.error(e->pos, fmt::format("more than {} object shapes (distinct sets of object fields) in the "
                                  "module; use a record type for some",
                                  vm::kMaxBx + 1));
    return;
  }
  abx(Op::NEWOBJ, obj, d.index);
  for (const FieldInit& f : e->fields) {
    uint32_t mark = top_;
    uint32_t v = value_reg(f.value, t->fields[f.index].type);
    abc(Op::SETF, obj, f.index, v);
    top_ = mark;
  }
  if (obj != dst) abc(Op::MOVE, dst, obj);
}

void FnGen::array_lit(const Expr* e, uint32_t dst) {
  const Type* elem = e->type->elem;
  uint32_t arr = refers_to(e, dst) ? alloc() : dst;
  abc(Op::NEWARR, arr, is_aggregate(elem) ? 1 : 0);
  for (const Expr* item : e->args) {
    uint32_t mark = top_;
    abc(Op::APUSH, arr, value_reg(item, elem));
    top_ = mark;
  }
  if (arr != dst) abc(Op::MOVE, dst, arr);
}

}  // namespace

std::unique_ptr<vm::Module> generate(const CheckedModule& m, Diagnostics& diags) {
  assert(m.ok());
  auto out = std::make_unique<vm::Module>();
  ModuleGen gen(m, *out, diags);
  if (!gen.run()) return nullptr;
  return out;
}

}  // namespace aup

// The checker's annotations and program info (what code generation reads).
// Its diagnostics are tested by the .aup corpus in tests/check/.
#include <doctest/doctest.h>

#include <string>

#include "compiler/compiler.h"

namespace aup {
namespace {

std::unique_ptr<CheckedModule> ok(std::string src) {
  auto m = check_source("t.aup", std::move(src));
  if (!m->ok()) FAIL_CHECK(m->diags.list()[0].message);
  return m;
}

// The body-carrying declaration (on, query or fn) called `name`.
const Decl& decl_named(const CheckedModule& m, std::string_view name) {
  for (const Decl* d : m.ast.module.decls) {
    if (m.names.str(d->name) == name && d->body) return *d;
  }
  FAIL("no declaration " << name);
  throw 0;
}

TEST_SUITE("checker") {
  TEST_CASE("program info is numbered in declaration order") {
    auto m = ok(
        "record A { id: num, n: num = 0 }\nrecord B { k: text }\n"
        "table as: A key id\ntable bs: B key k\nvar v: num = 1\nvar w: text = \"\"\n"
        "event e { x: num }\non e { }\nquery q() { return 1 }\nfn h() { }\n");
    const Program& p = m->program;
    REQUIRE(p.records.size() == 3);  // A, B and e's arguments
    CHECK(p.records[2]->is_event_args);
    REQUIRE(p.tables.size() == 2);
    REQUIRE(p.tables[1]->key_types.size() == 1);
    CHECK(p.tables[1]->key_types[0]->is(TypeKind::Text));
    CHECK(p.tables[0]->record == p.records[0].get());
    CHECK(p.records[0]->stored);
    REQUIRE(p.vars.size() == 2);
    CHECK(p.vars[1]->type->is(TypeKind::Text));
    REQUIRE(p.events.size() == 1);
    REQUIRE(p.events[0]->handler);
    REQUIRE(p.functions.size() == 3);
    CHECK(p.functions[0]->kind == FnKind::Query);
    CHECK(p.functions[1]->kind == FnKind::Helper);
    CHECK(p.functions[2]->kind == FnKind::Handler);
    CHECK(p.functions[0]->result->is(TypeKind::Num));
  }

  TEST_CASE("expressions carry what they resolve to") {
    auto m = ok(
        "record A { id: num, n: num }\ntable as: A key id\nvar v: num = 1\n"
        "event e { id: num }\n"
        "on e {\n  let a = as[e.id]\n  a.n = v + as.count\n  as.remove(e.id)\n  let m = max(1, 2, now)\n}\n");
    const Decl& on = decl_named(*m, "e");
    const auto& s = on.body->stmts;
    REQUIRE(s.size() == 4);
    // let a = as[e.id]
    CHECK(s[0]->slot == 0);
    CHECK(s[0]->expr->ref == Ref::TableRow);
    CHECK(s[0]->expr->type->is(TypeKind::Row));
    CHECK(s[0]->expr->lhs->ref == Ref::TableName);
    CHECK(s[0]->expr->rhs->ref == Ref::RecordField);
    CHECK(s[0]->expr->rhs->lhs->ref == Ref::EventArgs);
    // a.n = v + as.count
    CHECK(s[1]->target->ref == Ref::RecordField);
    CHECK(s[1]->target->index == 1);
    CHECK(s[1]->target->lhs->ref == Ref::Local);
    CHECK(s[1]->expr->lhs->ref == Ref::Var);
    CHECK(s[1]->expr->rhs->ref == Ref::TableCount);
    CHECK(s[2]->expr->ref == Ref::TableRemove);
    CHECK(s[3]->expr->ref == Ref::CallBuiltin);
    CHECK(s[3]->expr->args[2]->ref == Ref::Now);
    const FunctionInfo& h = *m->program.functions[0];
    CHECK(h.writes);
    REQUIRE(h.membership.size() == 1);
  }

  TEST_CASE("local slots are reused after a scope closes") {
    auto m = ok("fn f(p: num) {\n  if true { let a = 1; let b = 2 }\n  let c = 3\n  for i in 0 .. 3 { let d = i }\n}\n");
    const FunctionInfo& f = *m->program.functions[0];
    CHECK(f.param_count == 1);
    CHECK(f.frame_slots == 4);  // p, c, i and d alive at once
    const auto& s = decl_named(*m, "f").body->stmts;
    CHECK(s[1]->slot == 1);  // c reuses a's slot
    CHECK(s[2]->slot == 2);  // i
    CHECK(s[2]->for_kind == ForKind::Range);
  }

  TEST_CASE("effects are closed over calls") {
    auto m = ok(
        "record A { id: num }\ntable as: A key id\n"
        "fn inner(x: num) { as.add(A { id: x }) }\nfn middle(x: num) { inner(x) }\n"
        "fn pure(x: num): num { return x + 1 }\n"
        "event e { x: num }\non e { middle(e.x) }\n");
    const Program& p = m->program;
    CHECK(p.functions[0]->writes);
    CHECK(p.functions[1]->writes);
    CHECK_FALSE(p.functions[2]->writes);
    CHECK(p.functions[1]->write_site.pos.line == 3);
    REQUIRE(p.functions[3]->membership.size() == 1);
  }

  TEST_CASE("composite keys: fields, types, mask; subscripts select rows or views") {
    auto m = ok(
        "record L { name: text, w: num, d: num, o: num }\ntable ls: L key (w, name, o)\n"
        "fn row(w: num, n: text, o: num): ls { return ls[w, n, o] }\n"
        "query q(w: num) { return { a: ls[w].count, b: ls[w, \"x\"].count, c: ls[w, \"x\", 1 .. 3].count } }\n");
    const TableInfo& t = *m->program.tables[0];
    REQUIRE(t.key_fields == std::vector<uint32_t>{1, 0, 3});
    CHECK(t.composite());
    CHECK(t.text_mask() == 2u);
    CHECK(t.is_key_field(3));
    CHECK(!t.is_key_field(2));
    CHECK(m->program.functions[0]->result->is(TypeKind::Row));
    const Decl& q = decl_named(*m, "q");
    const Expr* obj = q.body->stmts[0]->expr;
    REQUIRE(obj->fields.size() == 3);
    for (const FieldInit& f : obj->fields) CHECK(f.value->lhs->ref == Ref::TableView);
  }

  TEST_CASE("rows, views and values") {
    auto m = ok(
        "record A { id: num, n: num }\ntable as: A key id\n"
        "fn get(id: num): as { return as[id] }\n"
        "fn copy(id: num): A { return as[id] }\n"
        "query q() {\n  let v = as[1 .. 5]\n  let xs: [A] = v\n  return { n: v.count, rows: v, first: xs[0] }\n}\n");
    const FunctionInfo& q = *m->program.functions[2];
    REQUIRE(q.result->is(TypeKind::Object));
    CHECK(type_name(q.result, m->names) == "{n: num, rows: [A], first: A}");
    CHECK(m->program.functions[0]->result->is(TypeKind::Row));
    CHECK(m->program.functions[1]->result->is(TypeKind::Record));
  }

  TEST_CASE("diagnostics come out sorted by position, whatever stage found them") {
    auto m = check_source("t.aup", "fn f() {\n  let x = y\n  let = 2\n}\nfn g() { \xFF }\n");
    REQUIRE(m->diags.size() == 3);
    CHECK(m->diags.list()[0].pos.line == 2);  // checker
    CHECK(m->diags.list()[1].pos.line == 3);  // parser
    CHECK(m->diags.list()[2].pos.line == 5);  // lexer
  }
}

}  // namespace
}  // namespace aup

#include <doctest/doctest.h>

#include <fmt/format.h>

#include <string>

#include "compiler/parser.h"

namespace aup {
namespace {

struct Parsed {
  SourceFile file;
  Interner names;
  Diagnostics diags;
  Ast ast;
  explicit Parsed(std::string text) : file("t.aup", std::move(text)) {
    LexOutput lexed = lex(file, names, diags);
    parse(file, lexed, names, ast, diags);
    diags.finish();
  }
  const Decl& decl(size_t i) const { return *ast.module.decls.at(i); }
  // The statements of the first declaration's body.
  const std::vector<Stmt*>& body() const { return decl(0).body->stmts; }
  std::string first_error() const { return diags.empty() ? "" : diags.list()[0].message; }
};

// An expression as an S-expression, to check the tree's shape.
std::string sexpr(const Expr* e, const Interner& n) {
  static const char* kBinary[] = {"+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "and", "or"};
  switch (e->kind) {
    case ExprKind::Number: return fmt::format("{}", e->number);
    case ExprKind::Text: return fmt::format("\"{}\"", n.str(e->sym));
    case ExprKind::Bool: return e->boolean ? "true" : "false";
    case ExprKind::Name: return std::string(n.str(e->sym));
    case ExprKind::Unary:
      return fmt::format("({} {})", e->unary == UnaryOp::Neg ? "-" : "not", sexpr(e->lhs, n));
    case ExprKind::Binary:
      return fmt::format("({} {} {})", kBinary[static_cast<int>(e->binary)], sexpr(e->lhs, n),
                         sexpr(e->rhs, n));
    case ExprKind::Range: return fmt::format("(.. {} {})", sexpr(e->lhs, n), sexpr(e->rhs, n));
    case ExprKind::Field: return fmt::format("(. {} {})", sexpr(e->lhs, n), n.str(e->sym));
    case ExprKind::Index: {
      std::string s = "([] " + sexpr(e->lhs, n);
      for (const Expr* a : e->args) s += " " + sexpr(a, n);
      return s + ")";
    }
    case ExprKind::Call: {
      std::string s = "(call " + sexpr(e->lhs, n);
      for (const Expr* a : e->args) s += " " + sexpr(a, n);
      return s + ")";
    }
    case ExprKind::RecordLit:
    case ExprKind::ObjectLit: {
      std::string s = e->kind == ExprKind::RecordLit ? fmt::format("({}", n.str(e->sym)) : "({}";
      for (const FieldInit& f : e->fields) s += fmt::format(" {}:{}", n.str(f.name), sexpr(f.value, n));
      return s + ")";
    }
    case ExprKind::ArrayLit: {
      std::string s = "[";
      for (size_t i = 0; i < e->args.size(); ++i) s += (i ? " " : "") + sexpr(e->args[i], n);
      return s + "]";
    }
    case ExprKind::Error: return "<error>";
  }
  return "?";
}

std::string expr_of(const std::string& src) {
  Parsed p("fn f() {\n  let x = " + src + "\n}");
  REQUIRE_MESSAGE(p.diags.empty(), p.first_error());
  REQUIRE(p.body().size() == 1);
  return sexpr(p.body()[0]->expr, p.names);
}

TEST_SUITE("parser") {
  TEST_CASE("a key is one field or a parenthesised list of them") {
    Parsed one("record R { a: num, b: text }\ntable t: R key a\n");
    REQUIRE(one.diags.empty());
    REQUIRE(one.decl(1).keys.size() == 1);
    CHECK(one.names.str(one.decl(1).keys[0].name) == "a");
    Parsed two("record R { a: num, b: text }\ntable t: R key (b,\n  a)\n");
    REQUIRE_MESSAGE(two.diags.empty(), two.first_error());
    REQUIRE(two.decl(1).keys.size() == 2);
    CHECK(two.names.str(two.decl(1).keys[0].name) == "b");
    CHECK(two.decl(1).keys[1].pos.line == 3);
    Parsed open("record R { a: num }\ntable t: R key (a\n");
    CHECK(open.first_error().find("to close the key's field list") != std::string::npos);
  }

  TEST_CASE("subscripts: one, several, a range last") {
    CHECK(expr_of("t[1]") == "([] t 1)");
    CHECK(expr_of("t[w, d + 1, o]") == "([] t w (+ d 1) o)");
    CHECK(expr_of("t[w, 1 .. 5]") == "([] t w (.. 1 5))");
    CHECK(expr_of("t[\n  w,\n  d\n]") == "([] t w d)");
  }

  TEST_CASE("precedence, loosest first: or, and, not, comparison, .., + -, * / %, unary -") {
    CHECK(expr_of("a or b and c") == "(or a (and b c))");
    CHECK(expr_of("not a == b") == "(not (== a b))");
    CHECK(expr_of("a and not b or c") == "(or (and a (not b)) c)");
    CHECK(expr_of("a < b + c * d") == "(< a (+ b (* c d)))");
    CHECK(expr_of("-a * b") == "(* (- a) b)");
    CHECK(expr_of("a - b - c") == "(- (- a b) c)");
    CHECK(expr_of("a % b / c") == "(/ (% a b) c)");
    CHECK(expr_of("t[a + 1 .. b * 2]") == "([] t (.. (+ a 1) (* b 2)))");
    CHECK(expr_of("-x.y[1](2)") == "(- (call ([] (. x y) 1) 2))");
  }

  TEST_CASE("comparisons and ranges do not chain") {
    Parsed p("fn f() {\n  let x = a < b < c\n}");
    CHECK(p.first_error().find("do not chain") != std::string::npos);
    Parsed r("fn f() {\n  for i in 1 .. 2 .. 3 { }\n}");
    CHECK(r.first_error().find("ranges do not chain") != std::string::npos);
  }

  TEST_CASE("`not` after a comparison operator asks for parentheses") {
    Parsed p("fn f() {\n  let x = a == not b\n}");
    CHECK(p.first_error().find("parentheses") != std::string::npos);
    CHECK(expr_of("a == (not b)") == "(== a (not b))");
  }

  TEST_CASE("literals: records, objects, arrays") {
    CHECK(expr_of("Account { id: 1, owner: \"x\" }") == "(Account id:1 owner:\"x\")");
    CHECK(expr_of("{ a: 1, b: [1, 2,] }") == "({} a:1 b:[1 2])");
    CHECK(expr_of("[]") == "[]");
    CHECK(expr_of("{}") == "({})");
  }

  TEST_CASE("a line break ends a statement, except inside brackets or after an operator") {
    Parsed p("fn f() {\n  let a = 1\n  - 2\n  let b = (1\n  - 2)\n  let c = 1 -\n  2\n  g(1,\n  2)\n}");
    // `- 2` on its own line is a statement of its own (and unused: a checker error).
    REQUIRE(p.diags.empty());
    REQUIRE(p.body().size() == 5);
    CHECK(sexpr(p.body()[0]->expr, p.names) == "1");
    CHECK(sexpr(p.body()[1]->expr, p.names) == "(- 2)");
    CHECK(sexpr(p.body()[2]->expr, p.names) == "(- 1 2)");
    CHECK(sexpr(p.body()[3]->expr, p.names) == "(- 1 2)");
    CHECK(sexpr(p.body()[4]->expr, p.names) == "(call g 1 2)");
  }

  TEST_CASE("newlines inside record and object literals are free") {
    Parsed p("fn f() {\n  let a = R {\n    x: 1\n    y: 2,\n  }\n}");
    REQUIRE_MESSAGE(p.diags.empty(), p.first_error());
    CHECK(sexpr(p.body()[0]->expr, p.names) == "(R x:1 y:2)");
  }

  TEST_CASE("`Name {` in a condition opens the block") {
    Parsed p("fn f() {\n  if x < limit { y() }\n  while go { z() }\n  for r in rows { w() }\n}");
    REQUIRE_MESSAGE(p.diags.empty(), p.first_error());
    CHECK(p.body()[0]->kind == StmtKind::If);
    CHECK(sexpr(p.body()[0]->expr, p.names) == "(< x limit)");
    CHECK(p.body()[1]->kind == StmtKind::While);
    CHECK(p.body()[2]->kind == StmtKind::For);
    CHECK(sexpr(p.body()[2]->expr, p.names) == "rows");
    Parsed paren("fn f() {\n  if a == (R { x: 1 }) { }\n}");
    CHECK(paren.diags.empty());
  }

  TEST_CASE("a `{` where a statement is expected is a block") {
    Parsed p("fn f() {\n  { let a = 1 }\n  let b = { a: 1 }\n}");
    REQUIRE(p.diags.empty());
    CHECK(p.body()[0]->kind == StmtKind::Block);
    CHECK(p.body()[1]->expr->kind == ExprKind::ObjectLit);
  }

  TEST_CASE("else if chains, and `else` on the next line") {
    Parsed p("fn f() {\n  if a { } else if b { } else { }\n  if c { }\n  else { }\n}");
    REQUIRE_MESSAGE(p.diags.empty(), p.first_error());
    REQUIRE(p.body().size() == 2);
    const Stmt* s = p.body()[0];
    REQUIRE(s->else_body);
    REQUIRE(s->else_body->stmts.size() == 1);
    CHECK(s->else_body->stmts[0]->kind == StmtKind::If);
    CHECK(s->else_body->stmts[0]->else_body != nullptr);
    CHECK(p.body()[1]->else_body != nullptr);
  }

  TEST_CASE("return takes a value only on its own line") {
    Parsed p("fn f() {\n  return\n}\nfn g(): num {\n  return 1 +\n    2\n}");
    REQUIRE(p.diags.empty());
    CHECK(p.decl(0).body->stmts[0]->expr == nullptr);
    CHECK(sexpr(p.decl(1).body->stmts[0]->expr, p.names) == "(+ 1 2)");
  }

  TEST_CASE("`;` separates statements on one line") {
    Parsed p("fn f() { a(); b(); return }");
    REQUIRE(p.diags.empty());
    CHECK(p.body().size() == 3);
  }

  TEST_CASE("two statements on one line without `;` are an error") {
    Parsed p("fn f() {\n  let a = 1 let b = 2\n}");
    CHECK(p.first_error().find("expected a line break or `;`") != std::string::npos);
  }

  TEST_CASE("declarations") {
    Parsed p(
        "record R { a: num, b: text = \"x\"\n  c: [num] }\n"
        "table t: R key a\n"
        "var v: num = -1\n"
        "event e { lines: [R], n: num }\n"
        "on e { }\n"
        "query q(x: num, y: text) { return 1 }\n"
        "fn h(x: {a: num}): [R] { return [] }\n");
    REQUIRE_MESSAGE(p.diags.empty(), p.first_error());
    REQUIRE(p.ast.module.decls.size() == 7);
    CHECK(p.decl(0).kind == DeclKind::Record);
    CHECK(p.decl(0).fields.size() == 3);
    CHECK(p.decl(0).fields[1].default_value != nullptr);
    CHECK(p.decl(1).kind == DeclKind::Table);
    CHECK(p.decl(2).kind == DeclKind::Var);
    CHECK(p.decl(3).kind == DeclKind::Event);
    CHECK(p.decl(4).kind == DeclKind::On);
    CHECK(p.decl(5).params.size() == 2);
    CHECK(p.decl(6).ret->kind == TypeExprKind::Array);
    CHECK(p.decl(6).params[0].type->kind == TypeExprKind::Object);
  }

  TEST_CASE("keywords may be field names") {
    Parsed p("record R { key: num, in: text }\nfn f(r: R) {\n  let k = r.key\n  let o = { event: 1 }\n}");
    REQUIRE_MESSAGE(p.diags.empty(), p.first_error());
  }

  TEST_CASE("recovery: one error per broken statement, later statements still parse") {
    Parsed p("fn f() {\n  let = 1\n  let b = (1 +)\n  let c = [1 2]\n  let d = 4\n}");
    REQUIRE(p.diags.size() == 3);
    CHECK(p.diags.list()[0].pos.line == 2);
    CHECK(p.diags.list()[1].pos.line == 3);
    CHECK(p.diags.list()[2].pos.line == 4);
    CHECK(p.body().back()->kind == StmtKind::Let);
    CHECK(p.names.str(p.body().back()->name) == "d");
  }

  TEST_CASE("recovery: a broken `let` still declares its name") {
    Parsed p("fn f() {\n  let a = (1 +\n  let b = a\n}");
    REQUIRE(p.diags.size() == 1);
    CHECK(p.body()[0]->kind == StmtKind::Let);
    CHECK(p.body()[1]->kind == StmtKind::Let);
  }

  TEST_CASE("recovery: a missing `}` is reported once, at the next declaration") {
    Parsed p("fn f() {\n  if a {\n    b()\n}\nfn g() { }\n");
    REQUIRE(p.diags.size() == 1);
    CHECK(p.first_error().find("expected `}` to close the block opened at 1:8") != std::string::npos);
    CHECK(p.diags.list()[0].pos.line == 5);
    CHECK(p.ast.module.decls.size() == 2);
  }

  TEST_CASE("recovery: broken declarations keep their names and do not hide the next ones") {
    Parsed p("record R { a num }\ntable t R key a\nvar v: = 1\nrecord S { b: num }\n");
    CHECK(p.diags.size() == 3);
    REQUIRE(p.ast.module.decls.size() == 4);
    CHECK(p.decl(0).broken);
    CHECK(p.decl(1).broken);
    CHECK(p.decl(2).broken);
    CHECK_FALSE(p.decl(3).broken);
    CHECK(p.names.str(p.decl(3).name) == "S");
  }

  TEST_CASE("statements outside a body") {
    Parsed p("let x = 1\nrecord R { a: num }");
    CHECK(p.first_error().find("expected a declaration") != std::string::npos);
    CHECK(p.ast.module.decls.size() == 1);
  }

  TEST_CASE("`=` in a condition") {
    Parsed p("fn f() {\n  if a = b { }\n}");
    CHECK(p.first_error().find("compare with `==`") != std::string::npos);
  }

  TEST_CASE("nesting deeper than the limit is an error, not a crash") {
    std::string deep(kMaxNesting + 10, '(');
    Parsed p("fn f() {\n  let x = " + deep + "1\n}");
    CHECK(p.first_error().find("nesting is deeper than") != std::string::npos);
    std::string blocks;
    for (uint32_t i = 0; i < kMaxNesting + 10; ++i) blocks += "{";
    Parsed b("fn f() " + blocks);
    CHECK(b.first_error().find("nesting is deeper than") != std::string::npos);
  }

  TEST_CASE("a very long chain is bounded by the expression depth limit") {
    std::string chain = "1";
    for (uint32_t i = 0; i < kMaxExprDepth + 5; ++i) chain += " + 1";
    Parsed p("fn f() {\n  let x = " + chain + "\n}");
    CHECK(p.first_error().find("nested more than") != std::string::npos);
    std::string ok = "1";
    for (uint32_t i = 0; i < kMaxExprDepth - 2; ++i) ok += " + 1";
    Parsed fine("fn f() {\n  let x = " + ok + "\n}");
    CHECK(fine.diags.empty());
  }
}

}  // namespace
}  // namespace aup

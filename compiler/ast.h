// The syntax tree, and the checker's annotations on it.
//
// The parser builds it; the checker fills `type`, `ref` and `index` on every
// expression and `slot` on every local, which makes it the typed AST that
// code generation reads: each expression says exactly which operation it is
// (a table lookup, a call of helper #3, field #2 of a record, ...), so code
// generation never resolves a name again.
//
// Nodes live in deques owned by Ast (stable addresses, freed together) and
// point at each other with raw pointers.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "compiler/intern.h"
#include "compiler/source.h"

namespace aup {

struct Type;
struct Expr;
struct Block;

// ---- types as written ----------------------------------------------------

enum class TypeExprKind : uint8_t { Named, Array, Object, Error };

struct TypeExpr;
struct TypeExprField {
  Sym name = 0;
  Pos pos;
  TypeExpr* type = nullptr;
};

// type -> NAME | '[' type ']' | '{' [NAME ':' type {sep NAME ':' type}] '}'
struct TypeExpr {
  TypeExprKind kind = TypeExprKind::Error;
  Pos pos;
  Sym name = 0;                // Named
  TypeExpr* elem = nullptr;    // Array
  std::vector<TypeExprField> fields;  // Object
};

// ---- expressions -----------------------------------------------------------

enum class ExprKind : uint8_t {
  Number, Text, Bool, Name, Unary, Binary, Range, Field, Index, Call,
  RecordLit, ObjectLit, ArrayLit, Error,
};

enum class UnaryOp : uint8_t { Neg, Not };
enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Mod, Eq, Ne, Lt, Le, Gt, Ge, And, Or };

// What an expression was resolved to (set by the checker).
enum class Ref : uint8_t {
  None,
  // ExprKind::Name
  Local,       // index: local slot in the enclosing function
  Var,         // index: var number
  EventArgs,   // the handler's argument record
  Now,         // the built-in `now`
  TableName,   // a table used as the subject of `[ ]`, `.member` or `for`
  // ExprKind::Field
  RecordField,  // index: field number in the record (value or row)
  TableCount, TableFirst, TableLast,
  ViewCount, ViewFirst, ViewLast, ViewEmpty,
  ArrayCount,
  IndexAll,    // t.by_x: every row in index by_x's order; index: the index number
  // ExprKind::Index
  ArrayElem,   // a[i]
  TableRow,    // t[key], t[k1, k2, ...] (every field of a composite key)
  TableView,   // t[a .. b]; t[k1, ..] (a prefix of a composite key); t[k1, a .. b]
  IndexRow,    // t.by_x[v1, ..] (every field of a unique index); index: the index number
  IndexView,   // t.by_x[v1, ..] (a prefix of the index fields, or a range last)
  // ExprKind::Call
  CallFn,       // index: helper number
  CallBuiltin,  // index: builtin id (stdlib)
  TableHas, TableAdd, TablePut, TableRemove, TableAt,
  TableGet,     // t.get(k...): the row or none (an `if let`'s value)
  IndexGet,     // t.by_x.get(v...): a unique index's row or none; index: the index number
  ViewAt,
  ArrayPush, ArrayPop,
  ArraySorted,  // xs.sorted(...): args are sort keys (a field's number in index, `desc` marked)
};

struct FieldInit {
  Sym name = 0;
  Pos pos;
  Expr* value = nullptr;
  uint32_t index = 0;  // checker: field number in the record / object type
};

struct Expr {
  ExprKind kind = ExprKind::Error;
  Ref ref = Ref::None;
  // The token that names the operation: the literal, the name, the operator,
  // the field name after `.`, the `[` of an index, the `(` of a call.
  Pos pos;
  uint32_t width = 1;       // code points of that token, for underlining
  uint32_t depth = 1;       // height of this subtree (bounded by the parser)
  const Type* type = nullptr;  // checker
  uint32_t index = 0;          // checker: see Ref

  double number = 0;  // Number
  bool boolean = false;  // Bool
  Sym sym = 0;        // Name, Field (field name), Text (value), RecordLit (record name)
  UnaryOp unary = UnaryOp::Neg;
  BinaryOp binary = BinaryOp::Add;
  Expr* lhs = nullptr;  // Unary operand; Binary/Range left; Field/Index base; Call callee
  Expr* rhs = nullptr;  // Binary/Range right; Index subscript
  std::vector<Expr*> args;        // Call arguments, ArrayLit elements, Index subscripts (rhs is the first)
  std::vector<FieldInit> fields;  // RecordLit, ObjectLit
  Pos start;  // first token of the whole expression (for "value unused" etc.)
  bool desc = false;  // a call argument followed by `desc` (a sort key of `sorted`)
  Pos desc_pos;
};

// ---- statements ------------------------------------------------------------

enum class StmtKind : uint8_t {
  Let, Assign, If, While, For, Break, Continue, Return, Fail, Expr, Block, Error,
};

enum class ForKind : uint8_t { Array, Table, View, Range };

struct Stmt {
  StmtKind kind = StmtKind::Error;
  Pos pos;  // the keyword, or the first token of an expression statement
  Sym name = 0;        // Let, For, If (`if let`): the variable
  Pos name_pos;
  TypeExpr* decl_type = nullptr;  // Let with `: T`
  Expr* expr = nullptr;    // Let init, Assign value, If/While cond, For subject,
                           // Return value (may be null), Fail message, Expr
  Expr* target = nullptr;  // Assign
  Block* body = nullptr;   // If then, While/For body, Block
  Block* else_body = nullptr;  // If: `else` block (an `else if` is a block of one If)
  uint32_t slot = 0;       // checker: Let/For/`if let` local slot
  const Type* type = nullptr;  // checker: Let/For/`if let` the local's type
  ForKind for_kind = ForKind::Array;  // checker
  bool descending = false;  // For: `for x in rows desc`
};

struct Block {
  Pos pos;  // `{`
  Pos end;  // `}`
  std::vector<Stmt*> stmts;
};

// ---- declarations ------------------------------------------------------------

enum class DeclKind : uint8_t { Record, Table, Var, Event, On, Query, Fn, Index };

struct FieldDecl {
  Sym name = 0;
  Pos pos;
  TypeExpr* type = nullptr;
  Expr* default_value = nullptr;  // a literal, checked by the checker
};

struct KeyName {
  Sym name = 0;
  Pos pos;
};

struct Param {
  Sym name = 0;
  Pos pos;
  TypeExpr* type = nullptr;
};

struct Decl {
  DeclKind kind = DeclKind::Record;
  Pos pos;        // the keyword
  Sym name = 0;   // On: the event's name
  Pos name_pos;
  uint32_t name_width = 1;
  std::vector<FieldDecl> fields;  // Record, Event
  Sym record = 0;                 // Table; Index: the table's name
  Pos record_pos;
  std::vector<KeyName> keys;      // Table: the key's fields, in key order; Index: its fields
  bool unique = false;            // Index
  TypeExpr* type = nullptr;       // Var
  Expr* init = nullptr;           // Var
  std::vector<Param> params;      // Query, Fn
  TypeExpr* ret = nullptr;        // Fn with `: T`
  Block* body = nullptr;          // On, Query, Fn
  bool body_had_errors = false;   // parse errors inside the body
  // A parse error cut the declaration short: its name is declared, but what
  // could not be read is unknown, so the checker stays quiet about its uses.
  bool broken = false;
};

struct Module {
  std::vector<Decl*> decls;
};

// Owns every node of one module's tree.
class Ast {
 public:
  Ast() = default;
  Ast(const Ast&) = delete;
  Ast& operator=(const Ast&) = delete;

  Expr* expr() { return &exprs_.emplace_back(); }
  Stmt* stmt() { return &stmts_.emplace_back(); }
  Block* block() { return &blocks_.emplace_back(); }
  Decl* decl() { return &decls_.emplace_back(); }
  TypeExpr* type_expr() { return &types_.emplace_back(); }

  Module module;

 private:
  std::deque<Expr> exprs_;
  std::deque<Stmt> stmts_;
  std::deque<Block> blocks_;
  std::deque<Decl> decls_;
  std::deque<TypeExpr> types_;
};

}  // namespace aup

#include "compiler/parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/suggest.h"

namespace aup {
namespace {

// Binding power of binary operators, loosest first (docs/language.md,
// "Operators").
enum Prec : int {
  kPrecNone = 0,
  kPrecOr,
  kPrecAnd,
  kPrecNot,  // prefix `not`
  kPrecCmp,
  kPrecRange,
  kPrecAdd,
  kPrecMul,
  kPrecUnary,  // prefix `-`
};

struct BinaryInfo {
  int prec = kPrecNone;
  BinaryOp op = BinaryOp::Add;
};

BinaryInfo binary_info(Tok t) {
  switch (t) {
    case Tok::KwOr: return {kPrecOr, BinaryOp::Or};
    case Tok::KwAnd: return {kPrecAnd, BinaryOp::And};
    case Tok::Eq: return {kPrecCmp, BinaryOp::Eq};
    case Tok::Ne: return {kPrecCmp, BinaryOp::Ne};
    case Tok::Lt: return {kPrecCmp, BinaryOp::Lt};
    case Tok::Le: return {kPrecCmp, BinaryOp::Le};
    case Tok::Gt: return {kPrecCmp, BinaryOp::Gt};
    case Tok::Ge: return {kPrecCmp, BinaryOp::Ge};
    case Tok::DotDot: return {kPrecRange, BinaryOp::Add};
    case Tok::Plus: return {kPrecAdd, BinaryOp::Add};
    case Tok::Minus: return {kPrecAdd, BinaryOp::Sub};
    case Tok::Star: return {kPrecMul, BinaryOp::Mul};
    case Tok::Slash: return {kPrecMul, BinaryOp::Div};
    case Tok::Percent: return {kPrecMul, BinaryOp::Mod};
    default: return {};
  }
}

bool is_decl_keyword(Tok t) {
  switch (t) {
    case Tok::KwRecord: case Tok::KwTable: case Tok::KwVar: case Tok::KwEvent:
    case Tok::KwOn: case Tok::KwQuery: case Tok::KwFn:
      return true;
    default:
      return false;
  }
}

// Keywords that begin a statement and can never appear inside an expression:
// recovery inside brackets stops before them.
bool is_stmt_keyword(Tok t) {
  switch (t) {
    case Tok::KwLet: case Tok::KwIf: case Tok::KwWhile: case Tok::KwFor:
    case Tok::KwReturn: case Tok::KwFail: case Tok::KwBreak: case Tok::KwContinue:
      return true;
    default:
      return is_decl_keyword(t);
  }
}

class Parser {
 public:
  Parser(const SourceFile& file, const LexOutput& lexed, Interner& names, Ast& ast,
         Diagnostics& diags)
      : file_(file), toks_(lexed.tokens), lex_errors_(lexed.error_offsets), names_(names),
        ast_(ast), diags_(diags) {}

  void run();

 private:
  // ---- tokens ----
  const Token& tok() const { return toks_[i_]; }
  const Token& peek(size_t k) const { return toks_[std::min(i_ + k, toks_.size() - 1)]; }
  bool at(Tok k) const { return tok().kind == k; }
  const Token& advance() {
    const Token& t = toks_[i_];
    if (i_ + 1 < toks_.size()) ++i_;
    return t;
  }
  bool accept(Tok k) {
    if (!at(k)) return false;
    advance();
    return true;
  }
  bool expect(Tok k, std::string_view context);
  // The current token starts a new line where that ends an expression.
  bool line_break() const { return newline_sensitive_ && tok().newline_before; }
  bool at_decl_start() const { return (is_decl_keyword(tok().kind) || at_index_decl()) && tok().newline_before; }
  uint32_t width(const Token& t) const {
    return std::max<uint32_t>(1, count_code_points(file_.text().substr(t.pos.offset, t.len)));
  }

  // ---- errors and recovery ----
  void error(const Token& t, std::string message);
  void error_at(Pos pos, uint32_t w, std::string message);
  // A closing bracket `closer` expected here: where the token found is on
  // a later line, it is reported where the bracket was due, just after
  // the token before (`abs(x` and its line's end), not at the next line's.
  void error_missing_closer(std::string_view expected, std::string_view context);
  bool unknown_statement();
  std::string found(const Token& t) const;
  void skip_to_closer(Tok closer);
  void sync_stmt(size_t start);
  void sync_decl(size_t start);
  bool expect_stmt_end(std::string_view what);

  // ---- declarations ----
  void parse_decl();
  void parse_table_decl();
  bool parse_decl_ref(Decl* d, std::string_view what);
  void parse_var_decl();
  void parse_function_decl();
  bool at_index_decl() const;
  void parse_index_decl();
  Decl* new_decl(DeclKind kind);
  bool parse_decl_name(Decl* d, std::string_view what);
  void parse_field_list(std::vector<FieldDecl>& out, std::string_view what);
  void parse_params(std::vector<Param>& out);
  void parse_body(Decl* d);
  bool parse_field_name(Sym& name, Pos& pos, std::string_view context);
  bool parse_key_fields(Decl* d);
  TypeExpr* parse_type();

  // ---- statements ----
  Block* parse_block();
  Stmt* parse_stmt();
  Stmt* parse_stmt_parts();
  void fill_missing(Stmt* s);
  Stmt* parse_let();
  Stmt* parse_if();
  Stmt* parse_while();
  Stmt* parse_for();
  Stmt* parse_return();
  Stmt* parse_simple();
  Expr* parse_header_expr(std::string_view what);

  // ---- expressions ----
  Expr* parse_expr() { return parse_binary(kPrecOr); }
  Expr* parse_binary(int min_prec);
  Expr* parse_not(int min_prec);
  Expr* parse_unary();
  Expr* parse_postfix(Expr* e);
  Expr* parse_keyword_field();
  Expr* parse_primary();
  Expr* parse_record_lit();
  Expr* parse_object_lit();
  Expr* parse_array_lit();
  void parse_field_inits(std::vector<FieldInit>& out, std::string_view what);
  Expr* node(ExprKind kind, const Token& t);
  Expr* error_expr();
  void set_depth(Expr* e);

  // RAII: brackets make newlines insignificant; blocks make them matter again.
  class NewlineMode {
   public:
    NewlineMode(Parser& p, bool sensitive) : p_(p), saved_(p.newline_sensitive_), saved_ns_(p.no_struct_) {
      p.newline_sensitive_ = sensitive;
      p.no_struct_ = false;
    }
    ~NewlineMode() {
      p_.newline_sensitive_ = saved_;
      p_.no_struct_ = saved_ns_;
    }
    NewlineMode(const NewlineMode&) = delete;
    NewlineMode& operator=(const NewlineMode&) = delete;

   private:
    Parser& p_;
    bool saved_;
    bool saved_ns_;
  };
  // RAII: one level of nesting; false when the limit is passed.
  class Nest {
   public:
    explicit Nest(Parser& p) : p_(p) { ok_ = ++p.nesting_ <= kMaxNesting; }
    ~Nest() { --p_.nesting_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
    bool ok() const { return ok_; }

   private:
    Parser& p_;
    bool ok_;
  };
  bool nest_error(const Nest& n) {
    if (n.ok()) return false;
    error(tok(), fmt::format("nesting is deeper than {} levels", kMaxNesting));
    return true;
  }

  const SourceFile& file_;
  const std::vector<Token>& toks_;
  const std::vector<uint32_t>& lex_errors_;
  Interner& names_;
  Ast& ast_;
  Diagnostics& diags_;
  size_t i_ = 0;
  bool panic_ = false;             // an error was reported; wait for a sync point
  uint32_t errors_ = 0;            // errors met (reported or suppressed)
  uint32_t stmt_start_ = 0;        // offset of the statement being parsed
  bool newline_sensitive_ = true;
  bool no_struct_ = false;         // `Name {` is not a record literal here
  uint32_t nesting_ = 0;
  // The error just reported was a missing separator before a token that
  // starts a statement: resume there instead of skipping the line.
  bool resume_here_ = false;
  // Keywords a declaration used as names (already reported): later uses
  // are read as those names, so the one mistake is reported once.
  std::vector<Tok> misused_keywords_;
  bool lex_error_between(uint32_t from, uint32_t to) const;
  bool take_name(Sym& name, Pos& pos, std::string_view context);
  void neutralize(Stmt* s, uint32_t start, uint32_t end);
};

// ---------------------------------------------------------------------------
// errors

std::string Parser::found(const Token& t) const {
  std::string_view src = file_.text().substr(t.pos.offset, t.len);
  switch (t.kind) {
    case Tok::Eof: return "found end of file";
    case Tok::Ident: return fmt::format("found `{}`", src);
    case Tok::Number: return fmt::format("found number `{}`", src);
    case Tok::Text:
      if (src.size() > 24) return fmt::format("found text {}...", src.substr(0, 20));
      return fmt::format("found text {}", src);
    default:
      if (is_keyword(t.kind)) return fmt::format("found keyword {}", tok_spelling(t.kind));
      return fmt::format("found {}", tok_spelling(t.kind));
  }
}

bool Parser::lex_error_between(uint32_t from, uint32_t to) const {
  auto it = std::lower_bound(lex_errors_.begin(), lex_errors_.end(), from);
  return it != lex_errors_.end() && *it < to;
}

// A name after `let`, `for` or in a parameter list. A keyword there is
// reported once and then taken as the name it spells, so its later uses
// are not reported again.
bool Parser::take_name(Sym& name, Pos& pos, std::string_view context) {
  if (at(Tok::Ident)) {
    name = tok().sym;
    pos = advance().pos;
    return true;
  }
  if (is_keyword(tok().kind) && !is_stmt_keyword(tok().kind) && !at(Tok::KwTrue) &&
      !at(Tok::KwFalse) && !at(Tok::KwNot) && !at(Tok::KwIn)) {
    std::string_view s = tok_spelling(tok().kind);
    error(tok(), fmt::format("`{}` is a keyword and cannot be a name", s.substr(1, s.size() - 2)));
    panic_ = false;  // the statement reads on
    misused_keywords_.push_back(tok().kind);
    name = names_.intern(s.substr(1, s.size() - 2));
    pos = advance().pos;
    return true;
  }
  error(tok(), fmt::format("expected a name {}, {}", context, found(tok())));
  return false;
}

// A statement holding a lexical error is not checked further: the lexer's
// message explains it, and the checker would only add consequences. A
// `let` keeps its name so its uses stay quiet.
void Parser::neutralize(Stmt* s, uint32_t start, uint32_t end) {
  switch (s->kind) {
    case StmtKind::If:
    case StmtKind::While:
    case StmtKind::For:
      // Only the header: the body's statements were judged on their own.
      if (s->body && lex_error_between(start, s->body->pos.offset)) s->expr = error_expr();
      return;
    case StmtKind::Block:
    case StmtKind::Error:
      return;
    case StmtKind::Let:
      if (lex_error_between(start, end)) s->expr = error_expr();
      return;
    default:
      if (lex_error_between(start, end)) s->kind = StmtKind::Error;
      return;
  }
}

void Parser::error_at(Pos pos, uint32_t w, std::string message) {
  ++errors_;
  if (panic_) return;
  panic_ = true;
  // A lexical error in this statement already explains what went wrong.
  auto it = std::lower_bound(lex_errors_.begin(), lex_errors_.end(), stmt_start_);
  if (it != lex_errors_.end() && *it <= pos.offset) return;
  diags_.error(pos, w, std::move(message));
}

void Parser::error(const Token& t, std::string message) {
  error_at(t.pos, width(t), std::move(message));
}

bool Parser::expect(Tok k, std::string_view context) {
  if (accept(k)) return true;
  if (k == Tok::RParen || k == Tok::RBracket) {
    error_missing_closer(tok_spelling(k), context);
  } else {
    error(tok(), fmt::format("expected {} {}, {}", tok_spelling(k), context, found(tok())));
  }
  return false;
}

void Parser::error_missing_closer(std::string_view expected, std::string_view context) {
  if (i_ == 0 || !(tok().newline_before || at(Tok::Eof))) {
    error(tok(), fmt::format("expected {} {}, {}", expected, context, found(tok())));
    return;
  }
  const Token& last = toks_[i_ - 1];
  Pos after = last.pos;
  after.offset += last.len;
  after.col += width(last);
  error_at(after, 1, fmt::format("expected {} {}, found the end of the line", expected, context));
}

// `retrun total`: a name and then another on the same line, the first
// close to a statement's keyword, is that statement misspelt (one error,
// not one for the name and one for what follows it). False when it is not.
bool Parser::unknown_statement() {
  const Token& next = peek(1);
  if (!at(Tok::Ident) || next.newline_before) return false;
  if (next.kind != Tok::Ident && next.kind != Tok::Number && next.kind != Tok::Text && next.kind != Tok::KwTrue &&
      next.kind != Tok::KwFalse && next.kind != Tok::KwNot) {
    return false;
  }
  static const std::vector<std::string_view> kKeywords = {"let", "if",   "while", "for",
                                                          "return", "fail", "break", "continue"};
  std::string_view word = names_.str(tok().sym);
  std::string best = closest_name(word, kKeywords);
  if (best.empty()) return false;
  error(tok(), fmt::format("unknown statement `{}`; did you mean `{}`?", word, best));
  return true;
}

// After an error inside brackets: skip to the matching closer and take it,
// so the statement-level recovery starts outside the brackets. Stops early
// (without taking anything) at a token that cannot be inside an expression.
void Parser::skip_to_closer(Tok closer) {
  int depth = 0;
  while (!at(Tok::Eof)) {
    Tok k = tok().kind;
    if (is_stmt_keyword(k) && tok().newline_before) return;
    if (depth == 0 && k == closer) {
      advance();
      return;
    }
    if (k == Tok::LParen || k == Tok::LBracket || k == Tok::LBrace) {
      ++depth;
    } else if (k == Tok::RParen || k == Tok::RBracket || k == Tok::RBrace) {
      if (depth == 0) {
        if (k == Tok::RBrace) return;  // the enclosing block ends here
      } else {
        --depth;
      }
    }
    advance();
  }
}

// Skip to the start of the next statement: a line break or `;` outside
// brackets, a `}` closing the block, or a declaration keyword.
void Parser::sync_stmt(size_t start) {
  if (i_ == start && !at(Tok::RBrace) && !at(Tok::Eof)) advance();
  int depth = 0;
  while (!at(Tok::Eof)) {
    Tok k = tok().kind;
    if (depth == 0) {
      if (at_decl_start()) return;
      if (k == Tok::RBrace) return;
      if (k == Tok::Semi) {
        advance();
        return;
      }
      if (tok().newline_before && i_ > start) return;
    }
    if (k == Tok::LParen || k == Tok::LBracket || k == Tok::LBrace) {
      ++depth;
    } else if ((k == Tok::RParen || k == Tok::RBracket || k == Tok::RBrace) && depth > 0) {
      --depth;
    }
    advance();
  }
}

void Parser::sync_decl(size_t start) {
  if (i_ == start) advance();
  while (!at(Tok::Eof) && !at_decl_start()) advance();
}

// A simple statement ends at `;`, a line break, a `}` or the end of file.
bool Parser::expect_stmt_end(std::string_view what) {
  if (accept(Tok::Semi)) return true;
  if (at(Tok::RBrace) || at(Tok::Eof) || tok().newline_before) return true;
  error(tok(), fmt::format("expected a line break or `;` after {}, {}", what, found(tok())));
  // `let a = 1 let b = 2`: the second statement is fine; read it.
  if (is_stmt_keyword(tok().kind) && !is_decl_keyword(tok().kind)) resume_here_ = true;
  return false;
}

// ---------------------------------------------------------------------------
// declarations

void Parser::run() {
  while (!at(Tok::Eof)) {
    size_t start = i_;
    stmt_start_ = tok().pos.offset;
    panic_ = false;
    parse_decl();
    if (panic_) sync_decl(start);
  }
  panic_ = false;
}

Decl* Parser::new_decl(DeclKind kind) {
  Decl* d = ast_.decl();
  d->kind = kind;
  d->pos = advance().pos;
  return d;
}

// The declaration's name; once it is read the declaration is kept in the
// module (see parse_decl).
bool Parser::parse_decl_name(Decl* d, std::string_view what) {
  if (!at(Tok::Ident)) {
    std::string extra = is_keyword(tok().kind) ? " (keywords cannot be names)" : "";
    error(tok(), fmt::format("expected a name after `{}`, {}{}", what, found(tok()), extra));
    return false;
  }
  d->name = tok().sym;
  d->name_pos = tok().pos;
  d->name_width = width(tok());
  advance();
  ast_.module.decls.push_back(d);
  return true;
}

// decl -> record | table | var | event | on | query | fn
// Once its name is read a declaration is kept even if the rest is broken
// (Decl::broken), so one mistake in it does not make every use of the name
// an "unknown name" too.
void Parser::parse_decl() {
  switch (tok().kind) {
    case Tok::KwRecord:
    case Tok::KwEvent: {
      // record -> 'record' NAME '{' fields '}' ; event -> 'event' NAME '{' fields '}'
      bool is_record = at(Tok::KwRecord);
      Decl* d = new_decl(is_record ? DeclKind::Record : DeclKind::Event);
      if (!parse_decl_name(d, is_record ? "record" : "event")) return;
      parse_field_list(d->fields, is_record ? "record" : "event");
      d->broken = panic_;
      return;
    }
    case Tok::KwTable: return parse_table_decl();
    case Tok::KwVar: return parse_var_decl();
    case Tok::KwOn: {
      // on -> 'on' NAME block
      Decl* d = new_decl(DeclKind::On);
      if (!parse_decl_name(d, "on")) return;
      parse_body(d);
      return;
    }
    case Tok::KwQuery:
    case Tok::KwFn: return parse_function_decl();
    default: {
      if (at_index_decl()) {
        parse_index_decl();
        return;
      }
      std::string hint;
      if (is_stmt_keyword(tok().kind) || at(Tok::Ident)) {
        hint = "; statements belong inside `on`, `query` or `fn` bodies";
      }
      error(tok(), fmt::format("expected a declaration (`record`, `table`, `var`, `event`, `on`, "
                               "`query` or `fn`), {}{}",
                               found(tok()), hint));
      return;
    }
  }
}

// The name a declaration refers to (a table's record type, an index's
// table), into d->record: false when there is none (said).
bool Parser::parse_decl_ref(Decl* d, std::string_view what) {
  if (!at(Tok::Ident)) {
    error(tok(), fmt::format("expected {}, {}", what, found(tok())));
    return false;
  }
  d->record = tok().sym;
  d->record_pos = advance().pos;
  return true;
}

void Parser::parse_table_decl() {
  // table -> 'table' NAME ':' NAME 'key' (NAME | '(' NAME {',' NAME} ')')
  Decl* d = new_decl(DeclKind::Table);
  if (!parse_decl_name(d, "table")) return;
  d->broken = true;
  if (!expect(Tok::Colon, "after the table name (`table name: Record key field`)")) return;
  if (!parse_decl_ref(d, "the table's record type")) return;
  if (!expect(Tok::KwKey, "and the key field (`table name: Record key field`)")) return;
  if (!parse_key_fields(d)) return;
  d->broken = false;
  expect_stmt_end("the table declaration");
}

void Parser::parse_var_decl() {
  // var -> 'var' NAME ':' type '=' literal
  Decl* d = new_decl(DeclKind::Var);
  if (!parse_decl_name(d, "var")) return;
  d->broken = true;
  if (!expect(Tok::Colon, "and a type after the var's name (`var name: num = 0`)")) return;
  d->type = parse_type();
  if (panic_) return;
  if (!expect(Tok::Assign, "and an initial value (`var name: num = 0`)")) return;
  d->init = parse_expr();
  if (panic_) return;
  d->broken = false;
  expect_stmt_end("the var declaration");
}

void Parser::parse_function_decl() {
  // query -> 'query' NAME '(' params ')' block
  // fn    -> 'fn' NAME '(' params ')' [':' type] block
  bool is_query = at(Tok::KwQuery);
  Decl* d = new_decl(is_query ? DeclKind::Query : DeclKind::Fn);
  if (!parse_decl_name(d, is_query ? "query" : "fn")) return;
  d->broken = true;  // until the signature is read whole
  parse_params(d->params);
  if (panic_) return;
  if (!is_query && accept(Tok::Colon)) {
    d->ret = parse_type();
    if (panic_) return;
  } else if (is_query && at(Tok::Colon)) {
    error(tok(), "a query's result type comes from its `return`; remove `: type`");
    return;
  }
  d->broken = false;
  parse_body(d);
}

// A function body: parse errors inside it are remembered so the checker
// does not add "missing return" or "unreachable" to a body it cannot see whole.
void Parser::parse_body(Decl* d) {
  uint32_t errors_before = errors_;
  uint32_t begin = tok().pos.offset;
  d->body = parse_block();
  uint32_t end = tok().pos.offset;
  auto it = std::lower_bound(lex_errors_.begin(), lex_errors_.end(), begin);
  bool lex_error = it != lex_errors_.end() && *it < end;
  d->body_had_errors = errors_ != errors_before || lex_error || panic_;
}

// A field name may be a keyword (`key`, `in`, `event` are fine field names).
// `key f` or `key (f, g, ...)`: the checker bounds the count and checks
// each name.
// `index` and `unique index` begin a declaration only at the top level
// (contextual words, so both stay usable as names everywhere else).
bool Parser::at_index_decl() const {
  if (!at(Tok::Ident)) return false;
  std::string_view s = names_.str(tok().sym);
  if (s == "index") return peek(1).kind == Tok::Ident;
  return s == "unique" && peek(1).kind == Tok::Ident && names_.str(peek(1).sym) == "index";
}

// index -> ['unique'] 'index' NAME 'on' NAME '(' NAME {',' NAME} ')'
void Parser::parse_index_decl() {
  bool unique = names_.str(tok().sym) == "unique";
  if (unique) advance();
  Decl* d = new_decl(DeclKind::Index);
  d->unique = unique;
  if (!parse_decl_name(d, "index")) return;
  d->broken = true;
  if (!expect(Tok::KwOn, "after the index name (`index name on table (field, ...)`)")) return;
  if (!parse_decl_ref(d, "the index's table")) return;
  if (!at(Tok::LParen)) {
    error(tok(), fmt::format("expected `(` and the index's fields (`index name on table (field, ...)`), {}", found(tok())));
    return;
  }
  if (!parse_key_fields(d)) return;
  d->broken = false;
  expect_stmt_end("the index declaration");
}

bool Parser::parse_key_fields(Decl* d) {
  if (!accept(Tok::LParen)) {
    d->keys.emplace_back();
    return parse_field_name(d->keys.back().name, d->keys.back().pos, "after `key`");
  }
  NewlineMode mode(*this, false);
  do {
    d->keys.emplace_back();
    if (!parse_field_name(d->keys.back().name, d->keys.back().pos, "in the key's field list")) return false;
  } while (accept(Tok::Comma) && !at(Tok::RParen));
  return expect(Tok::RParen, "to close the key's field list (`key (a, b)`)");
}

bool Parser::parse_field_name(Sym& name, Pos& pos, std::string_view context) {
  if (at(Tok::Ident)) {
    name = tok().sym;
  } else if (is_keyword(tok().kind)) {
    std::string_view s = tok_spelling(tok().kind);
    name = names_.intern(s.substr(1, s.size() - 2));
  } else {
    error(tok(), fmt::format("expected a field name {}, {}", context, found(tok())));
    return false;
  }
  pos = advance().pos;
  return true;
}

// fields -> '{' [field {sep field} [sep]] '}'    field -> NAME ':' type ['=' literal]
// sep -> ',' | line break
void Parser::parse_field_list(std::vector<FieldDecl>& out, std::string_view what) {
  Pos open = tok().pos;
  if (!expect(Tok::LBrace, fmt::format("to start the {}'s fields", what))) return;
  NewlineMode mode(*this, false);
  while (!at(Tok::RBrace)) {
    if (at(Tok::Eof) || at_decl_start()) {
      error(tok(), fmt::format("expected `}}` to close the {} opened at {}:{}, {}", what,
                               open.line, open.col, found(tok())));
      return;
    }
    FieldDecl f;
    if (!parse_field_name(f.name, f.pos, fmt::format("in the {}", what))) return;
    if (!expect(Tok::Colon, "and a type after the field name (`name: type`)")) return;
    f.type = parse_type();
    if (panic_) return;
    if (accept(Tok::Assign)) {
      f.default_value = parse_expr();
      if (panic_) return;
    }
    out.push_back(f);
    if (accept(Tok::Comma) || at(Tok::RBrace) || tok().newline_before) continue;
    error(tok(), fmt::format("expected `,` or `}}` after the field, {}", found(tok())));
    return;
  }
  advance();
}

// params -> '(' [NAME ':' type {',' NAME ':' type} [',']] ')'
void Parser::parse_params(std::vector<Param>& out) {
  if (!expect(Tok::LParen, "to start the parameters")) return;
  NewlineMode mode(*this, false);
  while (!at(Tok::RParen)) {
    Param p;
    if (!take_name(p.name, p.pos, "(a parameter) or `)`")) return;
    if (!expect(Tok::Colon, "and a type after the parameter name (`name: type`)")) return;
    p.type = parse_type();
    if (panic_) return;
    out.push_back(p);
    if (accept(Tok::Comma)) continue;
    if (!at(Tok::RParen)) {
      error(tok(), fmt::format("expected `,` or `)` after the parameter, {}", found(tok())));
      return;
    }
  }
  advance();
}

// type -> NAME | '[' type ']' | '{' [NAME ':' type {sep NAME ':' type}] '}'
TypeExpr* Parser::parse_type() {
  TypeExpr* t = ast_.type_expr();
  t->pos = tok().pos;
  Nest nest(*this);
  if (nest_error(nest)) return t;
  if (at(Tok::Ident)) {
    t->kind = TypeExprKind::Named;
    t->name = advance().sym;
    return t;
  }
  if (accept(Tok::LBracket)) {
    NewlineMode mode(*this, false);
    t->kind = TypeExprKind::Array;
    t->elem = parse_type();
    if (!panic_) expect(Tok::RBracket, "to close the array type");
    return t;
  }
  if (accept(Tok::LBrace)) {
    NewlineMode mode(*this, false);
    t->kind = TypeExprKind::Object;
    while (!at(Tok::RBrace)) {
      TypeExprField f;
      if (!parse_field_name(f.name, f.pos, "in the object type")) return t;
      if (!expect(Tok::Colon, "and a type after the field name")) return t;
      f.type = parse_type();
      if (panic_) return t;
      t->fields.push_back(f);
      if (accept(Tok::Comma) || at(Tok::RBrace) || tok().newline_before) continue;
      error(tok(), fmt::format("expected `,` or `}}` in the object type, {}", found(tok())));
      return t;
    }
    advance();
    return t;
  }
  error(tok(), fmt::format("expected a type (`num`, `text`, `bool`, a record name, `[T]` or "
                           "`{{name: T}}`), {}",
                           found(tok())));
  return t;
}

// ---------------------------------------------------------------------------
// statements

// block -> '{' {stmt} '}'
Block* Parser::parse_block() {
  Block* b = ast_.block();
  b->pos = tok().pos;
  Nest nest(*this);
  if (nest_error(nest)) return b;
  if (!expect(Tok::LBrace, "to start a block")) return b;
  NewlineMode mode(*this, true);
  while (!at(Tok::RBrace)) {
    if (at(Tok::Eof) || at_decl_start()) {
      error(tok(), fmt::format("expected `}}` to close the block opened at {}:{}, {}", b->pos.line,
                               b->pos.col, found(tok())));
      return b;
    }
    if (accept(Tok::Semi)) continue;  // an empty statement
    size_t start = i_;
    stmt_start_ = tok().pos.offset;
    Stmt* s = parse_stmt();
    b->stmts.push_back(s);
    neutralize(s, stmt_start_, tok().pos.offset);
    if (panic_ && resume_here_) {
      panic_ = resume_here_ = false;
      continue;
    }
    resume_here_ = false;
    if (panic_) {
      sync_stmt(start);
      // An unclosed block: leave the error pending so enclosing blocks
      // return quietly instead of reporting the same missing `}`.
      if (at(Tok::Eof) || at_decl_start()) return b;
      panic_ = false;
    }
  }
  b->end = tok().pos;
  advance();
  return b;
}

// A statement cut short by an error still has every part the checker
// reads: a missing expression is an Error expression, a missing body empty.
void Parser::fill_missing(Stmt* s) {
  bool needs_expr = s->kind == StmtKind::If || s->kind == StmtKind::While ||
                    s->kind == StmtKind::For || s->kind == StmtKind::Fail ||
                    s->kind == StmtKind::Assign || s->kind == StmtKind::Expr;
  if (needs_expr && !s->expr) s->expr = error_expr();
  bool needs_body = s->kind == StmtKind::If || s->kind == StmtKind::While ||
                    s->kind == StmtKind::For || s->kind == StmtKind::Block;
  if (needs_body && !s->body) {
    s->body = ast_.block();
    s->body->pos = s->body->end = s->pos;
  }
}

Stmt* Parser::parse_stmt() {
  Stmt* s = parse_stmt_parts();
  fill_missing(s);
  bool compound = s->kind == StmtKind::If || s->kind == StmtKind::While ||
                  s->kind == StmtKind::For || s->kind == StmtKind::Block;
  if (compound && !panic_) expect_stmt_end("the block");
  return s;
}

Stmt* Parser::parse_stmt_parts() {
  switch (tok().kind) {
    case Tok::KwLet: return parse_let();
    case Tok::KwIf: return parse_if();
    case Tok::KwWhile: return parse_while();
    case Tok::KwFor: return parse_for();
    case Tok::KwReturn: return parse_return();
    case Tok::KwBreak:
    case Tok::KwContinue: {
      Stmt* s = ast_.stmt();
      s->kind = at(Tok::KwBreak) ? StmtKind::Break : StmtKind::Continue;
      s->pos = advance().pos;
      expect_stmt_end(s->kind == StmtKind::Break ? "`break`" : "`continue`");
      return s;
    }
    case Tok::KwFail: {
      // fail -> 'fail' expr
      Stmt* s = ast_.stmt();
      s->kind = StmtKind::Fail;
      s->pos = advance().pos;
      s->expr = parse_expr();
      if (!panic_) expect_stmt_end("`fail`");
      return s;
    }
    case Tok::LBrace: {
      Stmt* s = ast_.stmt();
      s->kind = StmtKind::Block;
      s->pos = tok().pos;
      s->body = parse_block();
      return s;
    }
    case Tok::KwElse: {
      Stmt* s = ast_.stmt();
      s->pos = tok().pos;
      error(tok(), "`else` without an `if` before it");
      return s;
    }
    default:
      return parse_simple();
  }
}

// let -> 'let' NAME [':' type] '=' expr
Stmt* Parser::parse_let() {
  Stmt* s = ast_.stmt();
  s->pos = advance().pos;
  if (!take_name(s->name, s->name_pos, "after `let`")) return s;
  // From here on the statement declares its name even if the rest is
  // broken, so later uses of the name are not reported as unknown.
  s->kind = StmtKind::Let;
  if (accept(Tok::Colon)) {
    s->decl_type = parse_type();
    if (panic_) return s;
  }
  if (!at(Tok::Assign)) {
    error(tok(), fmt::format("expected `=` and a value after `let {}`, {}", names_.str(s->name),
                             found(tok())));
    return s;
  }
  advance();
  s->expr = parse_expr();
  if (!panic_) expect_stmt_end("the `let`");
  return s;
}

// The condition of `if`/`while` or the subject of `for`: `Name {` there
// opens the block, not a record literal (parenthesize a literal).
Expr* Parser::parse_header_expr(std::string_view what) {
  bool saved = no_struct_;
  no_struct_ = true;
  Expr* e = parse_expr();
  no_struct_ = saved;
  if (!panic_ && at(Tok::Assign)) {
    error(tok(), fmt::format("`=` assigns; compare with `==` in {}", what));
    e = error_expr();
  }
  if (panic_) {
    // Resynchronize on the block's `{` so the body is still checked.
    while (!at(Tok::Eof) && !at(Tok::LBrace) && !at(Tok::RBrace) && !at_decl_start()) {
      if (is_stmt_keyword(tok().kind) && tok().newline_before) break;
      advance();
    }
    if (at(Tok::LBrace)) panic_ = false;
    return error_expr();
  }
  return e;
}

// if -> 'if' ['let' name '='] expr block ['else' (if | block)]
Stmt* Parser::parse_if() {
  Stmt* s = ast_.stmt();
  s->kind = StmtKind::If;
  s->pos = advance().pos;
  if (accept(Tok::KwLet)) {
    // `if let r = t.get(k) { }`: the block sees r, a row that is there.
    if (!take_name(s->name, s->name_pos, "after `if let`")) return s;
    if (!expect(Tok::Assign, "and a value after the name of `if let`")) return s;
    s->expr = parse_header_expr("the value of `if let`");
  } else {
    s->expr = parse_header_expr("an `if` condition");
  }
  if (panic_) return s;
  s->body = parse_block();
  if (panic_) return s;
  if (at(Tok::KwElse)) {
    advance();
    if (at(Tok::KwIf)) {
      Block* b = ast_.block();
      b->pos = b->end = tok().pos;
      b->stmts.push_back(parse_stmt());
      s->else_body = b;
    } else {
      s->else_body = parse_block();
    }
  }
  return s;
}

// while -> 'while' expr block
Stmt* Parser::parse_while() {
  Stmt* s = ast_.stmt();
  s->kind = StmtKind::While;
  s->pos = advance().pos;
  s->expr = parse_header_expr("a `while` condition");
  if (panic_) return s;
  s->body = parse_block();
  return s;
}

// for -> 'for' NAME 'in' expr block
Stmt* Parser::parse_for() {
  Stmt* s = ast_.stmt();
  s->pos = advance().pos;
  if (!take_name(s->name, s->name_pos, "(the loop variable) after `for`")) return s;
  s->kind = StmtKind::For;
  if (!expect(Tok::KwIn, fmt::format("after `for {}`", names_.str(s->name)))) return s;
  s->expr = parse_header_expr("a `for`");
  if (panic_) return s;
  // `desc` after the rows: a contextual word, a name everywhere else.
  if (at(Tok::Ident) && names_.str(tok().sym) == "desc" && peek(1).kind == Tok::LBrace) {
    s->descending = true;
    advance();
  }
  s->body = parse_block();
  return s;
}

// return -> 'return' [expr]
Stmt* Parser::parse_return() {
  Stmt* s = ast_.stmt();
  s->kind = StmtKind::Return;
  s->pos = advance().pos;
  if (at(Tok::Semi) || at(Tok::RBrace) || at(Tok::Eof) || tok().newline_before) {
    accept(Tok::Semi);
    return s;
  }
  s->expr = parse_expr();
  if (!panic_) expect_stmt_end("`return`");
  return s;
}

// simple -> expr ['=' expr]
Stmt* Parser::parse_simple() {
  Stmt* s = ast_.stmt();
  s->kind = StmtKind::Expr;
  s->pos = tok().pos;
  if (!at(Tok::Ident) && !at(Tok::LParen) && !at(Tok::Number) && !at(Tok::Text) &&
      !at(Tok::LBracket) && !at(Tok::Minus) && !at(Tok::KwNot) && !at(Tok::KwTrue) &&
      !at(Tok::KwFalse)) {
    error(tok(), fmt::format("expected a statement, {}", found(tok())));
    s->kind = StmtKind::Error;
    return s;
  }
  if (unknown_statement()) {
    s->kind = StmtKind::Error;
    return s;
  }
  Expr* e = parse_expr();
  if (panic_) {
    s->expr = e;
    return s;
  }
  if (at(Tok::Assign)) {
    s->kind = StmtKind::Assign;
    s->target = e;
    advance();
    s->expr = parse_expr();
    if (!panic_) expect_stmt_end("the assignment");
    return s;
  }
  s->expr = e;
  expect_stmt_end("the expression");
  return s;
}

// ---------------------------------------------------------------------------
// expressions

// A field named by a keyword, as a name (a sort key of `sorted`).
Expr* Parser::parse_keyword_field() {
  Expr* n = node(ExprKind::Name, tok());
  parse_field_name(n->sym, n->pos, "");
  return n;
}

Expr* Parser::node(ExprKind kind, const Token& t) {
  Expr* e = ast_.expr();
  e->kind = kind;
  e->pos = t.pos;
  e->start = t.pos;
  e->width = width(t);
  return e;
}

Expr* Parser::error_expr() {
  Expr* e = ast_.expr();
  e->kind = ExprKind::Error;
  e->pos = e->start = tok().pos;
  return e;
}

void Parser::set_depth(Expr* e) {
  uint32_t d = 0;
  if (e->lhs) d = std::max(d, e->lhs->depth);
  if (e->rhs) d = std::max(d, e->rhs->depth);
  for (Expr* a : e->args) d = std::max(d, a->depth);
  for (const FieldInit& f : e->fields) d = std::max(d, f.value->depth);
  e->depth = d + 1;
  if (e->depth > kMaxExprDepth) {
    error_at(e->pos, e->width,
             fmt::format("expression is nested more than {} levels deep", kMaxExprDepth));
  }
}

// binary(p) -> operand {op binary(p+1)}, where operand is `not` binary(not)
// when `not` may appear at this level, else unary. Comparisons and ranges
// do not chain.
Expr* Parser::parse_binary(int min_prec) {
  Expr* lhs = at(Tok::KwNot) ? parse_not(min_prec) : parse_unary();
  while (!panic_) {
    BinaryInfo info = binary_info(tok().kind);
    if (info.prec == kPrecNone || info.prec < min_prec || line_break()) break;
    const Token& op = advance();
    Expr* e = node(info.prec == kPrecRange ? ExprKind::Range : ExprKind::Binary, op);
    e->binary = info.op;
    e->lhs = lhs;
    e->start = lhs->start;
    e->rhs = parse_binary(info.prec + 1);
    set_depth(e);
    lhs = e;
    if (panic_) break;
    BinaryInfo next = binary_info(tok().kind);
    if (next.prec == info.prec && (info.prec == kPrecCmp || info.prec == kPrecRange) &&
        !line_break()) {
      error(tok(), info.prec == kPrecCmp
                       ? "comparisons do not chain; join them with `and` (`a < b and b < c`)"
                       : "ranges do not chain (`a .. b .. c`)");
    }
  }
  return lhs;
}

// `not` binds looser than comparisons: `not a == b` is `not (a == b)`.
Expr* Parser::parse_not(int min_prec) {
  const Token& t = tok();
  if (min_prec > kPrecNot) {
    error(t, "`not` binds looser than this operator; put it in parentheses: `(not x)`");
    return error_expr();
  }
  Nest nest(*this);
  if (nest_error(nest)) return error_expr();
  advance();
  Expr* e = node(ExprKind::Unary, t);
  e->unary = UnaryOp::Not;
  e->lhs = parse_binary(kPrecNot);
  set_depth(e);
  return e;
}

// unary -> '-' unary | postfix
Expr* Parser::parse_unary() {
  if (at(Tok::Minus)) {
    Nest nest(*this);
    if (nest_error(nest)) return error_expr();
    const Token& t = advance();
    Expr* e = node(ExprKind::Unary, t);
    e->unary = UnaryOp::Neg;
    e->lhs = parse_unary();
    set_depth(e);
    return e;
  }
  return parse_postfix(parse_primary());
}

// postfix -> primary {'.' NAME | '[' expr {',' expr} ']' | '(' args ')'}
Expr* Parser::parse_postfix(Expr* e) {
  while (!panic_ && !line_break()) {
    if (at(Tok::Dot)) {
      const Token& dot = advance();
      if (!at(Tok::Ident) && !is_keyword(tok().kind)) {
        error(dot, fmt::format("expected a field name after `.`, {}", found(tok())));
        return error_expr();
      }
      Expr* f = ast_.expr();
      f->kind = ExprKind::Field;
      f->lhs = e;
      f->start = e->start;
      f->pos = tok().pos;
      f->width = width(tok());
      if (!parse_field_name(f->sym, f->pos, "after `.`")) return f;
      set_depth(f);
      e = f;
    } else if (at(Tok::LBracket)) {
      Nest nest(*this);
      if (nest_error(nest)) return e;
      Expr* ix = node(ExprKind::Index, advance());
      ix->lhs = e;
      ix->start = e->start;
      NewlineMode mode(*this, false);
      do {
        ix->args.push_back(parse_expr());
        if (panic_) {
          skip_to_closer(Tok::RBracket);
          return error_expr();
        }
      } while (accept(Tok::Comma) && !at(Tok::RBracket));
      ix->rhs = ix->args[0];
      expect(Tok::RBracket, "to close the index");
      set_depth(ix);
      e = ix;
    } else if (at(Tok::LParen)) {
      Nest nest(*this);
      if (nest_error(nest)) return e;
      Expr* call = node(ExprKind::Call, advance());
      call->lhs = e;
      call->start = e->start;
      NewlineMode mode(*this, false);
      // `rows.sorted(key desc)`: a sort key is a field name, which may be a keyword.
      bool sort_keys = e->kind == ExprKind::Field && names_.str(e->sym) == "sorted";
      while (!at(Tok::RParen)) {
        call->args.push_back(sort_keys && is_keyword(tok().kind) ? parse_keyword_field() : parse_expr());
        if (panic_) {
          skip_to_closer(Tok::RParen);
          return error_expr();
        }
        // `rows.sorted(amount desc)`: the checker allows it only there.
        if (at(Tok::Ident) && names_.str(tok().sym) == "desc") {
          call->args.back()->desc_pos = advance().pos;
          call->args.back()->desc = true;
        }
        if (accept(Tok::Comma)) continue;
        if (!at(Tok::RParen)) {
          error_missing_closer("`,` or `)`", "in the argument list");
          skip_to_closer(Tok::RParen);
          return error_expr();
        }
      }
      advance();
      set_depth(call);
      e = call;
    } else {
      break;
    }
  }
  return e;
}

// primary -> NUMBER | TEXT | 'true' | 'false' | NAME | NAME '{' inits '}'
//          | '(' expr ')' | '[' [expr {',' expr} [',']] ']' | '{' inits '}'
Expr* Parser::parse_primary() {
  const Token& t = tok();
  switch (t.kind) {
    case Tok::Number: {
      Expr* e = node(ExprKind::Number, advance());
      e->number = t.number;
      return e;
    }
    case Tok::Text: {
      Expr* e = node(ExprKind::Text, advance());
      e->sym = t.sym;
      return e;
    }
    case Tok::KwTrue:
    case Tok::KwFalse: {
      Expr* e = node(ExprKind::Bool, advance());
      e->boolean = t.kind == Tok::KwTrue;
      return e;
    }
    case Tok::Ident: {
      const Token& next = peek(1);
      if (next.kind == Tok::LBrace && !no_struct_ &&
          !(newline_sensitive_ && next.newline_before)) {
        return parse_record_lit();
      }
      Expr* e = node(ExprKind::Name, advance());
      e->sym = t.sym;
      return e;
    }
    case Tok::LParen: {
      Nest nest(*this);
      if (nest_error(nest)) return error_expr();
      advance();
      NewlineMode mode(*this, false);
      Expr* e = parse_expr();
      if (panic_) {
        skip_to_closer(Tok::RParen);
        return error_expr();
      }
      expect(Tok::RParen, "to close the parenthesis");
      return e;
    }
    case Tok::LBracket: return parse_array_lit();
    case Tok::LBrace: return parse_object_lit();
    default: {
      if (std::find(misused_keywords_.begin(), misused_keywords_.end(), t.kind) !=
          misused_keywords_.end()) {
        // A keyword a declaration took as a name (reported there).
        std::string_view sp = tok_spelling(t.kind);
        Expr* e = node(ExprKind::Name, advance());
        e->sym = names_.intern(sp.substr(1, sp.size() - 2));
        return e;
      }
      error(t, fmt::format("expected an expression, {}", found(t)));
      return error_expr();
    }
  }
}

// inits -> [NAME ':' expr {sep NAME ':' expr} [sep]]    sep -> ',' | line break
void Parser::parse_field_inits(std::vector<FieldInit>& out, std::string_view what) {
  Pos open = tok().pos;
  advance();  // `{`
  NewlineMode mode(*this, false);
  while (!at(Tok::RBrace)) {
    if (at(Tok::Eof) || (is_stmt_keyword(tok().kind) && tok().newline_before)) {
      error(tok(), fmt::format("expected `}}` to close the {} opened at {}:{}, {}", what, open.line,
                               open.col, found(tok())));
      return;
    }
    FieldInit f;
    if (!parse_field_name(f.name, f.pos, fmt::format("in the {}", what))) {
      skip_to_closer(Tok::RBrace);
      return;
    }
    if (!expect(Tok::Colon, "and a value after the field name (`name: value`)")) {
      skip_to_closer(Tok::RBrace);
      return;
    }
    f.value = parse_expr();
    out.push_back(f);
    if (panic_) {
      skip_to_closer(Tok::RBrace);
      return;
    }
    if (accept(Tok::Comma) || at(Tok::RBrace) || tok().newline_before) continue;
    error(tok(), fmt::format("expected `,` or `}}` in the {}, {}", what, found(tok())));
    skip_to_closer(Tok::RBrace);
    return;
  }
  advance();
}

Expr* Parser::parse_record_lit() {
  Nest nest(*this);
  if (nest_error(nest)) return error_expr();
  const Token& name = advance();
  Expr* e = node(ExprKind::RecordLit, name);
  e->sym = name.sym;
  parse_field_inits(e->fields, fmt::format("`{}` literal", names_.str(name.sym)));
  if (panic_) return error_expr();
  set_depth(e);
  return e;
}

Expr* Parser::parse_object_lit() {
  Nest nest(*this);
  if (nest_error(nest)) return error_expr();
  Expr* e = node(ExprKind::ObjectLit, tok());
  parse_field_inits(e->fields, "object");
  if (panic_) return error_expr();
  set_depth(e);
  return e;
}

Expr* Parser::parse_array_lit() {
  Nest nest(*this);
  if (nest_error(nest)) return error_expr();
  Expr* e = node(ExprKind::ArrayLit, advance());
  NewlineMode mode(*this, false);
  while (!at(Tok::RBracket)) {
    e->args.push_back(parse_expr());
    if (panic_) {
      skip_to_closer(Tok::RBracket);
      return error_expr();
    }
    if (accept(Tok::Comma)) continue;
    if (!at(Tok::RBracket)) {
      error(tok(), fmt::format("expected `,` or `]` in the array, {}", found(tok())));
      skip_to_closer(Tok::RBracket);
      return error_expr();
    }
  }
  advance();
  set_depth(e);
  return e;
}

}  // namespace

void parse(const SourceFile& file, const LexOutput& lexed, Interner& names, Ast& ast,
           Diagnostics& diags) {
  Parser parser(file, lexed, names, ast, diags);
  parser.run();
}

}  // namespace aup

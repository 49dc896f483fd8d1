// The parser: tokens to the syntax tree (ast.h), by recursive descent with
// precedence climbing for expressions.
//
// Newlines: a line break ends a statement, except inside `( )`, `[ ]` and
// the `{ }` of a record or object literal, or after a binary operator or a
// comma. The lexer marks each token that follows a line break; the parser
// stops an expression at such a token unless it is inside brackets.
//
// Errors: the first error in a statement is reported; the parser then skips
// to the next statement (a line break or `;` outside brackets, or the
// closing `}`) and goes on, so one run reports each independent mistake
// once. A parse error in a statement where the lexer already reported one is
// not reported again.
#pragma once

#include "compiler/ast.h"
#include "compiler/diag.h"
#include "compiler/lexer.h"

namespace aup {

// Deepest nesting of blocks, brackets and prefix operators the parser
// follows (each level is a few stack frames); deeper input is an error.
inline constexpr uint32_t kMaxNesting = 256;
// Tallest expression tree (a long chain like `a + b + ... ` is tall too);
// keeps the checker's and code generator's recursion bounded.
inline constexpr uint32_t kMaxExprDepth = 1024;

void parse(const SourceFile& file, const LexOutput& lexed, Interner& names, Ast& ast,
           Diagnostics& diags);

}  // namespace aup

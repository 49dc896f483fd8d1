// The checker: names, types, state effects and control flow of a parsed
// module (docs/language.md). It annotates the syntax tree in place (ast.h) and
// fills Program (sema.h); every problem goes to Diagnostics, each reported
// once: an expression whose type could not be found gets the Error type,
// which every later check accepts silently.
#pragma once

#include <cstdint>

#include "compiler/ast.h"
#include "compiler/diag.h"
#include "compiler/sema.h"
#include "compiler/source.h"
#include "compiler/types.h"

namespace aup {

// Limits, each reported as an error before code generation could overflow.
inline constexpr uint32_t kMaxLocals = 200;       // local slots alive at once in a function
inline constexpr uint32_t kMaxParams = 64;        // parameters of a query or helper
inline constexpr uint32_t kMaxFields = 255;       // fields of a record, event or object
inline constexpr uint32_t kMaxDeclsPerKind = 65535;  // records, tables, vars, events or functions

void check(const SourceFile& file, Interner& names, Ast& ast, TypeTable& types, Program& program,
           Diagnostics& diags);

}  // namespace aup

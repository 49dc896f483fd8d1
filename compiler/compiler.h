// The aup front end (library `aupc`): source text to a checked, typed
// syntax tree. This is the header other parts of the project include.
#pragma once

#include <memory>
#include <string>

#include "compiler/ast.h"
#include "compiler/diag.h"
#include "compiler/intern.h"
#include "compiler/sema.h"
#include "compiler/source.h"
#include "compiler/types.h"

namespace aup {

// Everything the front end produced for one source file. Owns all of it:
// the tree and Program point into each other and into `names`.
struct CheckedModule {
  CheckedModule(std::string name, std::string text) : file(std::move(name), std::move(text)) {}
  CheckedModule(const CheckedModule&) = delete;
  CheckedModule& operator=(const CheckedModule&) = delete;

  SourceFile file;
  Interner names;
  Ast ast;
  TypeTable types;
  Program program;
  Diagnostics diags;  // sorted by position; empty when the module is well-formed

  bool ok() const { return diags.empty(); }
};

// Lexes, parses and checks `text`. Never throws on bad input; problems are
// in the result's diags. `text` must not exceed kMaxSourceBytes.
std::unique_ptr<CheckedModule> check_source(std::string name, std::string text);

// Reads a source file whole. Returns false with a message (no trailing
// period) when it cannot be read or exceeds kMaxSourceBytes.
bool read_source_file(const std::string& path, std::string& text, std::string& error);

}  // namespace aup

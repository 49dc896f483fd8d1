// What the checker learned about a module's declarations: records, tables,
// vars, events and functions, each numbered in declaration order. Together
// with the annotated syntax tree this is the input of code generation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ast.h"
#include "compiler/types.h"

namespace aup {

struct FieldInfo {
  Sym name = 0;
  Pos pos;
  const Type* type = nullptr;
  const Expr* default_value = nullptr;  // a literal, or null
};

struct RecordInfo {
  uint32_t index = 0;
  Sym name = 0;
  Pos pos;
  const Decl* decl = nullptr;
  std::vector<FieldInfo> fields;
  const Type* type = nullptr;
  bool is_event_args = false;  // the argument shape of an event (named after it)
  bool stored = false;         // the row type of at least one table
  bool broken = false;         // its declaration did not parse whole: fields may be missing

  // The field's number, or -1.
  int field_index(Sym field) const {
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].name == field) return static_cast<int>(i);
    }
    return -1;
  }
};

struct TableInfo {
  uint32_t index = 0;
  Sym name = 0;
  Pos pos;
  const Decl* decl = nullptr;
  const RecordInfo* record = nullptr;
  uint32_t key_field = 0;
  const Type* key_type = nullptr;  // num or text
};

struct VarInfo {
  uint32_t index = 0;
  Sym name = 0;
  Pos pos;
  const Decl* decl = nullptr;
  const Type* type = nullptr;
  const Expr* init = nullptr;
};

enum class FnKind : uint8_t { Handler, Query, Helper };

struct LocalInfo {
  Sym name = 0;
  Pos pos;
  const Type* type = nullptr;
  uint32_t slot = 0;
  bool param = false;
  bool readonly = false;  // a loop variable
};

// A place where a function changes state, kept for messages about callers.
struct FunctionInfo;
struct EffectSite {
  Pos pos;
  std::string what;  // "sets a field of a row of `accounts`"
  const FunctionInfo* where = nullptr;  // the function that does it
};

struct FunctionInfo {
  uint32_t index = 0;
  FnKind kind = FnKind::Helper;
  Sym name = 0;  // Handler: the event's name
  Pos pos;
  const Decl* decl = nullptr;
  uint32_t event = 0;  // Handler: its event's number
  std::vector<LocalInfo> locals;  // every local in declaration order; params first
  uint32_t param_count = 0;
  uint32_t frame_slots = 0;  // most local slots alive at once
  // Helper: the declared result type (Void without `: T`). Query and
  // Handler: the type of the values they return (Void when none).
  const Type* result = nullptr;

  // Effects (the checker closes them over calls).
  bool writes = false;
  EffectSite write_site;  // the first write this function makes or reaches
  // Tables whose rows this function adds or removes, with one site each.
  std::vector<std::pair<const TableInfo*, EffectSite>> membership;
};

struct EventInfo {
  uint32_t index = 0;
  Sym name = 0;
  Pos pos;
  const Decl* decl = nullptr;
  RecordInfo* args = nullptr;
  FunctionInfo* handler = nullptr;
};

struct Program {
  std::vector<std::unique_ptr<RecordInfo>> records;  // including events' argument records
  std::vector<std::unique_ptr<TableInfo>> tables;
  std::vector<std::unique_ptr<VarInfo>> vars;
  std::vector<std::unique_ptr<EventInfo>> events;
  std::vector<std::unique_ptr<FunctionInfo>> functions;  // handlers, queries and helpers
};

}  // namespace aup

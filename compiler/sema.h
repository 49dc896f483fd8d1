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

struct IndexInfo;
struct TableInfo {
  uint32_t index = 0;
  Sym name = 0;
  Pos pos;
  const Decl* decl = nullptr;
  const RecordInfo* record = nullptr;
  std::vector<uint32_t> key_fields;     // the record's fields, in key order
  std::vector<const Type*> key_types;   // each num or text
  std::vector<const IndexInfo*> indexes;  // declared on it
  bool composite() const { return key_fields.size() > 1; }
  bool is_key_field(uint32_t f) const {
    for (uint32_t k : key_fields) {
      if (k == f) return true;
    }
    return false;
  }
  // KEY's text mask: bit i set when component i is a text.
  uint32_t text_mask() const {
    uint32_t m = 0;
    for (size_t i = 0; i < key_types.size(); ++i) {
      if (key_types[i]->kind == TypeKind::Text) m |= 1u << i;
    }
    return m;
  }
};

// `[unique] index name on table (fields)`.
struct IndexInfo {
  uint32_t index = 0;
  Sym name = 0;
  Pos pos;
  const Decl* decl = nullptr;
  const TableInfo* table = nullptr;
  bool unique = false;
  std::vector<uint32_t> fields;         // the table's record fields, in index order
  std::vector<const Type*> field_types;  // each num or text
  // KEY's text mask over the index fields (the entry key's first components).
  uint32_t text_mask() const {
    uint32_t m = 0;
    for (size_t i = 0; i < field_types.size(); ++i) {
      if (field_types[i]->kind == TypeKind::Text) m |= 1u << i;
    }
    return m;
  }
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
  std::vector<std::unique_ptr<IndexInfo>> indexes;
  std::vector<std::unique_ptr<VarInfo>> vars;
  std::vector<std::unique_ptr<EventInfo>> events;
  std::vector<std::unique_ptr<FunctionInfo>> functions;  // handlers, queries and helpers
};

}  // namespace aup

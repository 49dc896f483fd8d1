// A compiled module: the schema (records, object shapes, types, tables,
// vars, events) and the functions (handlers, queries, helpers) with their
// bytecode, constants and line tables. The compiler builds one
// (compiler/codegen.cpp); module_file.h writes and reads it as a `.aupm`
// file; the VM runs it. Everything is numbered; instructions refer to
// entries by number.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vm/bytecode.h"
#include "vm/text.h"

namespace aup::vm {

// Types, as the runtime needs them: to turn JSON into values and back,
// and to know which values are arrays, records or objects.
enum class TypeCode : uint8_t { Void, Num, Text, Bool, Record, Row, Array, Object, View };

struct TypeDesc {
  TypeCode code = TypeCode::Void;
  uint32_t index = 0;  // Record: record; Row, View: table; Array: item type; Object: shape
  bool operator==(const TypeDesc&) const = default;
};

// The first types of every module, in this order.
inline constexpr uint32_t kTypeVoid = 0, kTypeNum = 1, kTypeText = 2, kTypeBool = 3;

struct Constant {
  enum class Kind : uint8_t { Num, Text, Bool };
  Kind kind = Kind::Num;
  double num = 0;
  bool boolean = false;
  std::string text;
  bool operator==(const Constant& o) const {
    return kind == o.kind && (kind == Kind::Text ? text == o.text
                              : kind == Kind::Bool ? boolean == o.boolean
                                                   : std::bit_cast<uint64_t>(num) ==
                                                         std::bit_cast<uint64_t>(o.num));
  }
};

struct FieldDesc {
  std::string name;
  uint32_t type = kTypeNum;
  bool has_default = false;
  Constant default_value;  // for arrays: an empty array (kind ignored)
};

struct RecordDesc {
  std::string name;
  bool event_args = false;
  std::vector<FieldDesc> fields;
};

struct ShapeDesc {  // an anonymous object type: fields in order
  std::vector<std::string> names;
  std::vector<uint32_t> types;
};

struct TableDesc {
  std::string name;
  uint32_t record = 0;
  std::vector<uint32_t> key_fields;  // the record's fields that make the key, in key order
};

// A secondary index of a table: its entries ordered by `fields` (record
// fields of the table, num or text), equal ones by the primary key. Not
// stored: rebuilt from the table at open (docs/store-format.md).
struct IndexDesc {
  std::string name;
  uint32_t table = 0;
  std::vector<uint32_t> fields;  // 1 to kMaxKeyFields, in index order
  bool unique = false;
};

struct VarDesc {
  std::string name;
  uint32_t type = kTypeNum;
  Constant init;
};

enum class FnKind : uint8_t { Handler, Query, Helper };

struct EventDesc {
  std::string name;
  uint32_t record = 0;   // the argument record
  uint32_t handler = 0;  // function number
};

// A source position for instructions from `pc` on (until the next entry).
struct LineEntry {
  uint32_t pc = 0;
  uint32_t line = 0;
  uint32_t col = 0;
};

struct Function {
  std::string name;  // Handler: the event's name
  FnKind kind = FnKind::Helper;
  uint32_t event = 0;  // Handler: event number
  std::vector<std::string> param_names;
  std::vector<uint32_t> param_types;
  uint32_t result_type = kTypeVoid;
  uint32_t frame_size = 0;  // registers the frame uses
  std::vector<Constant> constants;
  std::vector<Instr> code;
  std::vector<LineEntry> lines;  // ascending pc

  // Filled by Module::prepare: constants as 8-byte values (texts on the heap).
  std::vector<uint64_t> kvalues;

  // The source position of instruction `pc`.
  LineEntry position(uint32_t pc) const;
};

struct Module {
  Module() = default;
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  std::string source_name;  // the .aup file it was built from (for messages)
  std::vector<TypeDesc> types;
  std::vector<RecordDesc> records;
  std::vector<ShapeDesc> shapes;
  std::vector<TableDesc> tables;
  std::vector<IndexDesc> indexes;
  std::vector<VarDesc> vars;
  std::vector<EventDesc> events;
  std::vector<Function> functions;

  // Makes the constants runnable (Function::kvalues). Idempotent.
  void prepare();

  // Lookups by name; -1 when absent.
  int event_index(std::string_view name) const;
  int query_index(std::string_view name) const;  // a function of kind Query
  int table_index(std::string_view name) const;

 private:
  bool prepared_ = false;
};

}  // namespace aup::vm

// Semantic types. Every type is interned in a TypeTable, so two types are
// the same exactly when their pointers are equal.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "compiler/intern.h"

namespace aup {

struct RecordInfo;
struct TableInfo;

enum class TypeKind : uint8_t {
  Error,   // after a reported error: accepted everywhere, reported nowhere
  Void,    // the result of a call that returns nothing
  Num,
  Text,
  Bool,
  Record,  // a record value (or an event's arguments)
  Row,     // a reference to a row of one table: reads and writes go to the table
  MaybeRow,  // `t.get(k)`: a row of one table, or none; only `if let` takes it
  Array,
  Object,  // an anonymous object `{a: T, ...}` (fields in order)
  View,    // `t[a .. b]`: rows of one table with keys in [a, b)
  Range,   // `a .. b`: only after `for x in` or inside a table's `[ ]`
  Table,   // a table's name: only as the subject of `[ ]`, `.member` or `for`
};

struct Type;
struct ObjectField {
  Sym name = 0;
  const Type* type = nullptr;
  bool operator<(const ObjectField& o) const {
    return name != o.name ? name < o.name : type < o.type;
  }
};

struct Type {
  TypeKind kind = TypeKind::Error;
  const Type* elem = nullptr;          // Array: element type; Range: bound type
  const RecordInfo* record = nullptr;  // Record; Row, View, Table: the table's record
  const TableInfo* table = nullptr;    // Row, MaybeRow, View, Table
  std::vector<ObjectField> fields;     // Object

  bool is(TypeKind k) const { return kind == k; }
  bool is_error() const { return kind == TypeKind::Error; }
  // A record value or a row: something with the fields of `record`.
  bool has_record_fields() const { return kind == TypeKind::Record || kind == TypeKind::Row; }
};

class TypeTable {
 public:
  TypeTable();
  TypeTable(const TypeTable&) = delete;
  TypeTable& operator=(const TypeTable&) = delete;

  const Type* error() const { return error_; }
  const Type* void_() const { return void_type_; }
  const Type* num() const { return num_; }
  const Type* text() const { return text_; }
  const Type* boolean() const { return bool_; }
  const Type* range(const Type* bound);
  const Type* record(const RecordInfo* r);
  const Type* row(const TableInfo* t);
  const Type* maybe_row(const TableInfo* t);
  const Type* view(const TableInfo* t);
  const Type* table(const TableInfo* t);
  const Type* array(const Type* elem);
  const Type* object(std::vector<ObjectField> fields);

  // The type a value has once stored in a container or declared variable:
  // a row becomes a copy of its record.
  const Type* value_of(const Type* t);

 private:
  const Type* make(Type t);
  std::deque<Type> storage_;
  const Type* error_;
  const Type* void_type_;
  const Type* num_;
  const Type* text_;
  const Type* bool_;
  std::map<const void*, const Type*> records_, rows_, maybe_rows_, views_, tables_, arrays_, ranges_;
  std::map<std::vector<ObjectField>, const Type*> objects_;
};

// How a type is written in messages, as it is written in source: `num`,
// `[Transfer]`, `{id: num}`, `Account` (a record value), `row of accounts`
// (a row reference, written `accounts` in source), `event transfer` (an
// event's arguments).
std::string type_name(const Type* t, const Interner& names);

}  // namespace aup

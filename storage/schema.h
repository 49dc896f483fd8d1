// What the store knows of a module: its tables (rows of num, text and bool
// fields, one or more of them the key) and its vars. Never the language: the
// runtime builds a Schema from a compiled module.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace aup::storage {

enum class FieldType : uint8_t { Num = 1, Text = 2, Bool = 3 };

// A field's default (for migrations) or a var's initial value.
struct Scalar {
  FieldType type = FieldType::Num;
  double num = 0;
  bool boolean = false;
  std::string text;
  bool operator==(const Scalar&) const = default;
};

struct FieldSchema {
  std::string name;
  FieldType type = FieldType::Num;
  bool has_default = false;
  Scalar default_value;
  bool operator==(const FieldSchema&) const = default;
};

struct TableSchema {
  std::string name;
  std::string record;  // the record type's name (informational)
  std::vector<FieldSchema> fields;
  // The fields that make the key, in key order: one (`key id`), or up to
  // vm::kMaxKeyFields (`key (w, d, o)`), each num or text.
  std::vector<uint32_t> key_fields = {0};
  bool composite_key() const { return key_fields.size() > 1; }
  bool is_key_field(uint32_t f) const {
    for (uint32_t k : key_fields) {
      if (k == f) return true;
    }
    return false;
  }
  bool operator==(const TableSchema&) const = default;
};

struct VarSchema {
  std::string name;
  FieldType type = FieldType::Num;
  Scalar init;
  bool operator==(const VarSchema&) const = default;
};

struct Schema {
  std::vector<TableSchema> tables;
  std::vector<VarSchema> vars;
  bool operator==(const Schema&) const = default;

  int table_index(const std::string& name) const {
    for (size_t i = 0; i < tables.size(); ++i) {
      if (tables[i].name == name) return static_cast<int>(i);
    }
    return -1;
  }
  int var_index(const std::string& name) const {
    for (size_t i = 0; i < vars.size(); ++i) {
      if (vars[i].name == name) return static_cast<int>(i);
    }
    return -1;
  }
};

std::string_view field_type_name(FieldType t);

}  // namespace aup::storage

#include "vm/disasm.h"

#include <fmt/format.h>

#include "stdlib/builtins.h"

namespace aup::vm {

namespace {

std::string type_text(const Module& m, uint32_t t) {
  if (t >= m.types.size()) return "?";
  const TypeDesc& d = m.types[t];
  switch (d.code) {
    case TypeCode::Void: return "nothing";
    case TypeCode::Num: return "num";
    case TypeCode::Text: return "text";
    case TypeCode::Bool: return "bool";
    case TypeCode::Record: return d.index < m.records.size() ? m.records[d.index].name : "?";
    case TypeCode::Row: return "row of " + (d.index < m.tables.size() ? m.tables[d.index].name : "?");
    case TypeCode::View: return "view of " + (d.index < m.tables.size() ? m.tables[d.index].name : "?");
    case TypeCode::Array: return "[" + type_text(m, d.index) + "]";
    case TypeCode::Object: {
      if (d.index >= m.shapes.size()) return "{?}";
      const ShapeDesc& s = m.shapes[d.index];
      std::string out = "{";
      for (size_t i = 0; i < s.names.size(); ++i) {
        out += fmt::format("{}{}: {}", i ? ", " : "", s.names[i], type_text(m, s.types[i]));
      }
      return out + "}";
    }
  }
  return "?";
}

std::string constant_text(const Constant& c) {
  switch (c.kind) {
    case Constant::Kind::Num: return fmt::format("{}", c.num);
    case Constant::Kind::Bool: return c.boolean ? "true" : "false";
    case Constant::Kind::Text: {
      std::string s = "\"";
      for (char ch : c.text.substr(0, 40)) s += ch == '\n' ? std::string("\\n") : std::string(1, ch);
      return s + (c.text.size() > 40 ? "...\"" : "\"");
    }
  }
  return "?";
}

template <class List>
std::string name_at(const List& list, uint32_t i) {
  return i < list.size() ? list[i].name : fmt::format("#{}", i);
}

}  // namespace

std::string disassemble_instruction(const Module& m, const Function& f, uint32_t pc) {
  Instr i = f.code[pc];
  if ((i & 0xFF) >= kOpCount) return fmt::format("??? 0x{:08x}", i);
  Op op = op_of(i);
  uint32_t a = a_of(i), b = b_of(i), c = c_of(i), bx = bx_of(i);
  int32_t sbx = sbx_of(i);
  std::string name(op_name(op));
  auto target = [&] { return fmt::format("-> {}", static_cast<int64_t>(pc) + 1 + sbx); };
  std::string operands;
  switch (op) {
    case Op::RET0: break;
    case Op::JMP: operands = target(); break;
    case Op::JT:
    case Op::JF:
    case Op::NEXT:
    case Op::RNEXT: operands = fmt::format("R{} {}", a, target()); break;
    case Op::LOADI: operands = fmt::format("R{} {}", a, sbx); break;
    case Op::LOADB: operands = fmt::format("R{} {}", a, b ? "true" : "false"); break;
    case Op::NEWARR: operands = fmt::format("R{}{}", a, b ? " (of aggregates)" : ""); break;
    case Op::LOADK:
      operands = fmt::format("R{} K{} {}", a, bx, bx < f.constants.size() ? constant_text(f.constants[bx]) : "?");
      break;
    case Op::GETV:
    case Op::SETV: operands = fmt::format("R{} {}", a, name_at(m.vars, bx)); break;
    case Op::CALL: operands = fmt::format("R{} {}", a, name_at(m.functions, bx)); break;
    case Op::CALLB:
      operands = fmt::format("R{} {} ({} arg{})", a,
                             b < stdlib::builtins().size() ? stdlib::builtins()[b].name : "?", c,
                             c == 1 ? "" : "s");
      break;
    case Op::IVIEW:
    case Op::IALL:
    case Op::IGET: operands = fmt::format("R{} index {}", a, name_at(m.indexes, bx)); break;
    case Op::NEWREC: operands = fmt::format("R{} {}", a, name_at(m.records, bx)); break;
    case Op::NEWOBJ: operands = fmt::format("R{} shape {}", a, bx); break;
    case Op::RGET:
    case Op::GETF: operands = fmt::format("R{} R{} field {}", a, b, c); break;
    case Op::RSET:
    case Op::SETF: operands = fmt::format("R{} field {} R{}", a, b, c); break;
    case Op::DISTINCT: operands = fmt::format("R{} R{} kind {}", a, b, c); break;
    default:
      switch (op_format(op)) {
        case OpFormat::N: break;
        case OpFormat::A: operands = fmt::format("R{}", a); break;
        case OpFormat::AB: operands = fmt::format("R{} R{}", a, b); break;
        case OpFormat::ABC: operands = fmt::format("R{} R{} R{}", a, b, c); break;
        case OpFormat::ABx: operands = fmt::format("R{} {}", a, name_at(m.tables, bx)); break;
        case OpFormat::AsBx: operands = fmt::format("R{} {}", a, sbx); break;
        case OpFormat::sBx: operands = target(); break;
      }
  }
  return operands.empty() ? name : fmt::format("{:<9} {}", name, operands);
}

std::string disassemble(const Module& m) {
  std::string out = fmt::format("module {}\n", m.source_name);
  for (const RecordDesc& r : m.records) {
    out += fmt::format("{} {} {{", r.event_args ? "event" : "record", r.name);
    for (size_t i = 0; i < r.fields.size(); ++i) {
      out += fmt::format("{} {}: {}", i ? "," : "", r.fields[i].name, type_text(m, r.fields[i].type));
      if (r.fields[i].has_default && r.fields[i].type != kTypeVoid) {
        out += " = " + constant_text(r.fields[i].default_value);
      }
    }
    out += " }\n";
  }
  for (const TableDesc& t : m.tables) {
    std::string key;
    for (uint32_t f : t.key_fields) {
      if (!key.empty()) key += ", ";
      key += t.record < m.records.size() && f < m.records[t.record].fields.size() ? m.records[t.record].fields[f].name
                                                                               : "?";
    }
    out += fmt::format("table {}: {} key {}\n", t.name, name_at(m.records, t.record),
                       t.key_fields.size() == 1 ? key : "(" + key + ")");
  }
  for (const VarDesc& v : m.vars) {
    out += fmt::format("var {}: {} = {}\n", v.name, type_text(m, v.type), constant_text(v.init));
  }
  for (const Function& f : m.functions) {
    std::string kind = f.kind == FnKind::Handler ? "on" : f.kind == FnKind::Query ? "query" : "fn";
    std::string params;
    for (size_t i = 0; i < f.param_names.size(); ++i) {
      params += fmt::format("{}{}: {}", i ? ", " : "", f.param_names[i], type_text(m, f.param_types[i]));
    }
    out += fmt::format("\n{} {}{} -> {}  ({} registers, {} instructions)\n", kind, f.name,
                       f.kind == FnKind::Handler ? "" : "(" + params + ")", type_text(m, f.result_type),
                       f.frame_size, f.code.size());
    for (size_t k = 0; k < f.constants.size(); ++k) {
      out += fmt::format("  K{:<4} {}\n", k, constant_text(f.constants[k]));
    }
    for (uint32_t pc = 0; pc < f.code.size(); ++pc) {
      LineEntry e = f.position(pc);
      std::string where = e.line ? fmt::format("{}:{}", e.line, e.col) : "";
      out += fmt::format("  {:04}  {:<8} {}\n", pc, where, disassemble_instruction(m, f, pc));
    }
  }
  return out;
}

}  // namespace aup::vm

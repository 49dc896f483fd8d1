#include "vm/module.h"

#include <algorithm>
#include <array>
#include <bit>

namespace aup::vm {

namespace {
struct OpInfo {
  std::string_view name;
  OpFormat format;
  std::string_view meaning;
};
constexpr std::array<OpInfo, kOpCount> kOps = {{
#define AUP_OP(name, format, meaning) {#name, OpFormat::format, meaning},
#include "vm/opcodes.def"
#undef AUP_OP
}};
}  // namespace

std::string_view op_name(Op op) { return kOps[static_cast<size_t>(op)].name; }
OpFormat op_format(Op op) { return kOps[static_cast<size_t>(op)].format; }
std::string_view op_meaning(Op op) { return kOps[static_cast<size_t>(op)].meaning; }

LineEntry Function::position(uint32_t pc) const {
  auto it = std::upper_bound(lines.begin(), lines.end(), pc,
                             [](uint32_t p, const LineEntry& e) { return p < e.pc; });
  if (it == lines.begin()) return LineEntry{};
  return *(it - 1);
}

Module::~Module() {
  if (!prepared_) return;
  for (Function& f : functions) {
    for (size_t i = 0; i < f.constants.size(); ++i) {
      if (f.constants[i].kind == Constant::Kind::Text) {
        release(reinterpret_cast<TextObj*>(f.kvalues[i]));
      }
    }
  }
}

void Module::prepare() {
  if (prepared_) return;
  for (Function& f : functions) {
    f.kvalues.resize(f.constants.size());
    for (size_t i = 0; i < f.constants.size(); ++i) {
      const Constant& c = f.constants[i];
      switch (c.kind) {
        case Constant::Kind::Num: f.kvalues[i] = std::bit_cast<uint64_t>(c.num); break;
        case Constant::Kind::Bool: f.kvalues[i] = c.boolean ? 1 : 0; break;
        case Constant::Kind::Text:
          f.kvalues[i] = reinterpret_cast<uint64_t>(heap_text(c.text));
          break;
      }
    }
  }
  prepared_ = true;
}

int Module::event_index(std::string_view name) const {
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int Module::query_index(std::string_view name) const {
  for (size_t i = 0; i < functions.size(); ++i) {
    if (functions[i].kind == FnKind::Query && functions[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int Module::table_index(std::string_view name) const {
  for (size_t i = 0; i < tables.size(); ++i) {
    if (tables[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace aup::vm

// SORT: `xs.sorted()`, `xs.sorted(desc)`, `rows.sorted(f, g desc)`.
//
// The keys are a text constant of byte pairs (vm/bytecode.h, SortKey):
// the field (kSortItself for the item itself) and its kind and direction.
// The sort is stable (std::stable_sort on positions, so equal items keep
// their order), O(n log n) comparisons, each O(1) for numbers and bools
// and O(the shorter text) for texts. Numbers: -0 equals 0, NaN is after
// every number; descending is the exact reverse of ascending, so NaN comes
// first there. Texts by UTF-8 bytes; false before true.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>
#include <vector>

#include "vm/interp.h"

namespace aup::vm {

namespace {

int compare_nums(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) - std::isnan(b);
  return a < b ? -1 : a > b ? 1 : 0;
}

int compare_values(Value a, Value b, ItemKind kind) {
  switch (kind) {
    case ItemKind::Num: return compare_nums(as_num(a), as_num(b));
    case ItemKind::Text: return compare(as_ptr<TextObj>(a), as_ptr<TextObj>(b));
    case ItemKind::Bool: return static_cast<int>(a & 1) - static_cast<int>(b & 1);
    case ItemKind::Record: break;
  }
  assert(false && "records are sorted by their fields");
  return 0;
}

}  // namespace

ArrayObj* Vm::sort(const ArrayObj* a, const TextObj* spec) {
  std::string_view keys = spec->view();
  assert(!keys.empty() && keys.size() % 2 == 0);  // the verifier checked the constant
  auto before = [&](uint32_t x, uint32_t y) {
    for (size_t k = 0; k < keys.size(); k += 2) {
      auto field = static_cast<uint8_t>(keys[k]);
      auto flags = static_cast<uint8_t>(keys[k + 1]);
      Value vx = a->items[x], vy = a->items[y];
      if (field != kSortItself) {
        assert(field < as_ptr<RecObj>(vx)->count);
        vx = as_ptr<RecObj>(vx)->fields[field];
        vy = as_ptr<RecObj>(vy)->fields[field];
      }
      int c = compare_values(vx, vy, static_cast<ItemKind>(flags & kSortKindMask));
      if (c != 0) return (flags & kSortDescending) ? c > 0 : c < 0;
    }
    return false;
  };
  std::vector<uint32_t> order(a->len);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), before);
  ArrayObj* out = sized_array(a->len, a->aggregate_items);
  for (uint32_t i = 0; i < a->len; ++i) {
    out->items[i] = a->items[order[i]];
    // Each item is held by both arrays now.
    if (out->aggregate_items) as_ptr<ObjHeader>(out->items[i])->shared = true;
  }
  return out;
}

}  // namespace aup::vm

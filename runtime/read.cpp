#include "runtime/read.h"

#include <fmt/format.h>

#include <array>
#include <cassert>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/suggest.h"
#include "runtime/convert.h"
#include "vm/key.h"
#include "vm/state.h"
#include "vm/text.h"

namespace aup::runtime {

namespace {

using vm::Key;

// The fields a read goes through in order: the table's key, or an index's
// fields then the key's fields not among them (vm/state.h: what an index
// entry's key encodes). `encoded`: the tree's keys are encoded texts (a
// composite key, any index), else the one key field's own value.
struct Order {
  std::vector<uint32_t> fields;  // record fields
  uint32_t text_mask = 0;        // bit i: field i is a text
  bool encoded = false;
};

Order order_of(const vm::Module& m, uint32_t table, uint32_t index) {
  const vm::TableDesc& td = m.tables[table];
  const vm::RecordDesc& rd = m.records[td.record];
  Order o;
  auto add = [&](uint32_t f) {
    for (uint32_t g : o.fields) {
      if (g == f) return;
    }
    if (rd.fields[f].type == vm::kTypeText) o.text_mask |= 1u << o.fields.size();
    o.fields.push_back(f);
  };
  if (index != ReadSpec::kNone) {
    for (uint32_t f : m.indexes[index].fields) add(f);
  }
  for (uint32_t f : td.key_fields) add(f);
  o.encoded = index != ReadSpec::kNone || td.key_fields.size() > 1;
  return o;
}

// "(w, d, o)": an order's fields by name.
std::string field_list(const vm::Module& m, uint32_t table, const std::vector<uint32_t>& fields) {
  const vm::RecordDesc& rd = m.records[m.tables[table].record];
  std::string s = "(";
  for (size_t i = 0; i < fields.size(); ++i) s += (i ? ", " : "") + rd.fields[fields[i]].name;
  return s + ")";
}

// The members of a read object, by name (nodes of their values); the first
// problem found.
struct ReadMembers {
  static constexpr uint32_t kNone = ReadSpec::kNone;
  uint32_t table = kNone, key = kNone, from = kNone, to = kNone, index = kNone, limit = kNone, bytes = kNone;
  std::string problem;

  void read(const JsonDoc& doc, uint32_t n) {
    static const std::vector<std::string_view> kNames = {"table", "key", "from", "to", "index", "limit", "bytes"};
    uint32_t k = doc.first_child(n);
    for (uint32_t i = 0; i < doc.node(n).count; ++i, k = doc.after(k + 1)) {
      std::string_view name = doc.node(k).str;
      uint32_t* slot = name == "table" ? &table
                       : name == "key" ? &key
                       : name == "from" ? &from
                       : name == "to" ? &to
                       : name == "index" ? &index
                       : name == "limit" ? &limit
                       : name == "bytes" ? &bytes
                                         : nullptr;
      if (!slot) {
        std::string close = did_you_mean(name, kNames);
        note(fmt::format("unknown member `{}` of `read`{}", name,
                         close.empty() ? "; it has `table`, and `key`, or `from`, `to`, `index`, `limit` and `bytes`"
                                       : close));
      } else if (*slot != kNone) {
        note(fmt::format("member `{}` of `read` appears twice", name));
      } else {
        *slot = k + 1;
      }
    }
  }
  void note(std::string p) {
    if (problem.empty()) problem = std::move(p);
  }
};

// The table `read.table` names, or a problem (with the closest name).
std::string resolve_table(const vm::Module& m, const JsonDoc& doc, const ReadMembers& rm, uint32_t& table) {
  if (rm.table == ReadMembers::kNone) return "`read` needs `table`: the name of the table to read";
  const JsonNode& n = doc.node(rm.table);
  if (n.kind != JsonNode::Kind::String) return "`table` must be a string: the name of the table to read";
  int t = m.table_index(n.str);
  if (t >= 0) {
    table = static_cast<uint32_t>(t);
    return "";
  }
  std::vector<std::string_view> names;
  for (const vm::TableDesc& td : m.tables) names.push_back(td.name);
  return fmt::format("no table `{}`{}", n.str, did_you_mean_or_list(n.str, names, "tables"));
}

std::string resolve_index(const vm::Module& m, const JsonDoc& doc, uint32_t node, uint32_t table, uint32_t& index) {
  const JsonNode& n = doc.node(node);
  if (n.kind != JsonNode::Kind::String) return "`index` must be a string: the name of an index of the table";
  std::vector<std::string_view> names;
  for (uint32_t i = 0; i < m.indexes.size(); ++i) {
    if (m.indexes[i].table != table) continue;
    if (m.indexes[i].name == n.str) {
      index = i;
      return "";
    }
    names.push_back(m.indexes[i].name);
  }
  const std::string& tn = m.tables[table].name;
  if (names.empty()) return fmt::format("`{}` has no index `{}`: it has no indexes", tn, n.str);
  return fmt::format("`{}` has no index `{}`{}", tn, n.str, did_you_mean_or_list(n.str, names, "its indexes"));
}

// `limit` (rows) or `bytes`: a whole number, 1 to `most`; `fallback`
// when not given.
std::string resolve_count(const JsonDoc& doc, uint32_t node, std::string_view what, std::string_view unit,
                          uint32_t fallback, uint32_t most, uint32_t& out) {
  out = fallback;
  if (node == ReadMembers::kNone) return "";
  const JsonNode& n = doc.node(node);
  if (n.kind != JsonNode::Kind::Number || !(n.num >= 1) || n.num > 9007199254740992.0 ||
      n.num != static_cast<double>(static_cast<uint64_t>(n.num))) {
    return fmt::format("`{}` must be a whole number of {}, 1 to {}", what, unit, most);
  }
  if (n.num > most) {
    return fmt::format("`{}` {} is over {}, the most {} one read answers: page on with `next`", what, n.raw, most,
                       unit);
  }
  out = static_cast<uint32_t>(n.num);
  return "";
}

// `key`, `from` or `to`: an array of at most (for `key`: exactly) the
// order's fields; their values are read when the request runs.
std::string check_bound(const vm::Module& m, const JsonDoc& doc, uint32_t node, std::string_view what,
                        uint32_t table, const Order& o, bool whole) {
  if (node == ReadMembers::kNone) return "";
  const JsonNode& n = doc.node(node);
  std::string order = field_list(m, table, o.fields);
  if (n.kind != JsonNode::Kind::Array) {
    return fmt::format("`{}` must be an array of values of {}, in that order: [{}]", what, order,
                       whole ? "the whole key" : "a first few of them");
  }
  if (whole && n.count != o.fields.size()) {
    return fmt::format("`key` has {} value{}; the key of `{}` is {}: one value each", n.count,
                       n.count == 1 ? "" : "s", m.tables[table].name, order);
  }
  if (n.count > o.fields.size()) {
    return fmt::format("`{}` has {} values; `{}` is read in the order of {}: at most {}", what, n.count,
                       m.tables[table].name, order, o.fields.size());
  }
  return "";
}

std::string check_read(const vm::Module& m, const JsonDoc& doc, const ReadMembers& rm, Request& r) {
  if (!rm.problem.empty()) return rm.problem;
  if (std::string p = resolve_table(m, doc, rm, r.target); !p.empty()) return p;
  ReadSpec& s = r.read;
  if (rm.key != ReadMembers::kNone &&
      (rm.from != ReadMembers::kNone || rm.to != ReadMembers::kNone || rm.index != ReadMembers::kNone ||
       rm.limit != ReadMembers::kNone || rm.bytes != ReadMembers::kNone)) {
    return "`key` reads the one row with that key: no `from`, `to`, `index`, `limit` or `bytes` beside it";
  }
  if (rm.index != ReadMembers::kNone) {
    if (std::string p = resolve_index(m, doc, rm.index, r.target, s.index); !p.empty()) return p;
  }
  if (std::string p = resolve_count(doc, rm.limit, "limit", "rows", kReadRowsDefault, kReadRowsMax, s.limit);
      !p.empty()) {
    return p;
  }
  if (std::string p = resolve_count(doc, rm.bytes, "bytes", "bytes of rows", kReadBytesDefault, kReadBytesMax, s.bytes);
      !p.empty()) {
    return p;
  }
  Order o = order_of(m, r.target, s.index);
  for (auto [node, what] : {std::pair{rm.key, "key"}, {rm.from, "from"}, {rm.to, "to"}}) {
    if (std::string p = check_bound(m, doc, node, what, r.target, o, node == rm.key); !p.empty()) return p;
  }
  s.key = rm.key;
  s.from = rm.from;
  s.to = rm.to;
  return "";
}

}  // namespace

void prepare_read(const vm::Module& m, const JsonDoc& doc, uint32_t n, Request& r) {
  r.kind = RequestKind::Read;
  r.doc = &doc;
  r.read = ReadSpec{};
  if (doc.node(n).kind != JsonNode::Kind::Object) {
    r.refuse(Code::BadRequest, "`read` must be an object: {\"table\": NAME, \"key\": [...]}, or {\"table\": NAME, "
                               "\"from\": [...], \"to\": [...]}");
    return;
  }
  ReadMembers rm;
  rm.read(doc, n);
  if (std::string p = check_read(m, doc, rm, r); !p.empty()) r.refuse(Code::BadRequest, std::move(p));
}

namespace {

// One answer being made: the bounds, the rows written, where it stopped.
class Reader {
 public:
  Reader(const Request& r, vm::Vm& vm)
      : r_(r), vm_(vm), m_(vm.module()), order_(order_of(m_, r.target, r.read.index)) {}

  bool run(Answer& out);

 private:
  bool values(uint32_t node, std::string_view what, std::array<vm::Value, 2 * vm::kMaxKeyFields>& parts,
              uint32_t& count, Answer& out);
  bool bound(uint32_t node, std::string_view what, bool upper, Key& key, bool& set, Answer& out);
  void get(const Key& k);
  void scan(const Key* lo, const Key* hi);
  // Appends the row, or says it would pass a limit (then `next` is its key).
  bool add(const vm::Value* row);
  void append_key(const Key& k, std::string& out) const;

  const Request& r_;
  vm::Vm& vm_;
  const vm::Module& m_;
  Order order_;
  std::string rows_;
  uint32_t count_ = 0;
  size_t bytes_ = 0;           // of the rows' objects, without the commas between them
  bool hi_inclusive_ = false;  // a one-field key's `to` is the key itself
  std::string next_;            // "" or the continuation's JSON array
};

// The values of `key`, `from` or `to`, read as their fields' types.
bool Reader::values(uint32_t node, std::string_view what, std::array<vm::Value, 2 * vm::kMaxKeyFields>& parts,
                    uint32_t& count, Answer& out) {
  const JsonDoc& doc = *r_.doc;
  count = doc.node(node).count;
  const vm::RecordDesc& rd = m_.records[m_.tables[r_.target].record];
  JsonToValue reader(doc, vm_);
  uint32_t item = doc.first_child(node);
  for (uint32_t i = 0; i < count; ++i, item = doc.after(item)) {
    const vm::FieldDesc& f = rd.fields[order_.fields[i]];
    if (!reader.value(item, f.type, &parts[i])) {
      out.fail(reader.code(), fmt::format("{}[{}] (`{}` of `{}`): {}", what, i, f.name, m_.tables[r_.target].name,
                                          reader.error()));
      return false;
    }
  }
  return true;
}

// A bound as a key of the tree read: a one-field key's own value, else the
// encoding of the prefix (an upper bound: the least key above every key
// starting with it, exclusive). `set` false: no bound (absent or empty).
bool Reader::bound(uint32_t node, std::string_view what, bool upper, Key& key, bool& set, Answer& out) {
  set = false;
  if (node == ReadSpec::kNone) return true;
  std::array<vm::Value, 2 * vm::kMaxKeyFields> parts;
  uint32_t count = 0;
  if (!values(node, what, parts, count, out)) return false;
  if (count == 0) return true;
  set = true;
  if (!order_.encoded) {
    key = order_.text_mask ? vm::text_key(vm::as_ptr<vm::TextObj>(parts[0])) : vm::num_key(vm::as_num(parts[0]));
    return true;
  }
  uint32_t mask = order_.text_mask & ((1u << count) - 1u);
  size_t size = vm::key_bytes(parts.data(), count, mask);
  vm::TextObj* t = vm::arena_text_sized(vm_.arena(), static_cast<uint32_t>(size));
  size_t n = vm::encode_key(parts.data(), count, mask, t->bytes);
  if (upper) n = vm::prefix_end(t->bytes, n);
  t->len = static_cast<uint32_t>(n);
  t->bytes[n] = '\0';
  key = vm::text_key(t);
  return true;
}

bool Reader::add(const vm::Value* row) {
  size_t before = rows_.size();
  if (count_) rows_ += ',';
  size_t start = rows_.size();
  ValueToJson(vm_).row(row, r_.target, rows_);
  size_t bytes = rows_.size() - start;
  if (count_ && bytes_ + bytes > r_.read.bytes) {
    rows_.resize(before);
    return false;
  }
  bytes_ += bytes;
  ++count_;
  return true;
}

void Reader::get(const Key& k) {
  const vm::BTree& t = vm_.state().table(r_.target);
  if (const vm::Value* row = t.find(k)) add(row);
}

void Reader::scan(const Key* lo, const Key* hi) {
  const vm::State& s = vm_.state();
  const vm::BTree& table = s.table(r_.target);
  uint32_t index = r_.read.index;
  const vm::BTree& tree = index == ReadSpec::kNone ? table : s.index(index);
  vm::BTree::Cursor c;
  for (c.seek(tree, lo); c.valid(); c.next(tree)) {
    const Key& k = c.key();
    if (hi) {
      int cmp = vm::key_cmp(k, *hi);
      if (cmp > 0 || (cmp == 0 && !hi_inclusive_)) return;
    }
    const vm::Value* row = tree.row_at(c.pos());
    if (index != ReadSpec::kNone) row = table.find(s.entry_row_key(index, row));
    if (count_ == r_.read.limit || !add(row)) {
      append_key(k, next_);
      return;
    }
  }
}

// A key of the tree read as the JSON array a `from` takes.
void Reader::append_key(const Key& k, std::string& out) const {
  out += '[';
  if (!order_.encoded) {
    if (k.text) {
      json_append_string(out, k.text->view());
    } else {
      json_append_number(out, vm::order_num(k.ord));
    }
  } else {
    std::vector<vm::KeyComponent> parts;
    uint32_t count = static_cast<uint32_t>(order_.fields.size());
    bool decoded = vm::decode_key(k.text->view(), count, order_.text_mask, parts);
    assert(decoded);  // every key of the tree is `count` components
    (void)decoded;
    for (uint32_t i = 0; i < parts.size(); ++i) {
      if (i) out += ',';
      if ((order_.text_mask >> i) & 1u) {
        json_append_string(out, parts[i].text);
      } else {
        json_append_number(out, parts[i].num);
      }
    }
  }
  out += ']';
}

bool Reader::run(Answer& out) {
  Key lo, hi;
  bool has_lo = false, has_hi = false;
  if (r_.read.key != ReadSpec::kNone) {
    if (!bound(r_.read.key, "key", false, lo, has_lo, out)) return false;
    get(lo);
  } else {
    if (!bound(r_.read.from, "from", false, lo, has_lo, out)) return false;
    if (!bound(r_.read.to, "to", true, hi, has_hi, out)) return false;
    hi_inclusive_ = !order_.encoded;
    scan(has_lo ? &lo : nullptr, has_hi ? &hi : nullptr);
  }
  out.text.clear();
  out.text += "{\"rows\":[";
  out.text += rows_;
  out.text += ']';
  if (!next_.empty()) {
    out.text += ",\"next\":";
    out.text += next_;
  }
  out.text += '}';
  out.has_result = true;
  return true;
}

}  // namespace

bool answer_read(const Request& r, vm::Vm& vm, Answer& out) { return Reader(r, vm).run(out); }

}  // namespace aup::runtime

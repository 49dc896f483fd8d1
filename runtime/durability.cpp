#include "runtime/durability.h"

#include <fmt/format.h>

#include <cassert>

#include "runtime/shipper.h"

namespace aup::runtime {

namespace {
storage::FieldType field_type(uint32_t type) {
  return type == vm::kTypeText ? storage::FieldType::Text
         : type == vm::kTypeBool ? storage::FieldType::Bool
                                 : storage::FieldType::Num;
}

storage::Scalar scalar_of(uint32_t type, const vm::Constant& c) {
  storage::Scalar s;
  s.type = field_type(type);
  s.num = c.num;
  s.boolean = c.boolean;
  s.text = c.text;
  return s;
}
}  // namespace

storage::Schema schema_of(const vm::Module& m) {
  storage::Schema s;
  for (const vm::TableDesc& t : m.tables) {
    const vm::RecordDesc& r = m.records[t.record];
    storage::TableSchema ts;
    ts.name = t.name;
    ts.record = r.name;
    ts.key_fields = t.key_fields;
    for (const vm::FieldDesc& f : r.fields) {
      storage::FieldSchema fs;
      fs.name = f.name;
      fs.type = field_type(f.type);
      fs.has_default = f.has_default;
      if (f.has_default) fs.default_value = scalar_of(f.type, f.default_value);
      ts.fields.push_back(std::move(fs));
    }
    s.tables.push_back(std::move(ts));
  }
  for (const vm::VarDesc& v : m.vars) {
    s.vars.push_back(storage::VarSchema{v.name, field_type(v.type), scalar_of(v.type, v.init)});
  }
  return s;
}

void StateTables::set_var(uint32_t v, uint64_t value) {
  if (state_.text_var(v)) vm::release(vm::as_ptr<vm::TextObj>(state_.var(v)));
  state_.set_var_raw(v, value);
}

void StateTables::row_leaving(uint32_t t, const uint64_t* row) {
  if (state_.has_indexes(t)) state_.index_drop(t, row);
}

void StateTables::row_entered(uint32_t t, const uint64_t* row) {
  if (!state_.has_indexes(t)) return;
  vm::HeldKey key(state_.table(t).layout().key, row);
  state_.index_add(t, row, key.key());
}

bool StoreDurability::commit_batch(storage::Fate& fate, std::string& why) {
  using Op = storage::BatchEncoder::Op;
  // The last batch's notes were cleared after its commit.
  assert(batch_.empty() && !batch_.encoded());
  // The journal lists the batch's changes in order; the encoder keeps
  // their net effect per row, and where each change left its row.
  for (const vm::Change& c : state_.changes()) {
    storage::BatchEncoder::Where where{c.where, c.epoch};
    switch (c.kind) {
      case vm::Change::Kind::SetField: batch_.note(Op::Set, c.target, c.key, c.field, where); break;
      case vm::Change::Kind::SetVar: batch_.note_var(c.target); break;
      case vm::Change::Kind::Insert: batch_.note(Op::Insert, c.target, c.key, 0, where); break;
      case vm::Change::Kind::Remove: batch_.note(Op::Remove, c.target, c.key); break;
      case vm::Change::Kind::Replace: batch_.note(Op::Replace, c.target, c.key, 0, where); break;
    }
  }
  storage::Status st = store_.commit(batch_, fate);
  batch_.clear();
  if (!st.ok()) {
    // Nothing of the batch may be assumed written: undo it in memory too.
    state_.rollback(0);
    why = st.message;
    return false;
  }
  state_.commit();
  if (shipper_) shipper_->committed();
  // The journal released: the next batch's changes start from nothing (a
  // change left here would be written again in the next entry).
  assert(state_.changes().empty());
  return true;
}

ReadOnlyDurability::ReadOnlyDurability(vm::State& s, const std::string& dir, uint64_t last_seq)
    : state_(s),
      refusal_(fmt::format("the store {} is served read-only (aup run --read-only): it takes no events, only "
                           "queries; send events to a server that writes it",
                           dir)),
      last_seq_(last_seq) {}

bool ReadOnlyDurability::commit_batch(storage::Fate& fate, std::string& why) {
  state_.rollback(0);
  fate = storage::Fate::NotWritten;
  why = refusal_;
  return false;
}

void StoreDurability::between_batches() {
  if (shipper_) store_.retain_after(shipper_->retain_after());
  store_.tick();
}

uint64_t StoreDurability::acked_save() const {
  return shipper_ && sync_replicas_ > 0 ? shipper_->confirmed(sync_replicas_) : UINT64_MAX;
}

void StoreDurability::set_replica_of(const std::string& primary) {
  refuse_events(Code::NotPrimary,
                fmt::format("this node is a replica of {}: send events to the primary, {}", primary, primary));
  primary_ = primary;
}

}  // namespace aup::runtime

#include "storage/recovery.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cerrno>

#include "storage/image.h"
#include "storage/schema_file.h"

namespace aup::storage {

Status Recovery::read_schema(Schema& stored) {
  Status st = read_schema_file(io_, dir_, stored);
  if (!st.ok() && st.err == 0) reporter_.damage(st);
  return st;
}

Status Recovery::load_images(const Schema& stored, const Schema& layout, Tables& tables) {
  stored_ = &stored;
  layout_ = &layout;
  tables_ = &tables;
  map_ = map_schema(stored, layout);
  size_t n = layout.tables.size();
  image_seq_.assign(n + 1, 0);
  image_bytes_.assign(n + 1, 0);
  damaged_.assign(n + 1, false);
  fresh_.assign(n + 1, true);
  for (int t : map_.table) {
    if (t >= 0) fresh_[static_cast<size_t>(t)] = false;
  }
  fresh_[n] = false;
  for (uint32_t t = 0; t < n; ++t) {
    // A table the store does not have yet (a migration's, or the key
    // tables a store gains) has no rows: an image of it can only be one an
    // open wrote before it crashed short of the schema file, and is not read.
    if (fresh_[t]) continue;
    const TableSchema& target = layout.tables[t];
    ImageRead info;
    uint64_t rows = 0;
    Status st = load_table_image(io_, table_image_path(dir_, target.name), target, tables.table(t), info, rows);
    st = took_image(t, st, info.seq, info.bytes, rows);
    if (!st.ok()) return st;
  }
  return load_vars_image(layout, tables);
}

// The vars image, by name into the layout's vars; a var the layout lacks
// (or holds with another type) is dropped.
Status Recovery::load_vars_image(const Schema& layout, Tables& tables) {
  ImageRead info;
  Status st = read_vars_image(io_, vars_image_path(dir_), info, [&](const VarSchema& v, uint64_t value) {
    int i = layout.var_index(v.name);
    if (i >= 0 && layout.vars[static_cast<size_t>(i)].type == v.type) {
      tables.set_var(static_cast<uint32_t>(i), value);
    } else if (v.type == FieldType::Text) {
      vm::release(reinterpret_cast<vm::TextObj*>(value));
    }
  });
  return took_image(static_cast<uint32_t>(layout.tables.size()), st, info.seq, info.bytes, info.rows);
}

// What became of image t: read (it covers its save), missing (it covers
// nothing: a crash or a failure while the store was being created),
// damaged (reported; refused unless reading past damage), or unreadable
// (an operating error: refused, never reported as damage).
Status Recovery::took_image(uint32_t t, const Status& st, uint64_t seq, uint64_t bytes, uint64_t rows) {
  if (st.ok()) {
    image_seq_[t] = seq;
    image_bytes_[t] = bytes;
    reporter_.image_read(t, seq, bytes, rows);
    return Status::good();
  }
  if (st.err == ENOENT) return Status::good();
  if (st.err != 0) return st;
  reporter_.image_damaged(t, st);
  if (!o_.read_past_damage) return st;
  damaged_[t] = true;
  return Status::good();
}

Status Recovery::read_log() {
  assert(tables_ && "load_images comes first");
  apply_after_ = image_seq_;
  for (size_t t = 0; t < damaged_.size(); ++t) {
    // Nothing of the log is for a damaged image's table, nor for a table
    // the store does not have yet (no entry holds its records): the log
    // need not reach back to it either.
    if (damaged_[t] || fresh_[t]) apply_after_[t] = UINT64_MAX;
  }
  all_covered_ = *std::min_element(apply_after_.begin(), apply_after_.end());
  applied_bytes_.assign(image_seq_.size(), 0);
  last_seq_ = *std::max_element(image_seq_.begin(), image_seq_.end());
  Status st = read_terms(io_, dir_, terms_);
  if (!st.ok()) {
    if (st.err == 0) reporter_.damage(st);
    return st;
  }
  st = Log::open(
      io_, dir_, o_.log, [this](const LogEntry& e) { return visit(e); }, log_, log_report_);
  if (!st.ok()) {
    if (st.err == 0 && !refused_in_visit_) reporter_.damage(st);
    return st;
  }
  // The log's last entry is the last one visited: the state read is the
  // state the log holds.
  assert(log_->last_seq() == visited_seq_ && log_report_.entries == entries_);
  last_seq_ = std::max(last_seq_, log_->last_seq());
  terms_changed_ = terms_.drop_after(last_seq_) || terms_changed_;
  if (log_report_.torn) reporter_.torn_tail(log_report_.torn_where);
  reporter_.log_read(log_report_, log_->segments());
  return Status::good();
}

// One entry of the log, in order: reported, then applied to each table
// whose image does not cover it.
Status Recovery::visit(const LogEntry& e) {
  // The log hands on only entries that chain (storage/log.h): save numbers
  // strictly increasing, each entry's predecessor the entry before it. One
  // that did not would be applied over a state no save ever had.
  assert(e.seq > e.prev_seq && (entries_ == 0 || e.prev_seq == visited_seq_));
  visited_seq_ = e.seq;
  if (++entries_ == 1) {
    Status m = check_reaches_back(e.prev_seq);
    if (!m.ok()) {
      refused_in_visit_ = true;
      return m;
    }
  }
  if (Status t = check_term(e); !t.ok()) return refuse_entry(e, t);
  PayloadSummary summary;
  if (o_.summarize_entries) {
    Status s = summarize_payload(e.payload, *stored_, summary);
    if (!s.ok()) return refuse_entry(e, s);
  }
  reporter_.entry(e, o_.summarize_entries ? &summary : nullptr);
  // Entries every image covers are not even decoded (they may be in an
  // older layout, from before a migration).
  if (missing_ || e.seq <= all_covered_ || e.seq > o_.apply_through) return Status::good();
  Status a = apply_payload(e.payload, *stored_, map_, e.seq, apply_after_, *tables_, &applied_bytes_);
  if (!a.ok()) return refuse_entry(e, a);
  return Status::good();
}

// The entry's term against the history (read_log's rule).
Status Recovery::check_term(const LogEntry& e) {
  if (e.term > terms_.last_term()) {
    terms_.drop_after(e.seq - 1);
    terms_.begin(e.term, e.seq);
    terms_changed_ = true;
    return Status::good();
  }
  if (uint32_t said = terms_.term_at(e.seq); said != e.term) {
    return Status::error(fmt::format("entry {} is of term {}, but {}/terms has save {} in term {}", e.seq, e.term,
                                     dir_, e.seq, said));
  }
  return Status::good();
}

// An entry whose payload does not decode (or does not fit the tables): damage, named by its place.
Status Recovery::refuse_entry(const LogEntry& e, const Status& why) {
  Status st = Status::error(fmt::format("log-{} at byte {}: {}", e.segment, e.offset, why.message));
  reporter_.damage(st);
  refused_in_visit_ = true;
  return st;
}

// Every image must reach back to where the log begins, or entries between
// are lost (a segment deleted or emptied by hand, say). Checked at the
// first entry, before records meet rows that are not there.
Status Recovery::check_reaches_back(uint64_t first_prev_seq) {
  size_t n = layout_->tables.size();
  for (size_t t = 0; t <= n; ++t) {
    if (apply_after_[t] >= first_prev_seq) continue;
    reporter_.missing_entries(static_cast<uint32_t>(t), first_prev_seq, apply_after_[t]);
    if (o_.read_past_damage) {
      missing_ = true;  // the log is still read and verified, none of it applied
      return Status::good();
    }
    std::string what = t < n ? fmt::format("table `{}`", layout_->tables[t].name) : std::string("the vars");
    return Status::error(fmt::format("the store {} is missing log entries: its oldest entry follows save {}, "
                                     "but the image of {} covers only up to save {}",
                                     dir_, first_prev_seq, what, apply_after_[t]));
  }
  return Status::good();
}

}  // namespace aup::storage

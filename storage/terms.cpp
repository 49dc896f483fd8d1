#include "storage/terms.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <charconv>

#include "storage/file_io.h"

namespace aup::storage {

namespace {

constexpr const char* kTermsFile = "terms";
constexpr DurablePoints kTermPoints{"terms.before_fsync", "terms.before_rename", "terms.after_rename",
                                    "terms.after_dir_sync"};
// A history longer than this is damage: every term is an election or a
// promotion, each a durable write of this file.
constexpr size_t kMaxTerms = 1 << 20;

template <class T>
bool parse_number(std::string_view& line, T& out) {
  auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), out);
  if (ec != std::errc() || end == line.data()) return false;
  line.remove_prefix(static_cast<size_t>(end - line.data()));
  return true;
}

}  // namespace

const TermStart* TermHistory::start_of(uint64_t save) const {
  auto after = std::upper_bound(starts_.begin(), starts_.end(), save,
                                [](uint64_t s, const TermStart& t) { return s < t.first_save; });
  return after == starts_.begin() ? nullptr : &*std::prev(after);
}

uint32_t TermHistory::term_at(uint64_t save) const {
  const TermStart* t = start_of(save);
  return t ? t->term : 0;
}

void TermHistory::begin(uint32_t term, uint64_t first_save) {
  // Terms only move on, and a term begins where the last one's entries end
  // or later: a history that went back would make two entries one.
  assert(term > last_term() && (starts_.empty() || first_save >= starts_.back().first_save));
  if (!starts_.empty() && starts_.back().first_save == first_save) starts_.pop_back();
  starts_.push_back({term, first_save});
}

bool TermHistory::drop_after(uint64_t last_save) {
  size_t before = starts_.size();
  while (!starts_.empty() && starts_.back().first_save > last_save) starts_.pop_back();
  return starts_.size() != before;
}

std::string TermHistory::encode() const {
  std::string out;
  for (const TermStart& t : starts_) out += fmt::format("{} {}\n", t.term, t.first_save);
  return out;
}

Status TermHistory::decode(std::string_view text, const std::string& what, TermHistory& out) {
  out.starts_.clear();
  for (size_t line_no = 1; !text.empty(); ++line_no) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    TermStart t;
    bool ok = nl != std::string_view::npos && parse_number(line, t.term) && !line.empty() && line[0] == ' ';
    if (ok) line.remove_prefix(1);
    ok = ok && parse_number(line, t.first_save) && line.empty();
    ok = ok && t.term > out.last_term() && (out.starts_.empty() || t.first_save >= out.starts_.back().first_save);
    if (!ok || out.starts_.size() >= kMaxTerms) {
      return Status::error(fmt::format("{} is damaged at line {}: a term history is lines `TERM FIRST_SAVE`, "
                                       "both increasing, at most {} of them",
                                       what, line_no, kMaxTerms));
    }
    out.starts_.push_back(t);
  }
  return Status::good();
}

namespace {

// Two histories agree on save `s` when each has it in the same term, and
// that term began at the same save on both: a term begun by hand on two
// nodes (two promotions to the same number) then still tells them apart.
bool agree(const TermHistory& a, const TermHistory& b, uint64_t s) {
  const TermStart* x = a.start_of(s);
  const TermStart* y = b.start_of(s);
  return x && y ? *x == *y : x == y;
}

}  // namespace

uint64_t common_save(const TermHistory& a, uint64_t a_last, const TermHistory& b, uint64_t b_last) {
  uint64_t top = std::min(a_last, b_last);
  std::vector<uint64_t> candidates{top};
  for (const TermHistory* h : {&a, &b}) {
    for (const TermStart& t : h->starts()) {
      if (t.first_save >= 1 && t.first_save - 1 < top) candidates.push_back(t.first_save - 1);
    }
  }
  std::sort(candidates.begin(), candidates.end(), std::greater<>());
  for (uint64_t s : candidates) {
    if (s == 0 || agree(a, b, s)) return s;
  }
  return 0;
}

Status read_terms(Io& io, const std::string& dir, TermHistory& out) {
  out = TermHistory();
  std::vector<uint8_t> bytes;
  std::string path = fmt::format("{}/{}", dir, kTermsFile);
  Status st = read_file(io, path, bytes);
  if (!st.ok()) return st.err == ENOENT ? Status::good() : st;
  return TermHistory::decode(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path, out);
}

Status write_terms(Io& io, const std::string& dir, const TermHistory& h) {
  std::string text = h.encode();
  return write_file_durably(io, dir, kTermsFile,
                            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()),
                            DurableWrite{kTermPoints, {}});
}

}  // namespace aup::storage

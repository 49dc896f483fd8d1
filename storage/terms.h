// DIR/terms: a store's term history (docs/replication.md, "Terms").
//
// A term is the time one primary leads; every log entry carries the term
// of the primary that wrote it (storage/log_format.h). The history says
// where each term began: one line a term, `TERM FIRST_SAVE`, terms and
// first saves increasing, every term's entries running from its first
// save to the save before the next term's. A store never part of a
// cluster has no file (everything is term 0).
//
// Why a file beside the log: the log keeps only the entries its images do
// not cover, so it cannot say which term an older save was written in; a
// replica's handshake needs that to find the last entry it shares with its
// primary (common_save). Each node writes its history itself, before the
// first entry of a new term (begin_term on a primary, the first entry of
// a newer term a replica takes), so a crash between leaves a term that
// begins past the last save, which the next open forgets (drop_after).
//
// Two nodes hold the same entry at save S when their histories give S the
// same term, begun at the same save: a term has one primary, which
// numbers its entries, and a
// replica takes a primary's entries only after its own last one matches
// the primary's (runtime/shipper.h), so each log is a prefix of the
// primary's whose term it ends in. (Two nodes promoted by hand to the same
// term number are two primaries of one term: their terms are told apart
// only where they began at different saves. Promote one node.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/io.h"
#include "storage/status.h"

namespace aup::storage {

struct TermStart {
  uint32_t term = 0;
  uint64_t first_save = 0;
  bool operator==(const TermStart&) const = default;
};

class TermHistory {
 public:
  TermHistory() = default;
  explicit TermHistory(std::vector<TermStart> starts) : starts_(std::move(starts)) {}

  const std::vector<TermStart>& starts() const { return starts_; }
  // The newest term (0 when none began).
  uint32_t last_term() const { return starts_.empty() ? 0 : starts_.back().term; }
  // The term save `save` was written in: the last term beginning at or
  // before it (0 before every one).
  uint32_t term_at(uint64_t save) const;
  // The start of that term (null: before every one).
  const TermStart* start_of(uint64_t save) const;
  // Term `term` begins at `first_save`: later than the last term, and at
  // or after its first save. A term that began at the same save (it wrote
  // nothing) is replaced.
  void begin(uint32_t term, uint64_t first_save);
  // Forgets the terms that begin after `last_save` (begun, and then nothing
  // written in them). Whether any was.
  bool drop_after(uint64_t last_save);

  std::string encode() const;
  // `what` names the text in a refusal ("DIR/terms").
  static Status decode(std::string_view text, const std::string& what, TermHistory& out);

 private:
  std::vector<TermStart> starts_;
};

// The last save at which a log ending at save `a_last` with history `a`
// and one ending at `b_last` with history `b` hold the same entry (0: none
// but the empty beginning): where both give the save the same term, begun
// at the same save. Only saves up to the lesser last are compared; between
// two term starts both histories are constant, so the greatest agreeing
// save is the lesser last or the save before some term start.
uint64_t common_save(const TermHistory& a, uint64_t a_last, const TermHistory& b, uint64_t b_last);

// DIR/terms: an empty history when there is none.
Status read_terms(Io& io, const std::string& dir, TermHistory& out);
// Replaced durably (storage/file_io.h; crash points terms.*).
Status write_terms(Io& io, const std::string& dir, const TermHistory& h);

}  // namespace aup::storage

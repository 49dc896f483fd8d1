#include "storage/log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <utility>

#include "storage/file_io.h"
#include "vm/bytes.h"

namespace aup::storage {

namespace lf = log_format;

// A segment header's fields (log_format.h has its bytes). Not in the
// anonymous namespace: Log::Opener, a class of the library, holds one.
struct SegmentHeader {
  uint64_t number = 0;
  uint64_t generation = 0;
  uint64_t predecessor = 0;
  uint64_t size = 0;
};

// A segment's bytes as read: an allocator that leaves new elements
// uninitialised, so growing the buffer before a read does not zero what
// the read overwrites at once (2% of the instructions of opening a bank
// store). Whatever a read leaves unfilled is zeroed by hand
// (SegmentReader::ensure).
template <class T>
struct ReadAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = ReadAllocator<U>;
  };
  ReadAllocator() = default;
  template <class U>
  ReadAllocator(const ReadAllocator<U>&) {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};

// Not in the anonymous namespace either: Log::Opener holds one.
using SegmentBytes = std::vector<uint8_t, ReadAllocator<uint8_t>>;

namespace {

using bytes::get_u32;
using bytes::get_u64;
using bytes::put_u32;
using bytes::put_u64;

void encode_header(const SegmentHeader& h, uint8_t* p) {
  std::memset(p, 0, lf::kHeaderBytes);
  std::memcpy(p, lf::kMagic, 8);
  put_u32(p + 8, lf::kVersion);
  put_u32(p + 12, lf::kHeaderBytes);
  put_u64(p + 16, h.number);
  put_u64(p + 24, h.generation);
  put_u64(p + 32, h.predecessor);
  put_u64(p + 40, h.size);
  put_u64(p + 56, XXH3_64bits(p, 56));
}

// Why a header is not a valid segment header (naming the byte), or "".
std::string decode_header(const uint8_t* p, SegmentHeader& h) {
  if (std::memcmp(p, lf::kMagic, 8) != 0) return "no log magic at byte 0";
  if (get_u32(p + 8) != lf::kVersion) {
    return fmt::format("format version {} at byte 8, this aup reads {}", get_u32(p + 8), lf::kVersion);
  }
  if (get_u32(p + 12) != lf::kHeaderBytes) return fmt::format("header size {} at byte 12", get_u32(p + 12));
  if (get_u64(p + 56) != XXH3_64bits(p, 56)) return "the header checksum at byte 56 does not match bytes 0..55";
  h.number = get_u64(p + 16);
  h.generation = get_u64(p + 24);
  h.predecessor = get_u64(p + 32);
  h.size = get_u64(p + 40);
  if (h.generation == 0) return "generation 0 at byte 24";
  if (h.size < lf::kHeaderBytes) return fmt::format("segment size {} at byte 40", h.size);
  return "";
}

// Two one-shot hashes (no hashing state to allocate): the header's 32
// bytes seeded with the generation, then the payload seeded with that.
uint64_t entry_digest(uint64_t generation, const uint8_t* head, const uint8_t* payload, size_t n) {
  return XXH3_64bits_withSeed(payload, n, XXH3_64bits_withSeed(head, 32, generation));
}

bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i]) return false;
  }
  return true;
}

uint64_t random_generation() {
  std::random_device rd;
  uint64_t g = (uint64_t{rd()} << 32) ^ rd();
  return g ? g : 1;
}

// Why an entry at `off` is not a valid continuation ("" if it is), and
// whether it is whole (its digest matches: this generation wrote it whole).
struct EntryCheck {
  std::string why;
  bool whole = false;
};
// Whether an entry of payload `len` at `off` fits in the `size` bytes of its
// segment, padding included: append writes one only when it does, so the
// log's position (past the padding) never passes the segment's end. A
// header naming a size that is not a multiple of 8 could otherwise let an
// entry's payload fit and its padding not (found by fuzzing).
bool entry_fits(uint64_t off, uint32_t len, uint64_t size) {
  return off <= size && lf::entry_bytes(len) <= size - off;
}

// The entry before the one checked, as far as chaining goes.
struct LastEntry {
  bool have = false;
  uint64_t seq = 0;
  uint64_t digest = 0;
  uint32_t term = 0;
};

// The entry at byte `off` of its segment, whose bytes up to byte `end` of
// the segment (the segment's end, or as far as has been read) start at
// `head`.
EntryCheck check_entry(const uint8_t* head, uint64_t off, uint64_t end, uint64_t generation, const LastEntry& last) {
  uint32_t len = get_u32(head);
  if (!entry_fits(off, len, end) || len > lf::kMaxPayloadBytes) {
    return {"entry longer than the segment (incomplete)", false};
  }
  if (entry_digest(generation, head, head + lf::kEntryHeaderBytes, len) != get_u64(head + 32)) {
    return {"digest mismatch", false};
  }
  uint64_t seq = get_u64(head + 8), prev = get_u64(head + 16);
  if (seq <= prev) return {"save number not after its predecessor", true};
  if (last.have && (prev != last.seq || get_u64(head + 24) != last.digest)) {
    return {"does not chain to the entry before it", true};
  }
  if (uint32_t term = get_u32(head + 4); term < last.term) {
    return {fmt::format("term {} is lower than the entry before it's ({})", term, last.term), true};
  }
  return {"", true};
}

// Whether a valid entry of this generation that could continue a log
// whose last valid entry is `after` starts anywhere at or after `from`
// (8-byte steps). Such an entry has a predecessor at or past `after`'s
// save number and a term no lower than its: stale entries of a reused
// segment (older save numbers) and nearly every position inside a payload
// fail those tests before any digest is computed, so a scan costs about a
// read of the bytes, not a digest of the rest of the segment at each
// position.
bool valid_entry_after(const SegmentBytes& buf, uint64_t from, uint64_t generation, const LastEntry& after) {
  for (uint64_t p = (from + lf::kAlign - 1) / lf::kAlign * lf::kAlign;
       p + lf::kEntryHeaderBytes <= buf.size(); p += lf::kAlign) {
    const uint8_t* head = buf.data() + p;
    uint32_t len = get_u32(head);
    if (len == 0 || !entry_fits(p, len, buf.size()) || get_u32(head + 4) < after.term) continue;
    uint64_t seq = get_u64(head + 8), prev = get_u64(head + 16);
    if (seq <= prev || prev < after.seq) continue;
    if (entry_digest(generation, head, head + lf::kEntryHeaderBytes, len) == get_u64(head + 32)) return true;
  }
  return false;
}

// How far past an end marker open looks for valid entries.
constexpr uint64_t kEndScanBytes = uint64_t{1} << 20;

// A segment read from its start as far as open needs it: a preallocated
// segment is mostly unused, and reading all 64 MiB of it would make every
// open slow. `buf` always holds exactly the bytes read so far.
class SegmentReader {
 public:
  SegmentReader(Io& io, int fd, uint64_t size, const std::string& path, SegmentBytes& buf)
      : io_(io), fd_(fd), size_(size), path_(path), buf_(buf) {
    buf_.clear();
  }
  // Reads at least the first n bytes (fewer only at the end of the segment),
  // in growing steps so a long log is not read in small pieces.
  Status ensure(uint64_t n) {
    if (n <= buf_.size() || buf_.size() >= size_) return Status::good();
    uint64_t want = std::min(size_, std::max({n, 2 * static_cast<uint64_t>(buf_.size()), kFirstRead}));
    size_t done = buf_.size();
    // Room for the whole segment at the first growth: doubling moved the
    // bytes read so far, and each larger buffer was new memory for the
    // kernel to zero (127 MiB of it for a 64 MiB segment). Only what is
    // read is touched.
    if (buf_.capacity() < want) buf_.reserve(static_cast<size_t>(size_));
    buf_.resize(want);  // not zeroed: the read fills it
    size_t got = 0;
    Status st = read_at(io_, fd_, buf_.data() + done, want - done, done, path_, got);
    // Shorter than its header says: the rest reads as zeros.
    std::memset(buf_.data() + done + got, 0, want - done - got);
    return st;
  }

 private:
  static constexpr uint64_t kFirstRead = uint64_t{1} << 20;
  Io& io_;
  int fd_;
  uint64_t size_;
  const std::string& path_;
  SegmentBytes& buf_;
};

}  // namespace

std::string Log::path(uint64_t number) const { return fmt::format("{}/log-{}", dir_, number); }

Log::~Log() {
  for (Segment& s : chain_) {
    if (s.fd >= 0) io_.close(s.fd);
  }
}

// Log::open's steps, in the order of docs/store-format.md ("Opening a
// store", steps 4 to 7). Nothing is written until every segment has been
// read: a refused open leaves the files as they were.
class Log::Opener {
 public:
  Opener(Log& log, const Visitor& visit, LogOpenReport& report) : log_(log), visit_(visit), report_(report) {}
  ~Opener() {
    for (Candidate& c : cands_) {
      if (c.fd >= 0) log_.io_.close(c.fd);
    }
  }
  Opener(const Opener&) = delete;
  Opener& operator=(const Opener&) = delete;

  Status list_segments();
  Status read_headers();
  Status choose_chain();
  Status read_entries();
  Status cut_tail();
  Status write_end_marker(const Segment& seg, uint64_t off);
  Status empty_after_cut();
  void drop_after_cut();

 private:
  struct Candidate {
    uint64_t number = 0;
    std::string path;
    SegmentHeader h;
    bool valid = false;
    int fd = -1;
    int64_t file_size = 0;
    bool blank = false;  // empty, or its header all zeros: never headed
  };
  Status read_header(Candidate& c);
  void set_aside(const std::vector<bool>& in_chain);
  Status read_segment(Segment& seg, const std::string& path);
  Status take_entry(Segment& seg, uint64_t off, uint32_t len);
  Status check_end_marker(SegmentReader& reader, const Segment& seg, uint64_t off);
  Status judge_bad_entry(SegmentReader& reader, const Segment& seg, uint64_t off, const EntryCheck& check);
  Status check_no_later_entries(const Segment& seg, const std::string& path);
  // A live read reached its cut (Options::cut_end): nothing after it is read.
  bool cut_ = false;
  LastEntry last_entry() const { return {have_last_, log_.last_seq_, log_.last_digest_, log_.last_term_}; }

  Log& log_;
  const Visitor& visit_;
  LogOpenReport& report_;
  std::vector<std::pair<uint64_t, std::string>> files_;  // the log-N files, by number
  std::vector<Candidate> cands_;                         // the same, opened
  std::vector<size_t> chain_;                            // indexes into cands_, oldest first
  SegmentBytes buf_;                                     // the segment being read
  bool have_last_ = false;
  std::pair<uint64_t, uint64_t> last_end_{0, 0};  // segment and byte where the last valid entry ends
  bool torn_ = false;                             // a torn entry ended the log: later segments only checked
  size_t torn_segment_ = 0;                       // its segment's place in the chain
  std::optional<Free> unfinished_;                // a newest segment never headed (removed by a writable open)
};

// The segment files present, by number.
Status Log::Opener::list_segments() {
  std::vector<std::string> names;
  if (int rc = log_.io_.list_dir(log_.dir_, names); rc < 0) {
    return Status::error(fmt::format("cannot list {}: {}", log_.dir_, std::strerror(-rc)), -rc);
  }
  for (std::string_view name : names) {
    if (name.size() < 5 || name.substr(0, 4) != "log-") continue;
    std::string_view digits = name.substr(4);
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    if (digits.size() > 18) continue;
    uint64_t number = std::stoull(std::string(digits));
    // A live read's cut: a later segment may be half made.
    if (number > log_.o_.cut_segment) continue;
    files_.emplace_back(number, fmt::format("{}/{}", log_.dir_, name));
  }
  std::sort(files_.begin(), files_.end());
  return Status::good();
}

// Opens every segment file and reads its header.
Status Log::Opener::read_headers() {
  for (auto& [number, path] : files_) {
    cands_.push_back(Candidate{number, path, {}, false, -1, 0, false});
    Status st = read_header(cands_.back());
    if (!st.ok()) return st;
    log_.next_number_ = std::max(log_.next_number_, number + 1);
  }
  return Status::good();
}

// A header is valid (a candidate for the chain), or the file is empty or
// its header all zeros (a segment being created when a crash came: free),
// or valid but naming another number (a segment being reused: free).
// Anything else is damage: refusing beats silently dropping a segment's
// entries. A segment gets its whole size before its header, so no crash
// leaves a file that ends inside its header.
Status Log::Opener::read_header(Candidate& c) {
  Io& io = log_.io_;
  c.fd = io.open(c.path, log_.o_.read_only ? O_RDONLY : O_RDWR, 0);
  if (c.fd < 0) return Status::error(fmt::format("cannot open {}: {}", c.path, std::strerror(-c.fd)), -c.fd);
  c.file_size = io.file_size(c.fd);
  uint8_t head[lf::kHeaderBytes] = {};
  if (c.file_size > 0 && c.file_size < lf::kHeaderBytes) {
    return Status::error(fmt::format("the log is damaged: {} is cut short: it ends at byte {}, inside its "
                                     "header; refusing to open",
                                     c.path, c.file_size));
  }
  if (c.file_size >= lf::kHeaderBytes) {
    ssize_t got = io.pread(c.fd, head, sizeof head, 0);
    if (got != lf::kHeaderBytes) {
      int e = got < 0 ? static_cast<int>(-got) : EIO;
      return Status::error(fmt::format("cannot read {}: {}", c.path, std::strerror(e)), e);
    }
  }
  c.blank = all_zero(head, sizeof head);
  if (c.blank) return Status::good();
  std::string why = decode_header(head, c.h);
  if (!why.empty()) {
    return Status::error(
        fmt::format("the log is damaged: {} has an invalid header ({}); refusing to open", c.path, why));
  }
  c.valid = c.h.number == c.number;
  return Status::good();
}

// The chain: back from the newest valid segment through predecessors. A
// segment is allocated whole before its header is written, and never
// shrinks: one of the chain shorter than its header says lost its end to
// damage, not to a crash (whose torn write leaves the file's size alone).
Status Log::Opener::choose_chain() {
  for (size_t i = cands_.size(); i-- > 0;) {
    if (cands_[i].valid) {
      chain_.push_back(i);
      break;
    }
  }
  while (!chain_.empty() && cands_[chain_.back()].h.predecessor != 0) {
    const Candidate& cur = cands_[chain_.back()];
    size_t found = cands_.size();
    for (size_t i = 0; i < cands_.size(); ++i) {
      if (cands_[i].valid && cands_[i].number < cur.number && cands_[i].h.generation == cur.h.predecessor) found = i;
    }
    if (found == cands_.size()) break;
    chain_.push_back(found);
  }
  std::reverse(chain_.begin(), chain_.end());
  std::vector<bool> in_chain(cands_.size(), false);
  for (size_t i : chain_) {
    const Candidate& c = cands_[i];
    if (c.file_size < 0 || static_cast<uint64_t>(c.file_size) < c.h.size) {
      return Status::error(fmt::format("the log is damaged: log-{} is cut short: it ends at byte {}, its header "
                                       "gives it {} bytes; refusing to open",
                                       c.number, c.file_size, c.h.size));
    }
    in_chain[i] = true;
  }
  set_aside(in_chain);
  return Status::good();
}

// Files outside the chain are free space for later segments, except a
// newest one never headed: a segment whose creation a crash interrupted,
// so the entry that needed it was never written. The log ends before it,
// as at a torn entry, and says so (damage that empties the newest segment
// looks the same and must not pass without a word); a writable open
// removes it (cut_tail), so it is said once.
void Log::Opener::set_aside(const std::vector<bool>& in_chain) {
  for (size_t i = 0; i < cands_.size(); ++i) {
    Candidate& c = cands_[i];
    if (in_chain[i]) continue;
    log_.io_.close(c.fd);
    c.fd = -1;
    Free f{c.path, static_cast<uint64_t>(std::max<int64_t>(c.file_size, 0))};
    if (c.blank && (chain_.empty() || c.number > cands_[chain_.back()].number)) {
      report_.torn = true;
      report_.torn_where = fmt::format("log-{} at byte 0: {}, a segment whose creation did not finish", c.number,
                                       c.file_size == 0 ? "an empty file" : "no header");
      if (!log_.o_.read_only) {
        unfinished_ = f;
        continue;
      }
    }
    log_.free_.push_back(f);
  }
}

// Every entry of the chain, in order, until the first that is not valid.
Status Log::Opener::read_entries() {
  for (size_t i : chain_) {
    Candidate& c = cands_[i];
    Segment s;
    s.number = c.number;
    s.generation = c.h.generation;
    s.predecessor = c.h.predecessor;
    s.size = c.h.size;
    s.used = lf::kHeaderBytes;
    s.fd = c.fd;
    c.fd = -1;  // the log's now
    log_.chain_.push_back(s);
    Status st = torn_ ? check_no_later_entries(log_.chain_.back(), c.path)
                      : read_segment(log_.chain_.back(), c.path);
    if (!st.ok()) return st;
    if (cut_) break;
  }
  return Status::good();
}

// The entries of one segment, each handed to the visitor, up to its end
// marker or its first entry that is not valid (judge_bad_entry).
Status Log::Opener::read_segment(Segment& seg, const std::string& path) {
  SegmentReader reader(log_.io_, seg.fd, seg.size, path, buf_);
  for (uint64_t off = lf::kHeaderBytes;; off = seg.used) {
    assert(off % lf::kAlign == 0 && off <= seg.size);  // entries start on 8-byte boundaries, inside the segment
    if (seg.number == log_.o_.cut_segment && off >= log_.o_.cut_end) {
      cut_ = true;
      return Status::good();
    }
    Status st = reader.ensure(off + lf::kEntryHeaderBytes);
    if (!st.ok()) return st;
    if (off + lf::kEntryHeaderBytes > buf_.size()) return Status::good();
    if (all_zero(buf_.data() + off, lf::kEntryHeaderBytes)) return check_end_marker(reader, seg, off);
    uint32_t len = get_u32(buf_.data() + off);
    st = reader.ensure(off + lf::kEntryHeaderBytes + len + lf::kEntryHeaderBytes);
    if (!st.ok()) return st;
    EntryCheck check = check_entry(buf_.data() + off, off, buf_.size(), seg.generation, last_entry());
    if (!check.why.empty()) return judge_bad_entry(reader, seg, off, check);
    st = take_entry(seg, off, len);
    if (!st.ok()) return st;
  }
}

// A valid entry: to the visitor, then the log's position moves past it.
Status Log::Opener::take_entry(Segment& seg, uint64_t off, uint32_t len) {
  const uint8_t* head = buf_.data() + off;
  LogEntry e;
  e.seq = get_u64(head + 8);
  e.term = get_u32(head + 4);
  e.prev_seq = get_u64(head + 16);
  e.digest = get_u64(head + 32);
  e.segment = seg.number;
  e.offset = off;
  e.payload = std::span<const uint8_t>(head + lf::kEntryHeaderBytes, len);
  if (!have_last_) report_.first_prev_seq = e.prev_seq;
  Status v = visit_(e);
  if (!v.ok()) return v;
  have_last_ = true;
  log_.last_seq_ = e.seq;
  log_.last_digest_ = e.digest;
  log_.last_term_ = e.term;
  log_.term_ = e.term;
  if (seg.entries++ == 0) seg.first_seq = e.seq;
  seg.last_seq = e.seq;
  seg.used = off + lf::entry_bytes(len);
  assert(seg.used <= seg.size);  // check_entry refused an entry longer than the rest of the segment
  last_end_ = {seg.number, seg.used};
  ++report_.entries;
  report_.payload_bytes += len;
  return Status::good();
}

// A zero header is the end marker (written after every entry, and by a
// cut or a withdrawal): the log ends here. No valid entry of the live log
// can follow one (a cut is made only when none does, and a withdrawal
// stops the log): if one does, an entry's header was zeroed by damage, and
// what follows it would be dropped unseen. The look is bounded
// (kEndScanBytes past the marker, or what was read already): reading the
// rest of a preallocated segment at every open would cost more than the
// open itself.
Status Log::Opener::check_end_marker(SegmentReader& reader, const Segment& seg, uint64_t off) {
  Status st = reader.ensure(off + kEndScanBytes);
  if (!st.ok()) return st;
  if (valid_entry_after(buf_, off + lf::kAlign, seg.generation, last_entry())) {
    return Status::error(fmt::format("the log is damaged: log-{} at byte {}: a zeroed entry header (an end "
                                     "marker), and valid entries follow it; refusing to open (aup replay "
                                     "--verify shows where)",
                                     seg.number, off));
  }
  return Status::good();
}

// An entry that is not a valid continuation. Whole (its digest matches)
// yet not following the entry before it: damage, since a crash tears an
// entry, it never leaves a whole one after a gap (the entries between are
// lost). Torn: the end of the log, a torn tail, unless a valid entry
// follows it in the rest of its segment (read to the end) or, as
// check_no_later_entries sees, in a later segment.
Status Log::Opener::judge_bad_entry(SegmentReader& reader, const Segment& seg, uint64_t off,
                                    const EntryCheck& check) {
  report_.torn_where = fmt::format("log-{} at byte {}: {}", seg.number, off, check.why);
  if (check.whole) {
    std::string before = have_last_ ? fmt::format(" (the entry before it ends in log-{} at byte {})",
                                                  last_end_.first, last_end_.second)
                                    : std::string();
    return Status::error(fmt::format("the log is damaged: {}{}; refusing to open (aup replay --verify shows where)",
                                     report_.torn_where, before));
  }
  Status st = reader.ensure(seg.size);
  if (!st.ok()) return st;
  if (valid_entry_after(buf_, off + lf::kAlign, seg.generation, last_entry())) {
    return Status::error(fmt::format("the log is damaged: {}, and valid entries follow it; refusing to open (aup "
                                     "replay --verify shows where)",
                                     report_.torn_where));
  }
  report_.torn = true;
  torn_ = true;
  torn_segment_ = log_.chain_.size() - 1;
  return Status::good();
}

// After a torn tail, a later segment of the chain must hold no valid entry.
Status Log::Opener::check_no_later_entries(const Segment& seg, const std::string& path) {
  SegmentReader reader(log_.io_, seg.fd, seg.size, path, buf_);
  if (Status st = reader.ensure(seg.size); !st.ok()) return st;
  if (valid_entry_after(buf_, lf::kHeaderBytes, seg.generation, last_entry())) {
    return Status::error(fmt::format("the log is damaged: {}, yet log-{} holds later entries; refusing to open "
                                     "(aup replay --verify shows where)",
                                     report_.torn_where, seg.number));
  }
  return Status::good();
}

// A writable open's only writes, once the whole log has been read: the
// unfinished newest segment is removed (kept as free space if that
// fails), and a torn tail is cut: an end marker where it began, made
// durable now, so the next open finds a clean end and appends overwrite
// the rest.
Status Log::Opener::cut_tail() {
  Io& io = log_.io_;
  if (unfinished_ && io.unlink(unfinished_->path) != 0) log_.free_.push_back(*unfinished_);
  if (!torn_) return Status::good();
  Status st = empty_after_cut();
  if (!st.ok()) return st;
  const Segment& seg = log_.chain_[torn_segment_];
  st = write_end_marker(seg, seg.used);
  if (!st.ok()) return st;
  drop_after_cut();
  return Status::good();
}

// An end marker at `off` of a segment of the chain, made durable.
Status Log::Opener::write_end_marker(const Segment& seg, uint64_t off) {
  std::string path = log_.path(seg.number);
  uint8_t zeros[lf::kEntryHeaderBytes] = {};
  Status w = write_all(log_.io_, seg.fd, zeros, sizeof zeros, off, path);
  if (!w.ok()) return w;
  if (int rc = log_.io_.fdatasync(seg.fd); rc < 0) {
    return Status::error(fmt::format("cannot sync {}: {}", path, std::strerror(-rc)), -rc);
  }
  return Status::good();
}

// Segments of the chain after the torn one hold no valid entry
// (check_no_later_entries), but they may hold bytes that read as a whole
// entry of their generation that does not continue the log (a save number
// not after its predecessor, say). Behind the torn tail these are only
// checked; once the cut's end marker makes the log end cleanly, the next
// open reads on into them and would take them for damage. So each gets an
// end marker at its first entry before the cut is made: a crash between
// leaves the torn tail in front of them, and the same open again.
Status Log::Opener::empty_after_cut() {
  for (size_t i = torn_segment_ + 1; i < log_.chain_.size(); ++i) {
    Status st = write_end_marker(log_.chain_[i], lf::kHeaderBytes);
    if (!st.ok()) return st;
  }
  return Status::good();
}

// The segments after the torn one, emptied, leave the chain in memory:
// appends go on after the cut, and a segment started when an entry does
// not fit must follow the torn segment, not the bytes of these. They are
// free space; a new segment's number is past theirs, so the chain found
// at the next open (the highest-numbered headed segment and its
// predecessors) no longer passes through them; until one is started, it
// does, and finds them empty.
void Log::Opener::drop_after_cut() {
  while (log_.chain_.size() > torn_segment_ + 1) {
    Segment& later = log_.chain_.back();
    assert(later.entries == 0);  // check_no_later_entries found none
    log_.io_.close(later.fd);
    log_.free_.push_back(Free{log_.path(later.number), later.size});
    log_.chain_.pop_back();
  }
}

Status Log::open(Io& io, const std::string& dir, Options o, const Visitor& visit, std::unique_ptr<Log>& out,
                 LogOpenReport& report) {
  std::unique_ptr<Log> log(new Log(io, dir, o));
  Opener opener(*log, visit, report);
  Status st = opener.list_segments();
  if (st.ok()) st = opener.read_headers();
  if (st.ok()) st = opener.choose_chain();
  if (st.ok()) st = opener.read_entries();
  if (st.ok() && !o.read_only) st = opener.cut_tail();
  if (!st.ok()) return st;
  report.segments = log->chain_.size();
  out = std::move(log);
  return Status::good();
}

Status Log::write_header(const Segment& s) {
  uint8_t head[lf::kHeaderBytes];
  encode_header(SegmentHeader{s.number, s.generation, s.predecessor, s.size}, head);
  // The end marker right after it: a fresh or reused file reads as empty.
  uint8_t block[lf::kHeaderBytes + lf::kEntryHeaderBytes] = {};
  std::memcpy(block, head, sizeof head);
  return write_all(io_, s.fd, block, sizeof block, 0, path(s.number));
}

// A segment all of whose entries images cover, renamed to be segment `s`,
// not re-created, so no block allocation; its stale bytes fail the new
// generation.
Status Log::reuse_segment(Segment& s, const Free& f, const std::string& p) {
  io_.point("log.before_reuse");
  if (int rc = io_.rename(f.path, p); rc < 0) {
    broken_ = true;
    return Status::error(fmt::format("cannot rename {} to {}: {}", f.path, p, std::strerror(-rc)), -rc);
  }
  s.size = f.size;
  s.fd = io_.open(p, O_RDWR, 0);
  if (s.fd < 0) {
    broken_ = true;
    return Status::error(fmt::format("cannot open {}: {}", p, std::strerror(-s.fd)), -s.fd);
  }
  return Status::good();
}

namespace {

// A size as messages give it: "64 MiB", "1.5 MiB", "75.7 GiB", "4096 bytes".
std::string size_words(uint64_t bytes) {
  constexpr uint64_t kMiB = uint64_t{1} << 20, kGiB = uint64_t{1} << 30;
  auto in = [&](uint64_t unit) { return static_cast<double>(bytes) / static_cast<double>(unit); };
  if (bytes % kMiB == 0 && bytes > 0 && bytes < 64 * kGiB) return fmt::format("{} MiB", bytes / kMiB);
  if (bytes >= kGiB) return fmt::format("{:.1f} GiB", in(kGiB));
  if (bytes >= kMiB) return fmt::format("{:.1f} MiB", in(kMiB));
  return fmt::format("{} bytes", bytes);
}

}  // namespace

// `left`: whether a file is left under the segment's name after a failure
// (then the next attempt takes the next number).
Status Log::create_segment(Segment& s, uint64_t size, const std::string& p, bool& left) {
  s.size = size;
  s.fd = io_.open(p, O_RDWR | O_CREAT | O_EXCL, 0644);
  if (s.fd < 0) {
    left = s.fd == -EEXIST;  // not ours: a file no listing saw (made by hand since the open)
    return Status::error(fmt::format("cannot create {}: {}", p, std::strerror(-s.fd)), -s.fd);
  }
  if (int rc = io_.fallocate(s.fd, 0, static_cast<off_t>(size)); rc < 0) {
    // Nothing of the log changed: a clean refusal, later appends retry.
    io_.close(s.fd);
    s.fd = -1;
    left = io_.unlink(p) < 0;
    bool full = rc == -ENOSPC || rc == -EDQUOT;
    if (!full) {
      return Status::error(
          fmt::format("cannot allocate space for a new log segment {} of {}: {}", p, size_words(size),
                      std::strerror(-rc)),
          -rc);
    }
    // What a small volume needs said: how big, how much there is, and the
    // flag that makes segments smaller (docs/operations.md, "Small disks").
    uint64_t avail = 0;
    std::string free_words =
        io_.free_space(dir_, avail) < 0 ? std::string() : fmt::format(", {} free", size_words(avail));
    // A batch larger than a segment gets one of its own size: smaller
    // segments would not help it.
    std::string what = size > o_.segment_bytes
                           ? "free space (this batch's entry needs a segment of its own of that size)"
                           : "free space, or start aup run with a smaller --segment-size (at least 4096 bytes; "
                             "docs/operations.md, \"Small disks\")";
    return Status::error(fmt::format("no space for a new log segment {} of {}{}: {}; {}", p, size_words(size),
                                     free_words, std::strerror(-rc), what),
                         -rc);
  }
  return Status::good();
}

// A segment's number is taken only when the segment is: a failed attempt
// leaves nothing under its name (never created, or removed), and nothing
// else knows it (the chain, the live mark and the next open see only
// headed segments), so the next attempt takes the same number. Repeated
// refusals on a full disk do not use numbers up.
Status Log::start_segment(uint64_t min_size) {
  uint64_t size = std::max(o_.segment_bytes, (min_size + 4095) / 4096 * 4096);
  Segment s;
  s.number = next_number_;
  s.generation = random_generation();
  s.predecessor = chain_.empty() ? 0 : chain_.back().generation;
  s.used = lf::kHeaderBytes;
  std::string p = path(s.number);
  auto reuse = std::find_if(free_.begin(), free_.end(), [&](const Free& f) { return f.size >= size; });
  // Reusing rewrites a file that a reader of the served store may be
  // reading (storage/live.h): only while none reads; else a new segment.
  bool gated = reuse != free_.end() && gate_ != nullptr;
  if (gated && !gate_->keep_out()) reuse = free_.end(), gated = false;
  Status st = Status::good();
  bool left = false;
  if (reuse != free_.end()) {
    st = reuse_segment(s, *reuse, p);
    left = true;  // renamed, or broken (a failure here stops the log's writes)
    if (s.fd >= 0) free_.erase(reuse);  // renamed: no longer free
  } else {
    st = create_segment(s, size, p, left);
  }
  if (st.ok()) st = write_header(s);
  if (gated) gate_->let_in();
  if (st.ok() || left || s.fd >= 0) ++next_number_;
  if (!st.ok()) {
    if (s.fd >= 0) drop_unheaded(s, p);
    return st;
  }
  chain_.push_back(s);
  dir_sync_ = true;
  return Status::good();
}

// The header of a new segment failed: part of it may be written (a short
// write, then an error), which would read as damage at the next open, and
// the store would not open. Zeroed (or, failing that, removed), the file is
// free space.
void Log::drop_unheaded(Segment& s, const std::string& p) {
  uint8_t zeros[lf::kHeaderBytes] = {};
  if (!write_all(io_, s.fd, zeros, sizeof zeros, 0, p).ok() || io_.fdatasync(s.fd) < 0) io_.unlink(p);
  broken_ = true;
  io_.close(s.fd);
}

std::vector<uint8_t>& Log::begin_entry() {
  assert(!o_.read_only);
  // The header's bytes, zero until append_entry() fills them.
  buf_.assign(lf::kEntryHeaderBytes, 0);
  entry_begun_ = true;
  return buf_;
}

Status Log::append(uint64_t seq, std::span<const uint8_t> payload) {
  std::vector<uint8_t>& entry = begin_entry();
  entry.insert(entry.end(), payload.begin(), payload.end());
  return append_entry(seq);
}

Status Log::append_entry(uint64_t seq) {
  assert(!o_.read_only);
  // Begun once and appended once: a second append of one buffer would
  // write the entry twice, under two save numbers.
  assert(entry_begun_ && buf_.size() >= lf::kEntryHeaderBytes);
  assert(all_zero(buf_.data(), lf::kEntryHeaderBytes));  // the writer kept off the header
  entry_begun_ = false;
  if (broken_) return Status::error("the log refuses writes after an earlier failure (restart to recover)");
  // Save numbers only grow (recovery orders and chains entries by them), and
  // one entry at a time awaits its sync (withdraw() zeroes only the last),
  // but in a run of a replica's copies (allow_runs).
  assert(seq > last_seq_ && (!pending_sync_ || runs_));
  uint64_t payload = buf_.size() - lf::kEntryHeaderBytes;
  if (payload > lf::kMaxPayloadBytes) return Status::error("a batch's changes exceed 2 GiB");
  uint64_t need = lf::entry_bytes(payload);
  if (chain_.empty() || chain_.back().used + need > chain_.back().size) {
    // sync() syncs the newest segment: what a run left in this one first.
    Status st = pending_sync_ ? sync() : Status::good();
    if (st.ok()) st = start_segment(lf::kHeaderBytes + need + lf::kEntryHeaderBytes);
    if (!st.ok()) return st;
  }
  Segment& s = chain_.back();
  assert(s.used % lf::kAlign == 0 && s.used + need <= s.size);
  // The entry, then an end marker when it fits: a later open finds a clean
  // end instead of stale bytes. The padding and the marker are the zeros
  // resize() adds.
  bool marker = s.used + need + lf::kEntryHeaderBytes <= s.size;
  buf_.resize(need + (marker ? lf::kEntryHeaderBytes : 0), 0);
  uint8_t* head = buf_.data();
  put_u32(head, static_cast<uint32_t>(payload));
  put_u32(head + 4, term_);
  put_u64(head + 8, seq);
  put_u64(head + 16, last_seq_);
  put_u64(head + 24, last_digest_);
  uint64_t digest = entry_digest(s.generation, head, head + lf::kEntryHeaderBytes, payload);
  put_u64(head + 32, digest);
  // What recovery will check, checked before it reaches the disk: the
  // entry chains to the last, its term is not lower, it ends on an 8-byte
  // boundary inside its segment, and its padding and marker are zero.
  assert(get_u64(head + 16) == last_seq_ && get_u64(head + 24) == last_digest_ && term_ >= last_term_);
  assert(need % lf::kAlign == 0 && need >= lf::kEntryHeaderBytes + payload &&
         need - lf::kEntryHeaderBytes - payload < lf::kAlign && entry_fits(s.used, static_cast<uint32_t>(payload), s.size));
  assert(all_zero(head + lf::kEntryHeaderBytes + payload, buf_.size() - lf::kEntryHeaderBytes - payload));
  return write_entry(s, seq, digest, need);
}

// The entry in buf_ (`need` bytes, then perhaps its end marker) written at
// the end of segment `s`, and the log moved past it.
Status Log::write_entry(Segment& s, uint64_t seq, uint64_t digest, uint64_t need) {
  unsynced_ = Unsynced{s.fd, s.used, path(s.number)};
  io_.point("log.before_write");
  Status st = write_all(io_, s.fd, buf_.data(), buf_.size(), s.used, unsynced_.path);
  if (!st.ok()) {
    broken_ = true;
    return st;
  }
  io_.point("log.after_write");
  if (s.entries++ == 0) s.first_seq = seq;
  s.last_seq = seq;
  s.used += need;
  last_seq_ = seq;
  last_digest_ = digest;
  last_term_ = term_;
  pending_sync_ = true;
  return Status::good();
}

Status Log::sync() {
  if (broken_) return Status::error("the log refuses writes after an earlier failure (restart to recover)");
  if (!pending_sync_ && !dir_sync_) return Status::good();
  Segment& s = chain_.back();
  if (int rc = io_.fdatasync(s.fd); rc < 0) {
    // Whether the data reached the device is unknown: never carry on.
    broken_ = true;
    return Status::error(fmt::format("cannot sync {}: {}", path(s.number), std::strerror(-rc)), -rc);
  }
  io_.point("log.after_sync");
  if (dir_sync_) {
    if (Status st = sync_directory(io_, dir_); !st.ok()) {
      broken_ = true;
      return st;
    }
    io_.point("log.after_dir_sync");
    dir_sync_ = false;
  }
  pending_sync_ = false;
  unsynced_ = Unsynced{};
  return Status::good();
}

Status Log::withdraw() {
  assert(broken_);
  if (unsynced_.fd < 0) return Status::good();  // nothing was being written
  uint8_t zeros[lf::kEntryHeaderBytes] = {};
  Status st = write_all(io_, unsynced_.fd, zeros, sizeof zeros, unsynced_.offset, unsynced_.path);
  if (!st.ok()) return st;
  if (int rc = io_.fdatasync(unsynced_.fd); rc < 0) {
    return Status::error(fmt::format("cannot sync {}: {}", unsynced_.path, std::strerror(-rc)), -rc);
  }
  unsynced_ = Unsynced{};
  return Status::good();
}

uint64_t Log::live_bytes() const {
  uint64_t n = 0;
  for (const Segment& s : chain_) n += s.used - lf::kHeaderBytes;
  return n;
}

void Log::release_through(uint64_t seq) {
  while (chain_.size() > 1 && chain_.front().last_seq <= seq) {
    Segment s = chain_.front();
    // Never the segment being appended to, nor one with an entry awaiting
    // its sync (it is the current one), nor an entry after `seq`.
    assert(s.fd != chain_.back().fd && s.fd != unsynced_.fd && s.last_seq <= seq);
    chain_.erase(chain_.begin());
    io_.close(s.fd);
    if (free_.size() < o_.max_free_segments) {
      free_.push_back(Free{path(s.number), s.size});
    } else {
      io_.unlink(path(s.number));
    }
  }
}

// ---- following a served log --------------------------------------------------------------

Status Log::follow(uint64_t cut_segment, uint64_t cut_end, const Visitor& visit) {
  assert(o_.read_only);
  for (;;) {
    if (chain_.empty() || chain_.back().number < cut_segment) {
      // The cut is in a later segment: this one's entries first, then on.
      if (!chain_.empty()) {
        Status st = follow_segment(chain_.back(), chain_.back().size, visit);
        if (!st.ok()) return st;
      }
      Status st = open_successor(cut_segment);
      if (!st.ok()) return st;
      continue;
    }
    if (chain_.back().number > cut_segment) {
      return Status::error(fmt::format("the log's cut moved back, to log-{} from log-{}", cut_segment,
                                       chain_.back().number));
    }
    return follow_segment(chain_.back(), cut_end, visit);
  }
}

// The segment that continues the chain (its predecessor is the last
// one's generation; with none, the first segment of a store), numbered at
// most `cut_segment`: the lowest such. Earlier segments are closed.
Status Log::open_successor(uint64_t cut_segment) {
  uint64_t after = chain_.empty() ? 0 : chain_.back().number + 1;
  uint64_t predecessor = chain_.empty() ? 0 : chain_.back().generation;
  std::vector<std::string> names;
  if (int rc = io_.list_dir(dir_, names); rc < 0) {
    return Status::error(fmt::format("cannot list {}: {}", dir_, std::strerror(-rc)), -rc);
  }
  std::vector<uint64_t> numbers;
  for (const std::string& name : names) {
    if (name.size() < 5 || name.compare(0, 4, "log-") != 0 || name.size() > 22) continue;
    if (!std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    uint64_t n = std::stoull(name.substr(4));
    if (n >= after && n <= cut_segment) numbers.push_back(n);
  }
  std::sort(numbers.begin(), numbers.end());
  for (uint64_t n : numbers) {
    std::string p = path(n);
    int fd = io_.open(p, O_RDONLY, 0);
    if (fd < 0) continue;  // released meanwhile: not the successor
    uint8_t head[lf::kHeaderBytes] = {};
    SegmentHeader h;
    if (io_.pread(fd, head, sizeof head, 0) != lf::kHeaderBytes || !decode_header(head, h).empty() ||
        h.number != n || h.predecessor != predecessor) {
      io_.close(fd);
      continue;
    }
    for (Segment& old : chain_) io_.close(old.fd);
    chain_.clear();
    Segment s;
    s.number = n;
    s.generation = h.generation;
    s.predecessor = h.predecessor;
    s.size = h.size;
    s.used = lf::kHeaderBytes;
    s.fd = fd;
    chain_.push_back(s);
    return Status::good();
  }
  return Status::error(fmt::format("the log no longer continues after save {}: no segment up to log-{} follows "
                                   "the last one read",
                                   last_seq_, cut_segment));
}

// The entries of segment `s` from s.used up to byte `limit` (the cut, or
// the segment's end), read in large pieces; an end marker ends them.
Status Log::follow_segment(Segment& s, uint64_t limit, const Visitor& visit) {
  constexpr uint64_t kPiece = uint64_t{1} << 20;
  const std::string p = path(s.number);
  uint64_t base = s.used;  // buf_ holds the segment's bytes from here
  buf_.clear();
  // Bytes [s.used, to) of the segment in buf_ (fewer at `limit`).
  auto ensure = [&](uint64_t to) -> Status {
    to = std::min(to, limit);
    if (base <= s.used && base + buf_.size() >= to) return Status::good();
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(s.used - base));
    base = s.used;
    size_t have = buf_.size();
    buf_.resize(std::min(limit, std::max(to, base + kPiece)) - base);
    size_t got = 0;
    Status st = read_at(io_, s.fd, buf_.data() + have, buf_.size() - have, base + have, p, got);
    buf_.resize(have + got);
    return st;
  };
  while (s.used + lf::kEntryHeaderBytes <= limit) {
    Status st = ensure(s.used + lf::kEntryHeaderBytes);
    if (!st.ok()) return st;
    if (base + buf_.size() < s.used + lf::kEntryHeaderBytes) break;  // the file is shorter: no more entries
    const uint8_t* head = buf_.data() + (s.used - base);
    if (all_zero(head, lf::kEntryHeaderBytes)) break;
    st = ensure(s.used + lf::entry_bytes(get_u32(head)));
    if (!st.ok()) return st;
    head = buf_.data() + (s.used - base);
    EntryCheck check = check_entry(head, s.used, base + buf_.size(), s.generation,
                                   LastEntry{last_seq_ > 0, last_seq_, last_digest_, last_term_});
    if (!check.why.empty()) {
      return Status::error(fmt::format("the log is damaged: log-{} at byte {}: {} (read while it was served)",
                                       s.number, s.used, check.why));
    }
    uint32_t len = get_u32(head);
    LogEntry e;
    e.seq = get_u64(head + 8);
    e.term = get_u32(head + 4);
    e.prev_seq = get_u64(head + 16);
    e.digest = get_u64(head + 32);
    e.segment = s.number;
    e.offset = s.used;
    e.payload = std::span<const uint8_t>(head + lf::kEntryHeaderBytes, len);
    st = visit(e);
    if (!st.ok()) return st;
    last_seq_ = e.seq;
    last_digest_ = e.digest;
    last_term_ = term_ = e.term;
    if (s.entries++ == 0) s.first_seq = e.seq;
    s.last_seq = e.seq;
    s.used += lf::entry_bytes(len);
  }
  return Status::good();
}

}  // namespace aup::storage

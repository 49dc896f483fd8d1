#include "storage/log.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <random>

namespace aup::storage {

namespace lf = log_format;

namespace {

void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{p[i]} << (8 * i);
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

struct Header {
  uint64_t number = 0;
  uint64_t generation = 0;
  uint64_t predecessor = 0;
  uint64_t size = 0;
};

void encode_header(const Header& h, uint8_t* p) {
  std::memset(p, 0, lf::kHeaderBytes);
  std::memcpy(p, lf::kMagic, 8);
  put32(p + 8, lf::kVersion);
  put32(p + 12, lf::kHeaderBytes);
  put64(p + 16, h.number);
  put64(p + 24, h.generation);
  put64(p + 32, h.predecessor);
  put64(p + 40, h.size);
  put64(p + 56, XXH3_64bits(p, 56));
}

// Why a header is not a valid segment header (naming the byte), or "".
std::string decode_header(const uint8_t* p, Header& h) {
  if (std::memcmp(p, lf::kMagic, 8) != 0) return "no log magic at byte 0";
  if (get32(p + 8) != lf::kVersion) {
    return fmt::format("format version {} at byte 8, this aup reads {}", get32(p + 8), lf::kVersion);
  }
  if (get32(p + 12) != lf::kHeaderBytes) return fmt::format("header size {} at byte 12", get32(p + 12));
  if (get64(p + 56) != XXH3_64bits(p, 56)) return "the header checksum at byte 56 does not match bytes 0..55";
  h.number = get64(p + 16);
  h.generation = get64(p + 24);
  h.predecessor = get64(p + 32);
  h.size = get64(p + 40);
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
EntryCheck check_entry(const std::vector<uint8_t>& buf, uint64_t off, uint64_t generation, bool have_last,
                       uint64_t last_seq, uint64_t last_digest) {
  const uint8_t* head = buf.data() + off;
  uint64_t room = buf.size() - off - lf::kEntryHeaderBytes;
  uint32_t len = get32(head);
  if (len > room || len > lf::kMaxPayloadBytes) return {"entry longer than the segment (incomplete)", false};
  if (entry_digest(generation, head, head + lf::kEntryHeaderBytes, len) != get64(head + 32)) {
    return {"digest mismatch", false};
  }
  uint64_t seq = get64(head + 8), prev = get64(head + 16);
  if (seq <= prev) return {"save number not after its predecessor", true};
  if (have_last && (prev != last_seq || get64(head + 24) != last_digest)) {
    return {"does not chain to the entry before it", true};
  }
  return {"", true};
}

// Whether a valid entry of this generation that could continue a log
// whose last valid entry has save number `after` starts anywhere at or
// after `from` (8-byte steps). Such an entry has zero reserved bytes and
// a predecessor at or past `after`: stale entries of a reused segment
// (older save numbers) and nearly every position inside a payload fail
// those tests before any digest is computed, so a scan costs about a read
// of the bytes, not a digest of the rest of the segment at each position.
bool valid_entry_after(const std::vector<uint8_t>& buf, uint64_t from, uint64_t generation, uint64_t after) {
  for (uint64_t p = (from + lf::kAlign - 1) / lf::kAlign * lf::kAlign;
       p + lf::kEntryHeaderBytes <= buf.size(); p += lf::kAlign) {
    const uint8_t* head = buf.data() + p;
    uint32_t len = get32(head);
    if (len == 0 || len > buf.size() - p - lf::kEntryHeaderBytes || get32(head + 4) != 0) continue;
    uint64_t seq = get64(head + 8), prev = get64(head + 16);
    if (seq <= prev || prev < after) continue;
    if (entry_digest(generation, head, head + lf::kEntryHeaderBytes, len) == get64(head + 32)) return true;
  }
  return false;
}

// How far past an end marker open looks for valid entries.
constexpr uint64_t kEndScanBytes = uint64_t{1} << 20;

Status read_all(Io& io, int fd, uint64_t size, std::vector<uint8_t>& out, const std::string& path) {
  out.assign(size, 0);
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = io.pread(fd, out.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0) return Status::error(fmt::format("cannot read {}: {}", path, std::strerror(static_cast<int>(-n))), static_cast<int>(-n));
    if (n == 0) break;  // shorter than its header says: the rest reads as zeros
    done += static_cast<uint64_t>(n);
  }
  return Status::good();
}

// A segment read from its start as far as open needs it: a preallocated
// segment is mostly unused, and reading all 64 MiB of it would make every
// open slow. `buf` always holds exactly the bytes read so far.
class SegmentReader {
 public:
  SegmentReader(Io& io, int fd, uint64_t size, const std::string& path, std::vector<uint8_t>& buf)
      : io_(io), fd_(fd), size_(size), path_(path), buf_(buf) {
    buf_.clear();
  }
  // Reads at least the first n bytes (fewer only at the end of the segment),
  // in growing steps so a long log is not read in small pieces.
  Status ensure(uint64_t n) {
    if (n <= buf_.size() || buf_.size() >= size_) return Status::good();
    uint64_t want = std::min(size_, std::max({n, 2 * static_cast<uint64_t>(buf_.size()), kFirstRead}));
    size_t done = buf_.size();
    buf_.resize(want, 0);
    while (done < want) {
      ssize_t got = io_.pread(fd_, buf_.data() + done, want - done, static_cast<off_t>(done));
      if (got < 0) {
        return Status::error(fmt::format("cannot read {}: {}", path_, std::strerror(static_cast<int>(-got))),
                             static_cast<int>(-got));
      }
      if (got == 0) break;  // shorter than its header says: the rest reads as zeros
      done += static_cast<size_t>(got);
    }
    return Status::good();
  }

 private:
  static constexpr uint64_t kFirstRead = uint64_t{1} << 20;
  Io& io_;
  int fd_;
  uint64_t size_;
  const std::string& path_;
  std::vector<uint8_t>& buf_;
};

Status write_all(Io& io, int fd, const uint8_t* p, size_t n, uint64_t at, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = io.pwrite(fd, p + done, n - done, static_cast<off_t>(at + done));
    if (w <= 0) {
      int e = w < 0 ? static_cast<int>(-w) : EIO;
      return Status::error(fmt::format("cannot write {}: {}", path, std::strerror(e)), e);
    }
    done += static_cast<size_t>(w);
  }
  return Status::good();
}

}  // namespace

std::string Log::path(uint64_t number) const { return fmt::format("{}/log-{}", dir_, number); }

Log::~Log() {
  for (Segment& s : chain_) {
    if (s.fd >= 0) io_.close(s.fd);
  }
}

Status Log::open(Io& io, const std::string& dir, Options o, const Visitor& visit, std::unique_ptr<Log>& out,
                 LogOpenReport& report) {
  std::unique_ptr<Log> log(new Log(io, dir, o));
  // The segment files present, by number.
  std::vector<std::pair<uint64_t, std::string>> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string_view name = e->d_name;
      if (name.size() < 5 || name.substr(0, 4) != "log-") continue;
      std::string_view digits = name.substr(4);
      if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
      if (digits.size() > 18) continue;
      files.emplace_back(std::stoull(std::string(digits)), fmt::format("{}/{}", dir, name));
    }
    closedir(d);
  } else {
    return Status::error(fmt::format("cannot list {}: {}", dir, std::strerror(errno)), errno);
  }
  std::sort(files.begin(), files.end());

  struct Candidate {
    uint64_t number;
    std::string path;
    Header h;
    bool valid = false;
    int fd = -1;
    int64_t file_size = 0;
    bool blank = false;  // empty, or its header all zeros: never headed
  };
  std::vector<Candidate> cands;
  auto close_all = [&] {
    for (Candidate& c : cands) {
      if (c.fd >= 0) io.close(c.fd);
    }
  };
  for (auto& [number, p] : files) {
    Candidate c{number, p, {}, false, -1, 0, false};
    c.fd = io.open(p, o.read_only ? O_RDONLY : O_RDWR, 0);
    if (c.fd < 0) {
      close_all();
      return Status::error(fmt::format("cannot open {}: {}", p, std::strerror(-c.fd)), -c.fd);
    }
    c.file_size = io.file_size(c.fd);
    cands.push_back(c);
    // A header is valid (a candidate for the chain), or the file is empty or
    // its header all zeros (a segment being created when a crash came:
    // free), or valid but naming another number (a segment being reused:
    // free). Anything else is damage: refusing beats silently dropping a
    // segment's entries. A segment gets its whole size before its header,
    // so no crash leaves a file that ends inside its header.
    uint8_t head[lf::kHeaderBytes] = {};
    if (c.file_size > 0 && c.file_size < lf::kHeaderBytes) {
      close_all();
      return Status::error(fmt::format("the log is damaged: {} is cut short: it ends at byte {}, inside its "
                                       "header; refusing to open",
                                       p, c.file_size));
    }
    if (c.file_size >= lf::kHeaderBytes) {
      ssize_t got = io.pread(c.fd, head, sizeof head, 0);
      if (got != lf::kHeaderBytes) {
        close_all();
        int e = got < 0 ? static_cast<int>(-got) : EIO;
        return Status::error(fmt::format("cannot read {}: {}", p, std::strerror(e)), e);
      }
    }
    cands.back().blank = all_zero(head, sizeof head);
    if (!cands.back().blank) {
      std::string why = decode_header(head, cands.back().h);
      if (!why.empty()) {
        close_all();
        return Status::error(
            fmt::format("the log is damaged: {} has an invalid header ({}); refusing to open", p, why));
      }
      cands.back().valid = cands.back().h.number == number;
    }
    log->next_number_ = std::max(log->next_number_, number + 1);
  }

  // The chain: back from the newest valid segment through predecessors.
  std::vector<size_t> chain;
  for (size_t i = cands.size(); i-- > 0;) {
    if (cands[i].valid) {
      chain.push_back(i);
      break;
    }
  }
  while (!chain.empty() && cands[chain.back()].h.predecessor != 0) {
    const Candidate& cur = cands[chain.back()];
    size_t found = cands.size();
    for (size_t i = 0; i < cands.size(); ++i) {
      if (cands[i].valid && cands[i].number < cur.number && cands[i].h.generation == cur.h.predecessor) found = i;
    }
    if (found == cands.size()) break;
    chain.push_back(found);
  }
  std::reverse(chain.begin(), chain.end());
  // A segment is allocated whole before its header is written, and never
  // shrinks: one shorter than its header says lost its end to damage, not
  // to a crash (whose torn write leaves the file's size alone).
  for (size_t i : chain) {
    if (cands[i].file_size < 0 || static_cast<uint64_t>(cands[i].file_size) < cands[i].h.size) {
      std::string msg = fmt::format("the log is damaged: log-{} is cut short: it ends at byte {}, its header "
                                    "gives it {} bytes; refusing to open",
                                    cands[i].number, cands[i].file_size, cands[i].h.size);
      close_all();
      return Status::error(msg);
    }
  }
  std::vector<bool> in_chain(cands.size(), false);
  for (size_t i : chain) in_chain[i] = true;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (in_chain[i]) continue;
    io.close(cands[i].fd);
    // Never headed and after the newest segment: a segment whose creation a
    // crash interrupted, so the entry that needed it was never written.
    // The log ends before it, as at a torn entry, and says so (damage that
    // empties the newest segment looks the same and must not pass without
    // a word); a writable open removes it, so it is said once.
    if (cands[i].blank && (chain.empty() || cands[i].number > cands[chain.back()].number)) {
      report.torn = true;
      report.torn_where = fmt::format("log-{} at byte 0: {}, a segment whose creation did not finish", cands[i].number,
                                      cands[i].file_size == 0 ? "an empty file" : "no header");
      if (!o.read_only && io.unlink(cands[i].path) == 0) continue;
    }
    log->free_.push_back(Free{cands[i].path, static_cast<uint64_t>(std::max<int64_t>(cands[i].file_size, 0))});
  }

  // Every entry, in order, until the first that is not valid.
  bool have_last = false;
  bool stopped = false;
  std::pair<uint64_t, uint64_t> last_end{0, 0};  // segment and byte where the last valid entry ends
  std::vector<uint8_t> buf;
  for (size_t k = 0; k < chain.size(); ++k) {
    Candidate& c = cands[chain[k]];
    Segment s;
    s.number = c.number;
    s.generation = c.h.generation;
    s.predecessor = c.h.predecessor;
    s.size = c.h.size;
    s.used = lf::kHeaderBytes;
    s.fd = c.fd;
    log->chain_.push_back(s);
    Segment& seg = log->chain_.back();
    if (stopped) {
      // After a torn tail, a later segment must hold no valid entry.
      Status st = read_all(io, c.fd, c.h.size, buf, c.path);
      if (!st.ok()) return st;
      if (valid_entry_after(buf, lf::kHeaderBytes, c.h.generation, log->last_seq_)) {
        return Status::error(fmt::format("the log is damaged: {}, yet log-{} holds later entries; "
                                         "refusing to open (aup replay --verify shows where)",
                                         report.torn_where, c.number));
      }
      continue;
    }
    SegmentReader reader(io, c.fd, c.h.size, c.path, buf);
    uint64_t off = lf::kHeaderBytes;
    for (;;) {
      Status st = reader.ensure(off + lf::kEntryHeaderBytes);
      if (!st.ok()) return st;
      if (off + lf::kEntryHeaderBytes > buf.size()) break;
      // A zero header is the end marker (written after every entry, and by
      // a cut or a withdrawal): the log ends here. No valid entry of the
      // live log can follow one (a cut is made only when none does, and a
      // withdrawal stops the log): if one does, an entry's header was
      // zeroed by damage, and what follows it would be dropped unseen. The
      // look is bounded (kEndScanBytes past the marker, or what was read
      // already): reading the rest of a preallocated segment at every open
      // would cost more than the open itself.
      if (all_zero(buf.data() + off, lf::kEntryHeaderBytes)) {
        st = reader.ensure(off + kEndScanBytes);
        if (!st.ok()) return st;
        if (valid_entry_after(buf, off + lf::kAlign, c.h.generation, log->last_seq_)) {
          return Status::error(fmt::format("the log is damaged: log-{} at byte {}: a zeroed entry header (an end "
                                           "marker), and valid entries follow it; refusing to open (aup replay "
                                           "--verify shows where)",
                                           c.number, off));
        }
        break;
      }
      uint64_t len = get32(buf.data() + off);
      st = reader.ensure(off + lf::kEntryHeaderBytes + len + lf::kEntryHeaderBytes);
      if (!st.ok()) return st;
      const uint8_t* head = buf.data() + off;
      EntryCheck check = check_entry(buf, off, c.h.generation, have_last, log->last_seq_, log->last_digest_);
      if (!check.why.empty()) {
        report.torn_where = fmt::format("log-{} at byte {}: {}", c.number, off, check.why);
        if (check.whole) {
          // Written whole by this segment's generation, yet not following
          // the entry read before it: a crash tears an entry, it never
          // leaves a whole one after a gap. Entries before it are lost.
          std::string before = have_last ? fmt::format(" (the entry before it ends in log-{} at byte {})",
                                                       last_end.first, last_end.second)
                                         : std::string();
          return Status::error(fmt::format("the log is damaged: {}{}; refusing to open (aup replay --verify "
                                           "shows where)",
                                           report.torn_where, before));
        }
        st = reader.ensure(c.h.size);  // damage, unless nothing valid follows
        if (!st.ok()) return st;
        if (valid_entry_after(buf, off + lf::kAlign, c.h.generation, log->last_seq_)) {
          return Status::error(fmt::format("the log is damaged: {}, and valid entries follow it; "
                                           "refusing to open (aup replay --verify shows where)",
                                           report.torn_where));
        }
        stopped = true;
        break;
      }
      LogEntry e;
      e.seq = get64(head + 8);
      e.prev_seq = get64(head + 16);
      e.digest = get64(head + 32);
      e.segment = c.number;
      e.offset = off;
      e.payload = std::span<const uint8_t>(head + lf::kEntryHeaderBytes, len);
      if (!have_last) report.first_prev_seq = e.prev_seq;
      Status v = visit(e);
      if (!v.ok()) return v;
      have_last = true;
      log->last_seq_ = e.seq;
      log->last_digest_ = e.digest;
      if (seg.entries++ == 0) seg.first_seq = e.seq;
      seg.last_seq = e.seq;
      off += lf::entry_bytes(len);
      seg.used = off;
      last_end = {c.number, off};
      ++report.entries;
      report.payload_bytes += len;
    }
    if (stopped && o.read_only) report.torn = true;
    if (stopped && !o.read_only) {
      // Cut the torn tail: an end marker where it began, made durable now,
      // so the next open finds a clean end and appends overwrite the rest.
      report.torn = true;
      uint8_t zeros[lf::kEntryHeaderBytes] = {};
      Status w = write_all(io, c.fd, zeros, sizeof zeros, seg.used, c.path);
      if (!w.ok()) return w;
      if (int rc = io.fdatasync(c.fd); rc < 0) {
        return Status::error(fmt::format("cannot sync {}: {}", c.path, std::strerror(-rc)), -rc);
      }
    }
  }
  report.segments = log->chain_.size();
  out = std::move(log);
  return Status::good();
}

Status Log::write_header(const Segment& s) {
  uint8_t head[lf::kHeaderBytes];
  encode_header(Header{s.number, s.generation, s.predecessor, s.size}, head);
  // The end marker right after it: a fresh or reused file reads as empty.
  uint8_t block[lf::kHeaderBytes + lf::kEntryHeaderBytes] = {};
  std::memcpy(block, head, sizeof head);
  return write_all(io_, s.fd, block, sizeof block, 0, path(s.number));
}

Status Log::start_segment(uint64_t min_size) {
  uint64_t size = std::max(o_.segment_bytes, (min_size + 4095) / 4096 * 4096);
  Segment s;
  s.number = next_number_++;
  s.generation = random_generation();
  s.predecessor = chain_.empty() ? 0 : chain_.back().generation;
  s.used = lf::kHeaderBytes;
  std::string p = path(s.number);
  auto reuse = std::find_if(free_.begin(), free_.end(), [&](const Free& f) { return f.size >= size; });
  if (reuse != free_.end()) {
    // A segment all of whose entries images cover: renamed, not re-created,
    // so no block allocation; its stale bytes fail the new generation.
    io_.point("log.before_reuse");
    if (int rc = io_.rename(reuse->path, p); rc < 0) {
      broken_ = true;
      return Status::error(fmt::format("cannot rename {} to {}: {}", reuse->path, p, std::strerror(-rc)), -rc);
    }
    s.size = reuse->size;
    free_.erase(reuse);
    s.fd = io_.open(p, O_RDWR, 0);
    if (s.fd < 0) {
      broken_ = true;
      return Status::error(fmt::format("cannot open {}: {}", p, std::strerror(-s.fd)), -s.fd);
    }
  } else {
    s.size = size;
    s.fd = io_.open(p, O_RDWR | O_CREAT | O_EXCL, 0644);
    if (s.fd < 0) return Status::error(fmt::format("cannot create {}: {}", p, std::strerror(-s.fd)), -s.fd);
    if (int rc = io_.fallocate(s.fd, 0, static_cast<off_t>(size)); rc < 0) {
      // Nothing of the log changed: a clean refusal, later appends retry.
      io_.close(s.fd);
      io_.unlink(p);
      bool full = rc == -ENOSPC || rc == -EDQUOT;
      return Status::error(fmt::format("{} for a new log segment {} of {}: {}",
                                       full ? "no space" : "cannot allocate space", p,
                                       size % (1 << 20) == 0 ? fmt::format("{} MiB", size >> 20)
                                                             : fmt::format("{} bytes", size),
                                       std::strerror(-rc)),
                           -rc);
    }
  }
  Status st = write_header(s);
  if (!st.ok()) {
    // Part of the header may be written (a short write, then an error): it
    // would read as damage at the next open, and the store would not open.
    // Zeroed (or, failing that, removed), the file is free space.
    uint8_t zeros[lf::kHeaderBytes] = {};
    if (!write_all(io_, s.fd, zeros, sizeof zeros, 0, p).ok() || io_.fdatasync(s.fd) < 0) io_.unlink(p);
    broken_ = true;
    io_.close(s.fd);
    return st;
  }
  chain_.push_back(s);
  dir_sync_ = true;
  return Status::good();
}

Status Log::append(uint64_t seq, std::span<const uint8_t> payload) {
  if (broken_) return Status::error("the log refuses writes after an earlier failure (restart to recover)");
  if (payload.size() > lf::kMaxPayloadBytes) return Status::error("a batch's changes exceed 2 GiB");
  uint64_t need = lf::entry_bytes(payload.size());
  if (chain_.empty() || chain_.back().used + need > chain_.back().size) {
    Status st = start_segment(lf::kHeaderBytes + need + lf::kEntryHeaderBytes);
    if (!st.ok()) return st;
  }
  Segment& s = chain_.back();
  // The entry, then an end marker when it fits: a later open finds a clean
  // end instead of stale bytes.
  bool marker = s.used + need + lf::kEntryHeaderBytes <= s.size;
  buf_.assign(need + (marker ? lf::kEntryHeaderBytes : 0), 0);
  uint8_t* head = buf_.data();
  put32(head, static_cast<uint32_t>(payload.size()));
  put64(head + 8, seq);
  put64(head + 16, last_seq_);
  put64(head + 24, last_digest_);
  if (!payload.empty()) std::memcpy(head + lf::kEntryHeaderBytes, payload.data(), payload.size());
  uint64_t digest = entry_digest(s.generation, head, head + lf::kEntryHeaderBytes, payload.size());
  put64(head + 32, digest);
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
    int dfd = io_.open(dir_, O_RDONLY | O_DIRECTORY, 0);
    int rc = dfd < 0 ? dfd : io_.fsync(dfd);
    if (dfd >= 0) io_.close(dfd);
    if (rc < 0) {
      broken_ = true;
      return Status::error(fmt::format("cannot sync the directory {}: {}", dir_, std::strerror(-rc)), -rc);
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
    chain_.erase(chain_.begin());
    io_.close(s.fd);
    if (free_.size() < o_.max_free_segments) {
      free_.push_back(Free{path(s.number), s.size});
    } else {
      io_.unlink(path(s.number));
    }
  }
}

}  // namespace aup::storage

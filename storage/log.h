// The log: entries appended to preallocated segments, made durable by
// fdatasync, read back in order at open.
//
// Recovery policy (each case is a named test in tests/storage/log_test.cpp;
// the whole policy is in docs/store-format.md, "Opening a store"):
//   - An entry that is incomplete or fails its digest ends the log: it and
//     everything after it is not state (a torn tail). A writable open
//     zeroes its header once the whole log has been read (so a refused
//     open has written nothing), and the end stays clean; the later
//     segments of the chain (none holds a valid entry) leave it as free
//     space, so appends go on after the cut.
//   - But if any valid entry of the live log follows such a bad entry (later
//     in the same segment, or in a later segment of the chain), the bad
//     entry is damage, not a torn tail: open refuses, naming the file and
//     the byte offset. After an end marker (a zeroed header) open looks at
//     least 1 MiB ahead for such an entry (a bound on open time).
//   - A whole entry (its digest matches) that does not chain, whose save
//     number is not after its predecessor's, or whose term is lower than
//     its predecessor's, is damage, refused at once.
//   - A segment file shorter than its header says is damage (segments are
//     allocated whole before their header is written and never shrink).
//   - The segments are the chain ending at the highest-numbered segment with
//     a valid header, linked by predecessor generations. A file whose header
//     is valid but does not match its name, or a valid segment outside the
//     chain, is free space; an empty or zero-header file is free space when
//     older than the newest segment and a torn tail (reported, removed) when
//     newer; any other invalid header is refused.
#pragma once

#include <cassert>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "storage/io.h"
#include "storage/live.h"
#include "storage/log_format.h"
#include "storage/status.h"

namespace aup::storage {

struct LogEntry {
  uint64_t seq = 0;
  uint32_t term = 0;
  uint64_t digest = 0;
  uint64_t prev_seq = 0;
  uint64_t segment = 0;  // its segment's number
  uint64_t offset = 0;   // in that segment
  std::span<const uint8_t> payload;
};

struct LogOpenReport {
  uint64_t segments = 0;      // in the chain
  uint64_t entries = 0;
  uint64_t payload_bytes = 0;
  uint64_t first_prev_seq = 0;  // the first entry's predecessor (what images must cover)
  bool torn = false;            // a torn tail was found (and cut)
  std::string torn_where;       // "log-3 at byte 4096: digest mismatch"
};

class Log {
 public:
  struct Options {
    uint64_t segment_bytes = log_format::kDefaultSegmentBytes;
    size_t max_free_segments = 2;  // covered segments kept for reuse; more are deleted
    bool read_only = false;  // inspect only (aup replay): a torn tail is reported, not cut
    // A read of a served store (storage/live.h), read_only: the log ends
    // at byte `cut_end` of segment `cut_segment`, where its newest durable
    // entry ends. Nothing the writer may be doing past it (appending,
    // syncing, starting a segment) is looked at.
    uint64_t cut_segment = UINT64_MAX;
    uint64_t cut_end = UINT64_MAX;
  };
  using Visitor = std::function<Status(const LogEntry&)>;

  // Reads every live entry in order (calling `visit`), then, unless
  // read_only, cuts a torn tail and positions the log for appending.
  // Refuses (with the file and offset) when the log is damaged, or when
  // `visit` refuses an entry; an I/O error carries its errno.
  static Status open(Io& io, const std::string& dir, Options o, const Visitor& visit,
                     std::unique_ptr<Log>& out, LogOpenReport& report);
  ~Log();
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // Writing an entry without copying its payload: begin_entry() hands out
  // the log's own buffer holding only the entry header's bytes (reserved,
  // zero); the writer appends the payload after them (the batch encoder
  // encodes straight into it), and append_entry(seq) fills in the header
  // (length, save number, chain, digest) and writes header, payload and
  // padding with one pwrite. Nothing else may touch the buffer in between,
  // and nothing but append_entry may use it after. A payload left empty is
  // simply not appended (the next begin_entry starts over).
  std::vector<uint8_t>& begin_entry();
  // Writes the entry begun after the last (starting a new segment when it
  // does not fit). Not durable until sync(), and synced before the next
  // append (so withdraw() can take back the one entry not known durable).
  // After any failed write or sync the log refuses every later append:
  // what reached the disk is unknown. Not on a log opened read_only.
  Status append_entry(uint64_t seq);
  // The same for a payload held elsewhere (tests, tools): copied behind
  // the header.
  Status append(uint64_t seq, std::span<const uint8_t> payload);
  // A replica's log (storage/store.h, append_copies): entries appended one
  // after another and synced once, the run's earlier segment synced before
  // a later one starts. Its copies' fate is answered to nobody, so a
  // withdrawal that takes back only the last is enough.
  void allow_runs() { runs_ = true; }
  Status sync();
  bool broken() const { return broken_; }
  // After a failed append or sync: zeroes the header of the entry not yet
  // known durable and syncs that. When it succeeds the entry is certainly
  // not in the log (a zero header ends it at the next open), so its batch
  // can be answered "not written"; when it fails, whether the entry
  // survives a restart is unknown. The log stays broken either way: a disk
  // that failed once is not trusted until the store is reopened.
  Status withdraw();

  uint64_t last_seq() const { return last_seq_; }
  // The term of the last entry (0 before any), and the term the next
  // entries are written in: never lower than the last's.
  uint32_t last_term() const { return last_term_; }
  uint32_t term() const { return term_; }
  void set_term(uint32_t term) {
    assert(term >= last_term_);  // a log's terms never go back
    term_ = term;
  }
  // Bytes of entries in live segments (what recovery would read).
  uint64_t live_bytes() const;
  // Segments whose entries all have save numbers <= seq (every image covers
  // them; never the current one) leave the chain: they are kept for reuse
  // or deleted.
  void release_through(uint64_t seq);
  // Readers of the served store (storage/live.h): a free segment is reused
  // only while none reads, since reusing rewrites it. Null: none can come.
  void set_readers_gate(ReadersGate* gate) { gate_ = gate; }
  // Where the last entry ends: the segment being appended to and the byte
  // after its last entry (after sync(), the durable end).
  struct End {
    uint64_t segment = 0;
    uint64_t offset = 0;
  };
  End end() const { return chain_.empty() ? End{} : End{chain_.back().number, chain_.back().used}; }

  // Following a served store's log (a primary's shipper, which opened it
  // read_only with a cut): reads on from where the last read ended to the
  // writer's newer cut, byte `cut_end` of segment `cut_segment`, into the
  // segments that follow in the chain, each entry checked as open checks
  // it and handed to `visit`. Every entry before the cut is durable, so a
  // bad one is refused, as is a chain that no longer goes on (a segment
  // released and reused under it: the caller held no readers' lock).
  // Segments read past are closed.
  Status follow(uint64_t cut_segment, uint64_t cut_end, const Visitor& visit);

  struct Segment {
    uint64_t number = 0;
    uint64_t generation = 0;
    uint64_t predecessor = 0;
    uint64_t size = 0;
    uint64_t used = 0;  // bytes up to the end of its last entry
    uint64_t first_seq = 0;
    uint64_t last_seq = 0;
    uint64_t entries = 0;
    int fd = -1;
  };
  const std::vector<Segment>& segments() const { return chain_; }
  size_t free_segments() const { return free_.size(); }

 private:
  class Opener;  // open's steps (log.cpp)
  Log(Io& io, std::string dir, Options o) : io_(io), dir_(std::move(dir)), o_(o) {}
  Status start_segment(uint64_t min_size);
  struct Free;
  Status reuse_segment(Segment& s, const Free& f, const std::string& p);
  Status create_segment(Segment& s, uint64_t size, const std::string& p, bool& left);
  void drop_unheaded(Segment& s, const std::string& p);
  Status write_header(const Segment& s);
  Status follow_segment(Segment& s, uint64_t limit, const Visitor& visit);
  Status open_successor(uint64_t cut_segment);
  Status write_entry(Segment& s, uint64_t seq, uint64_t digest, uint64_t need);
  std::string path(uint64_t number) const;

  Io& io_;
  std::string dir_;
  Options o_;
  std::vector<Segment> chain_;  // oldest first; back() is current
  struct Free {
    std::string path;
    uint64_t size;
  };
  std::vector<Free> free_;
  ReadersGate* gate_ = nullptr;
  uint64_t next_number_ = 0;
  uint64_t last_seq_ = 0;
  uint64_t last_digest_ = 0;
  uint32_t last_term_ = 0;
  uint32_t term_ = 0;
  bool pending_sync_ = false;
  bool runs_ = false;  // allow_runs()
  // The entry being written or awaiting its sync, for withdraw().
  struct Unsynced {
    int fd = -1;
    uint64_t offset = 0;
    std::string path;
  } unsynced_;
  bool dir_sync_ = false;
  bool broken_ = false;
  // The entry being written: header, payload, padding and (when it fits)
  // the end marker after it, written with one pwrite. Reused.
  std::vector<uint8_t> buf_;
  bool entry_begun_ = false;  // begin_entry() handed out buf_; append_entry() not yet run
};

}  // namespace aup::storage

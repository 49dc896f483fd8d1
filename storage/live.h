// Reading a store that a running aup holds (`aup replay` on a served store):
// two files beside DIR/LOCK (docs/store-format.md, "Reading a served store").
//
//   DIR/READERS  flock'd shared by each reader for as long as it reads, and
//                exclusive by the writer for the moments it changes a file a
//                reader may be reading: releasing covered log segments (and
//                moving an unchanged image's save number in place), and
//                reusing a released segment. While a reader holds it the
//                writer does neither (a release is tried again after each
//                batch, and a new segment is allocated instead of a reused
//                one): commits never wait for a reader.
//   DIR/LIVE     the live mark: 64 bytes the writer maps and updates after
//                every durable commit: the newest durable save, and the
//                segment and byte where its entry ends. Never synced: it
//                means something only while its writer holds DIR/LOCK, and
//                recovery never reads it.
//
// A reader takes READERS, reads the schema and the images, then the mark,
// then the log up to the mark's byte and no further. That is a consistent
// cut: every image it read covers a save no later than the mark's (an image
// is written from a save already durable, and was in place before the mark
// was read), the segments it needs stay while it reads, and nothing the
// writer may be writing past the cut (an entry not yet synced, a segment
// being started) is looked at.
//
// The mark goes through the store's Io like every file: creating and
// mapping it at open (a failure refuses the open, as for any file the open
// creates), and a reader's opening and mapping it (a failure refuses that
// read). After the open the writer only stores to memory it has mapped:
// no call of Io, so no fault plan (storage/io.h) can fail a commit there.
#pragma once

#include <cstdint>
#include <string>

#include "storage/io.h"
#include "storage/status.h"

namespace aup::storage {

// DIR/READERS as the writer holds it.
class ReadersGate {
 public:
  ReadersGate() = default;
  ~ReadersGate();
  ReadersGate(const ReadersGate&) = delete;
  ReadersGate& operator=(const ReadersGate&) = delete;

  // Creates or opens DIR/READERS (the writer holds DIR/LOCK).
  Status open(Io& io, const std::string& dir);
  // True when no reader reads: then none starts until let_in(). False when
  // one does (or the lock cannot be taken): the caller leaves its change
  // for later.
  bool keep_out();
  void let_in();

 private:
  Io* io_ = nullptr;
  int fd_ = -1;
};

// The live mark's fields, as a reader finds them.
struct LiveMark {
  enum class State : uint64_t { Opening = 0, Serving = 1, Closed = 2 };
  State state = State::Opening;
  uint64_t pid = 0;      // the writer's
  uint64_t seq = 0;      // the newest durable save
  uint64_t segment = 0;  // the log segment its entry is in
  uint64_t end = 0;      // the byte after that entry
};

// DIR/LIVE as the writer keeps it: mapped shared, updated with atomic
// stores (a reader in another process maps the same page).
class LiveMarkWriter {
 public:
  LiveMarkWriter() = default;
  ~LiveMarkWriter();  // marks it Closed
  LiveMarkWriter(const LiveMarkWriter&) = delete;
  LiveMarkWriter& operator=(const LiveMarkWriter&) = delete;

  // Creates or takes over DIR/LIVE, Opening, with this process's pid.
  // `io` must outlive the writer.
  Status open(Io& io, const std::string& dir);
  // After a durable commit (and once the open is done): Serving, at `seq`,
  // whose entry ends at byte `end` of segment `segment`. The three change
  // together: a reader never takes one update's save with another's byte.
  // Never moves back: a reader cut at an earlier place would miss saves
  // already answered.
  void publish(uint64_t seq, uint64_t segment, uint64_t end);

 private:
  Io* io_ = nullptr;
  uint64_t* words_ = nullptr;  // the mapped mark (its descriptor is closed: the mapping stays)
  bool serving_ = false;       // the mark says Serving
  // The last publish, which the next may not precede.
  uint64_t seq_ = 0, segment_ = 0, end_ = 0;
};

// A reader of a served store: holds DIR/READERS shared while it lives.
class LiveReader {
 public:
  LiveReader() = default;
  ~LiveReader();
  LiveReader(const LiveReader&) = delete;
  LiveReader& operator=(const LiveReader&) = delete;

  // Takes READERS shared, waiting while the writer holds it (a release of
  // segments: moments). err ENOENT: there is no READERS file (the running
  // aup is one from before live reads).
  Status attach(Io& io, const std::string& dir);
  // The mark as it is now; err ENOENT when there is none, EINVAL when it is
  // not a live mark.
  Status read_mark(LiveMark& out) const;

 private:
  Io* io_ = nullptr;
  std::string dir_;
  int fd_ = -1;
};

// How a reader (`aup replay`, `aup backup`) holds the store it reads. A
// store no aup holds: DIR/LOCK shared, so no aup opens it meanwhile (a
// store without a LOCK file has never been opened by `aup run`: nothing to
// hold). A store a running aup holds: as a reader of the served store
// (LiveReader), cut at the mark once the images are open.
class ReadAccess {
 public:
  explicit ReadAccess(Io& io) : io_(io) {}
  ~ReadAccess();
  ReadAccess(const ReadAccess&) = delete;
  ReadAccess& operator=(const ReadAccess&) = delete;

  // The message says why not: a lock that cannot be taken (its errno), a
  // served store that cannot be read while served (ENOENT: no READERS).
  Status take(const std::string& dir);
  bool live() const { return live_; }
  // The serving aup's pid, as its LOCK file says ("" when unknown), and as
  // messages name it: " (pid N)", or "".
  const std::string& holder() const { return holder_; }
  std::string by() const;
  // A served store: the mark to cut at, read now (call it once the images
  // are open: none of them then covers a later save). Refused (EAGAIN)
  // while the server is still opening the store.
  Status cut(LiveMark& out);

 private:
  Io& io_;
  std::string dir_;
  int fd_ = -1;
  std::string holder_;
  bool live_ = false;
  LiveReader reader_;
};

}  // namespace aup::storage

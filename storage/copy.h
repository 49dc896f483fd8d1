// A store copied whole, file by file, as of one save: what `aup backup`
// writes into a new directory (storage/backup.h), and what a primary sends
// a replica whose store its log no longer reaches back to
// (docs/replication.md, "Catching up from a copy").
//
// The copy is the schema file, the term history, every image (opened
// before the live mark is read, so none covers a later save than the cut),
// and the log's chain as its one reader finds it, up to the cut when
// served: each segment up to the end of its last entry, the rest left zero
// (a clean end), allocated whole like every segment. A torn tail, free
// segments, LOCK, READERS and LIVE are not copied. The source is read as
// `aup replay` reads it (storage/live.h): the server never waits.
//
// On a replica, a copy is received into DIR/copy.partial, verified, given
// a MANIFEST (its files' names), synced and renamed to DIR/copy; the next
// writable open installs it before anything else (install_copy): each
// file moved into DIR over the old one, then every store file of DIR the
// manifest does not name removed, then the manifest and DIR/copy. A crash
// at any step leaves DIR/copy.partial (removed, the old store kept), or
// DIR/copy with its manifest (installing again moves what is left and
// removes the same files), or the copy installed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "storage/io.h"
#include "storage/status.h"

namespace aup::storage {

// Where a copy's files go.
class CopySink {
 public:
  virtual ~CopySink() = default;
  // File `name`, whose first `bytes` bytes follow in write() calls; a log
  // segment is `alloc` bytes long (the rest zero), another file 0.
  virtual Status begin_file(const std::string& name, uint64_t bytes, uint64_t alloc) = 0;
  virtual Status write(const uint8_t* p, size_t n) = 0;
  virtual Status end_file() = 0;
};

// Files made in a directory (which exists), each synced when it ends.
// Neither the directory nor its parent is synced here.
class DirSink : public CopySink {
 public:
  DirSink(Io& io, std::string dir) : io_(io), dir_(std::move(dir)) {}
  ~DirSink() override;
  DirSink(const DirSink&) = delete;
  DirSink& operator=(const DirSink&) = delete;
  Status begin_file(const std::string& name, uint64_t bytes, uint64_t alloc) override;
  Status write(const uint8_t* p, size_t n) override;
  Status end_file() override;
  uint64_t files() const { return files_; }

 private:
  Io& io_;
  std::string dir_;
  std::string path_;  // the file being written
  int fd_ = -1;
  uint64_t at_ = 0, bytes_ = 0;
  uint64_t files_ = 0;
};

struct CopyReport {
  bool live = false;   // the source was being served
  std::string holder;  // then, the serving aup's pid
  uint64_t seq = 0;    // the save the copy holds
  uint64_t files = 0;
  uint64_t bytes = 0;  // copied (a segment's zero rest not counted)
};

// Bytes copied so far, for a progress line.
using CopyProgress = std::function<void(uint64_t bytes)>;

// Copies the store `dir` into `sink`. err ENOENT for no store; the errno
// of a failed read; the sink's own refusals as it gave them.
Status copy_store(Io& io, const std::string& dir, CopySink& sink, CopyReport& report, const CopyProgress& progress);

// Recovery of the copy in `dir`, read-only: every digest and the chain.
// A copy of a served store must hold exactly save `want_seq` (`exact`),
// one of a stopped store at least that. `seq`: the save it holds,
// `rows`: its tables' rows.
Status verify_copy(Io& io, const std::string& dir, uint64_t want_seq, bool exact, uint64_t& seq, uint64_t& rows);

// A replica's side: DIR/copy.partial, emptied (what a stopped receipt
// left is removed) and made anew, for a DirSink to fill.
Status begin_received_copy(Io& io, const std::string& dir, std::string& partial);
// DIR/copy.partial synced, verified to hold save `seq` exactly, given its
// manifest, and renamed to DIR/copy (DIR synced): the next writable open
// installs it.
Status end_received_copy(Io& io, const std::string& dir, uint64_t seq);
// At a writable open, before anything reads the store: installs DIR/copy
// if it is there (`installed`), and removes a DIR/copy.partial.
Status install_copy(Io& io, const std::string& dir, bool& installed);

}  // namespace aup::storage

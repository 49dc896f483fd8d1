// A store's files through an Io (storage/io.h): the one way to read a whole
// file, the one way to replace one durably, and the steps they are made of
// (which the log and a backup use for the files they write in place).
//
// Every failure is a Status naming the operation, the file and the errno
// ("cannot read DIR/schema: Input/output error"): an I/O error is never
// reported as damage (err 0), which is for what the bytes say.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/io.h"
#include "storage/status.h"

namespace aup::storage {

// ---- steps ----------------------------------------------------------------------

// Writes all of p[0..n) at byte `at` of `fd`, resuming short writes (a
// write of nothing is EIO). "cannot write PATH: ...".
Status write_all(Io& io, int fd, const void* p, size_t n, uint64_t at, const std::string& path);

// Reads n bytes at byte `at` of `fd` into `out`, resuming short reads,
// stopping early only at the file's end: `got` says how many came (the
// caller decides what a short file means). "cannot read PATH: ...".
Status read_at(Io& io, int fd, void* out, size_t n, uint64_t at, const std::string& path, size_t& got);

// fsync of a directory, after a file in it was created, renamed or
// removed. "cannot sync the directory DIR: ...".
Status sync_directory(Io& io, const std::string& dir);

// ---- whole files ------------------------------------------------------------------

// The whole file `path` into `out`. err ENOENT when there is none ("cannot
// open PATH: ..."); a file that ends before the size it had when opened is
// EIO (it changed under the lock).
Status read_file(Io& io, const std::string& path, std::vector<uint8_t>& out);

// The named steps of a durable replacement (crash tests stop at them;
// docs/store-format.md lists them), one set per kind of file.
struct DurablePoints {
  std::string_view before_fsync;    // every byte written to NAME.new
  std::string_view before_rename;   // NAME.new synced and closed
  std::string_view after_rename;    // NAME.new is NAME, the directory not yet synced
  std::string_view after_dir_sync;  // done
};

struct DurableWrite {
  DurablePoints points;
  // A file too large to hold whole (an image) writes itself: called with
  // NAME.new open for writing (empty), instead of writing `bytes`.
  std::function<Status(int fd, const std::string& tmp)> fill;
};

// Replaces DIR/NAME with `bytes` (or what `how.fill` writes): written to
// DIR/NAME.new, fsynced, closed, renamed over DIR/NAME, the directory
// fsynced. A crash at any step leaves the old file or the whole new one
// (and perhaps a NAME.new, which nothing reads and the next writable open
// removes: is_leftover); a failure leaves the old file, and removes the
// NAME.new. "cannot create|write|sync|rename ...".
Status write_file_durably(Io& io, const std::string& dir, const std::string& name, std::span<const uint8_t> bytes,
                          const DurableWrite& how);

// Whether `name` (a file in a store's directory) is the NAME.new of a
// durable replacement of one of the store's own files: the schema file,
// an image, the term history, the replica's role, a cut's marker or side
// file. A NAME.new is renamed into place only once it is whole and synced,
// so one that is left over was never part of the store: a writable open
// removes it (storage/recovery.h, docs/store-format.md).
bool is_leftover(std::string_view name);

}  // namespace aup::storage

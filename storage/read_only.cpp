#include "storage/read_only.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "storage/key_tables.h"
#include "storage/recovery.h"
#include "storage/schema_file.h"

namespace aup::storage {

namespace {

std::string errno_text(int e) { return std::strerror(e); }

}  // namespace

ReadOnlyStore::~ReadOnlyStore() {
  if (lock_fd_ >= 0) io_.close(lock_fd_);  // releases the shared flock
}

Status ReadOnlyStore::open(Io& io, const std::string& dir, const Schema& schema, Tables& tables,
                           std::unique_ptr<ReadOnlyStore>& out, ReadOnlyReport& report) {
  std::unique_ptr<ReadOnlyStore> s(new ReadOnlyStore(io, dir, schema));
  Status st = s->hold();
  report.held = s->lock_fd_ >= 0;
  if (st.ok()) st = s->refuse_work_under_way();
  if (st.ok()) st = s->read(tables, report);
  if (!st.ok()) return st;
  out = std::move(s);
  return Status::good();
}

// DIR/LOCK shared, as `aup replay` takes it: never created (a read-only
// volume could not make it), so a store without one is not held.
Status ReadOnlyStore::hold() {
  std::string path = dir_ + "/LOCK", holder;
  int fd = io_.lock(path, /*exclusive=*/false, holder);
  if (fd >= 0) {
    lock_fd_ = fd;
    return Status::good();
  }
  if (fd == -ENOENT) return Status::good();  // no LOCK (or no store: the listing says which)
  if (fd == -EWOULDBLOCK) {
    return Status::error(fmt::format("the store {} is in use by a running aup{}: send its queries to that server "
                                     "(--read-only serves a store no `aup run` holds)",
                                     dir_, holder.empty() ? "" : fmt::format(" (pid {})", holder)),
                         EWOULDBLOCK);
  }
  return Status::error(fmt::format("cannot lock {}: {}", path, errno_text(-fd)), -fd);
}

// A copy to install or a cut to finish changes the state the store holds;
// only a writable open does either.
Status ReadOnlyStore::refuse_work_under_way() {
  std::vector<std::string> names;
  if (int rc = io_.list_dir(dir_, names); rc < 0) {
    if (rc == -ENOENT) {
      return Status::error(fmt::format("there is no store {}: --read-only serves an existing store and creates "
                                       "nothing",
                                       dir_),
                           ENOENT);
    }
    return Status::error(fmt::format("cannot list {}: {}", dir_, errno_text(-rc)), -rc);
  }
  auto has = [&](std::string_view n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  std::string work = has("copy")  ? fmt::format("a copy received from its primary, not yet installed ({}/copy)", dir_)
                     : has("cut") ? fmt::format("a cut of its log under way ({}/cut)", dir_)
                                  : std::string();
  if (work.empty()) return Status::good();
  return Status::error(fmt::format("the store {} has {}, which only a writable open finishes: run `aup run` on it "
                                   "once without --read-only",
                                   dir_, work),
                       EAGAIN);
}

// Recovery as a writable open does it, with the log read-only: the
// module's layout (and the key tables when the store has them), a module
// the store cannot migrate to refused, and its additions left as their
// defaults instead of migrated.
Status ReadOnlyStore::read(Tables& tables, ReadOnlyReport& report) {
  RecoveryReporter quiet;  // damage is refused, as in a writable open; the rest is not shown
  RecoveryOptions ro;
  ro.log.read_only = true;
  Recovery recovery(io_, dir_, ro, quiet);
  Schema stored;
  Status st = recovery.read_schema(stored);
  if (st.err == ENOENT) {
    return Status::error(fmt::format("{} has no schema file: it is not a store (--read-only creates nothing)", dir_),
                         ENOENT);
  }
  if (!st.ok()) return st;
  if (has_key_tables(stored)) add_key_tables(schema_);
  report.keeps_keys = has_key_tables(schema_);
  SchemaDiff diff = compare_schemas(stored, schema_);
  if (!diff.refusals.empty()) {
    std::string list;
    for (const std::string& r : diff.refusals) list += "\n  - " + r;
    return Status::error(fmt::format("the store {} does not match the module:{}\n(a store migrates only "
                                     "additions: new tables, new vars, new fields with defaults)",
                                     dir_, list));
  }
  report.not_migrated = diff.additions;
  st = recovery.load_images(stored, schema_, tables);
  if (st.ok()) st = recovery.read_log();
  if (!st.ok()) return st;
  last_seq_ = report.last_seq = recovery.last_seq();
  report.torn = recovery.log_report().torn;
  report.torn_where = recovery.log_report().torn_where;
  return Status::good();
}

}  // namespace aup::storage

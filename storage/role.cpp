#include "storage/role.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "storage/file_io.h"

namespace aup::storage {

namespace {
constexpr const char* kRoleFile = "replica-of";
constexpr DurablePoints kRolePoints{"role.before_fsync", "role.before_rename", "role.after_rename",
                                    "role.after_dir_sync"};
}  // namespace

Status read_replica_of(Io& io, const std::string& dir, std::string& primary) {
  primary.clear();
  std::vector<uint8_t> bytes;
  Status st = read_file(io, fmt::format("{}/{}", dir, kRoleFile), bytes);
  if (!st.ok()) return st;
  primary.assign(bytes.begin(), bytes.end());
  while (!primary.empty() && (primary.back() == '\n' || primary.back() == '\r')) primary.pop_back();
  return Status::good();
}

Status write_replica_of(Io& io, const std::string& dir, const std::string& primary) {
  std::string line = primary + "\n";
  return write_file_durably(io, dir, kRoleFile,
                            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(line.data()), line.size()),
                            DurableWrite{kRolePoints, {}});
}

Status remove_replica_of(Io& io, const std::string& dir) {
  std::string path = fmt::format("{}/{}", dir, kRoleFile);
  if (int rc = io.unlink(path); rc < 0) {
    if (rc == -ENOENT) return Status::good();
    return Status::error(fmt::format("cannot remove {}: {}", path, std::strerror(-rc)), -rc);
  }
  return sync_directory(io, dir);
}

}  // namespace aup::storage

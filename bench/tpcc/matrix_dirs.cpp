#include "bench/tpcc/matrix_dirs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace aup::tpcc {

namespace fs = std::filesystem;

namespace {

// The outermost of `dir` and its ancestors that does not exist ("" when
// `dir` does): what creating `dir` makes.
std::string first_missing(const fs::path& dir) {
  std::string missing;
  for (fs::path p = dir; !p.empty() && !fs::exists(p); p = p.parent_path()) {
    missing = p.string();
    if (p == p.parent_path()) break;
  }
  return missing;
}

// Removes `dir` and its ancestors up to `top`, each only when empty.
void remove_empty_up_to(const fs::path& dir, const std::string& top) {
  std::error_code ignored;  // a directory that is not empty stays, and so do its ancestors
  for (fs::path p = dir; !p.empty() && fs::remove(p, ignored); p = p.parent_path()) {
    if (p.string() == top || p == p.parent_path()) break;
  }
}

// syncfs of the file system that holds `dir`: what the copy wrote reaches
// the device before the run starts.
void sync_file_system(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + dir + ": " + std::strerror(errno));
  int rc = ::syncfs(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error("cannot sync " + dir + ": " + std::strerror(err));
}

}  // namespace

ScratchDir::ScratchDir(const std::string& parent, const std::string& name) : parent_(parent) {
  made_from_ = first_missing(fs::absolute(parent_));
  fs::create_directories(parent_);
  path_ = (fs::path(parent_) / name).string();
  std::error_code ec;
  if (!fs::create_directory(path_, ec)) {
    std::string why = ec ? ec.message() : "it exists already";
    if (!made_from_.empty()) remove_empty_up_to(fs::absolute(parent_), made_from_);
    throw std::runtime_error("cannot make the directory " + path_ + ": " + why);
  }
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;  // nothing to do about it on the way out
  fs::remove_all(path_, ignored);
  if (!made_from_.empty()) remove_empty_up_to(fs::absolute(parent_, ignored), made_from_);
}

// Sockets and fifos (a server's socket left in its data directory) are not
// data and are left out: std::filesystem::copy would refuse them.
void copy_template(const std::string& from, const std::string& to) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(from, ec), end; !ec && it != end; it.increment(ec)) {
    fs::path target = fs::path(to) / fs::relative(it->path(), from, ec);
    if (ec) break;
    if (it->is_symlink()) {
      fs::copy_symlink(it->path(), target, ec);
    } else if (it->is_directory()) {
      fs::create_directory(target, ec);
    } else if (it->is_regular_file()) {
      fs::copy_file(it->path(), target, ec);
    }
  }
  if (ec) throw std::runtime_error("cannot copy the template " + from + " to " + to + ": " + ec.message());
  sync_file_system(to);
}

uint64_t tree_bytes(const std::string& dir) {
  uint64_t bytes = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) bytes += e.file_size();
  }
  return bytes;
}

}  // namespace aup::tpcc

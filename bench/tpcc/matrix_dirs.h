// The matrix's directories: a scratch directory per medium that holds the
// loaded templates and the run directories, each removed with everything in
// it however the matrix ends (a backend error unwinds through them), and
// the copy of a template that every run starts from.
#pragma once

#include <cstdint>
#include <string>

namespace aup::tpcc {

// A directory made here and removed, with everything inside, when this
// goes. The parent is created when missing, and what was made of it is
// removed too when it is empty by then, so the matrix leaves nothing it made behind.
class ScratchDir {
 public:
  // `parent`/`name`; throws std::runtime_error when it exists already (a
  // directory we did not make is never removed) or cannot be made.
  ScratchDir(const std::string& parent, const std::string& name);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string parent_;
  std::string made_from_;  // the outermost directory made for parent_; "" when it existed
  std::string path_;
};

// The contents of `from` (a loaded, closed store) copied recursively into
// `to` (an empty directory), regular files, directories and symbolic links
// only, then flushed to its device (syncfs), so that a run on disk does not
// share the device with the write-back of its own copy.
void copy_template(const std::string& from, const std::string& to);

// The bytes of the regular files under `dir` (a store's size on its medium).
uint64_t tree_bytes(const std::string& dir);

}  // namespace aup::tpcc

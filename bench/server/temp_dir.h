// A fresh directory (mkdtemp) removed with everything in it when this
// goes, however the run that used it ends.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace aup::bench::server {

class TempDir {
 public:
  // A directory named PREFIX-XXXXXX inside `parent`, which is created if
  // it is missing.
  TempDir(const std::string& parent, const std::string& prefix) {
    std::filesystem::create_directories(parent);
    std::string pattern = parent + "/" + prefix + "-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) throw std::runtime_error("cannot create a directory like " + pattern);
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ignored;  // nothing to do about it on the way out
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace aup::bench::server

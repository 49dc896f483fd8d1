// What the fuzz targets (tests/fuzz/*_fuzz.cpp, libFuzzer) share: the
// project's modules compiled once at start, a scratch directory of the
// process's own, an Io without syncs, checksum resealing (so mutations get
// past the checksums and reach the decoders behind them), and a failed
// oracle as a crash libFuzzer saves the input of.
//
// Nothing here changes from one input to the next: each target's input is
// handled on state it makes and drops itself, so a saved input reproduces
// alone (`./build-fuzz/tests/fuzz/log_fuzz crash-...`).
#pragma once

#include <stdlib.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/codegen.h"
#include "compiler/compiler.h"
#include "storage/io.h"
#include "runtime/json.h"
#include "vm/module.h"

namespace aup::fuzz {

// A failed oracle: libFuzzer reports the abort and keeps the input.
[[noreturn]] inline void oracle_failed(std::string_view what) {
  std::fprintf(stderr, "fuzz oracle failed: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

// Every answer a Service wrote (docs/protocol.md): one line each, a JSON
// object whose first key is `id` or `ok`. Returns how many there were.
inline size_t check_answers(std::string_view out) {
  runtime::JsonDoc doc;
  std::string error;
  size_t count = 0;
  while (!out.empty()) {
    size_t nl = out.find('\n');
    if (nl == std::string_view::npos) oracle_failed("an answer without its newline");
    std::string_view line = out.substr(0, nl);
    out.remove_prefix(nl + 1);
    if (!doc.parse(line, error)) oracle_failed("an answer that is not JSON: " + error + ": " + std::string(line));
    const runtime::JsonNode& root = doc.node(doc.root());
    if (root.kind != runtime::JsonNode::Kind::Object || root.count == 0) oracle_failed("an answer that is not an object");
    std::string_view first = doc.node(doc.first_child(doc.root())).str;
    if (first != "id" && first != "ok") oracle_failed("an answer that starts with neither id nor ok");
    ++count;
  }
  return count;
}

// A module of the project (a path under the source root), compiled once at
// start; a module that does not compile is a broken build, not a finding.
inline std::unique_ptr<vm::Module> compile_project_file(const std::string& relative) {
  std::string path = std::string(AUP_SOURCE_DIR) + "/" + relative;
  std::string text, error;
  if (!read_source_file(path, text, error)) oracle_failed(error);
  auto checked = check_source(relative, std::move(text));
  if (!checked->ok()) oracle_failed(path + " does not check");
  Diagnostics d;
  auto m = generate(*checked, d);
  if (!m) oracle_failed(path + " does not compile");
  m->prepare();
  return m;
}

// A directory of this process's own (in /dev/shm when there is one: the
// targets write a file or two per input), removed when it goes.
class ScratchDir {
 public:
  ScratchDir() {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::string base = fs::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0
                           ? std::string("/dev/shm")
                           : fs::temp_directory_path(ec).string();
    std::string tmpl = base + "/aup-fuzz-XXXXXX";
    if (!mkdtemp(tmpl.data())) oracle_failed("cannot make a scratch directory");
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // Empties the directory (the files of the previous input).
  void clear() const {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(path_, ec)) files.push_back(e.path());
    for (const auto& f : files) std::filesystem::remove_all(f, ec);
  }
  // Writes `bytes` as the file `name` in it.
  void write(const std::string& name, const uint8_t* bytes, size_t n) const {
    std::FILE* f = std::fopen((path_ + "/" + name).c_str(), "wb");
    if (!f) oracle_failed("cannot write a scratch file");
    if (n && std::fwrite(bytes, 1, n, f) != n) oracle_failed("cannot write a scratch file");
    std::fclose(f);
  }
  // Zero-fills the file `name` up to `bytes`.
  void extend(const std::string& name, uint64_t bytes) const {
    if (truncate((path_ + "/" + name).c_str(), static_cast<off_t>(bytes)) != 0) oracle_failed("cannot extend a scratch file");
  }

 private:
  std::string path_;
};

// The real system calls without the syncs: a sync changes no byte a reader
// sees, and one per input would make the fuzzer crawl.
class NoSyncIo : public storage::SystemIo {
 public:
  int fdatasync(int) override { return 0; }
  int fsync(int) override { return 0; }
  int sync_file_range(int, off_t, off_t) override { return 0; }
};

inline uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{p[i]} << (8 * i);
  return v;
}
inline uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}
inline void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
// Writes the XXH3-64 of [from, from + n) at `at`.
inline void seal(uint8_t* base, size_t from, size_t n, size_t at) { put64(base + at, XXH3_64bits(base + from, n)); }

}  // namespace aup::fuzz

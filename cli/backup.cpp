// `aup backup --data DIR --to DEST` (storage/backup.h does the copying).
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>

#include "cli/commands.h"
#include "compiler/driver.h"
#include "storage/backup.h"
#include "storage/io.h"

namespace aup::cli {

namespace {

// `bytes` for people: "850 bytes", "12.3 KiB", "4.0 MiB", "1.2 GiB".
std::string size_words(uint64_t bytes) {
  if (bytes < 1024) return counted(bytes, "byte", "bytes");
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  for (; v >= 1024 && u < 3; ++u) v /= 1024;
  return fmt::format("{:.1f} {}", v, kUnits[u]);
}

// A progress line on a terminal once the copy has taken a second.
class CopyProgress {
 public:
  CopyProgress() : tty_(isatty(fileno(stderr)) != 0), start_(std::chrono::steady_clock::now()) {}
  ~CopyProgress() {
    if (shown_) fmt::print(stderr, "\n");
  }
  CopyProgress(const CopyProgress&) = delete;
  CopyProgress& operator=(const CopyProgress&) = delete;
  void operator()(uint64_t bytes) {
    auto now = std::chrono::steady_clock::now();
    if (!tty_ || now - start_ < std::chrono::seconds(1) || now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    fmt::print(stderr, "\raup backup: copied {}", size_words(bytes));
    shown_ = true;
  }

 private:
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace

int backup(const BackupOptions& o) {
  if (int rc = refuse_data_file("backup", o.data); rc >= 0) return rc;
  if (int rc = refuse_missing_store("backup", o.data); rc >= 0) return rc;
  std::unique_ptr<storage::Io> io = store_io("backup", stderr);
  if (!io) return kExitUsage;
  storage::BackupReport report;
  storage::Status st;
  {
    CopyProgress progress;
    st = storage::backup(*io, o.data, o.to, report, [&progress](uint64_t bytes) { progress(bytes); });
  }
  if (!st.ok()) {
    fmt::print(stderr, "aup backup: {}\n", st.message);
    return st.err == 0 ? 1 : 2;  // damage found verifying the copy, or the environment
  }
  fmt::print("backed up {} to {}: save {}{}, {}, {}, {}; verified\n", o.data, o.to, report.seq,
             report.live ? fmt::format(" (served by aup{})", report.holder.empty() ? "" : " pid " + report.holder)
                         : "",
             counted(report.files, "file", "files"), size_words(report.bytes),
             counted(report.rows, "row", "rows"));
  return 0;
}

}  // namespace aup::cli

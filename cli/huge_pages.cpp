#include "cli/huge_pages.h"

#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace aup::cli {

std::optional<std::string> with_huge_pages(const char* current) {
  std::string_view now = current ? current : "";
  if (now.find("glibc.malloc.hugetlb") != std::string_view::npos) return std::nullopt;
  std::string value(now);
  if (!value.empty()) value += ':';
  value += kHugePagesTunable;
  return value;
}

void prefer_huge_pages(char** argv) {
#ifdef __GLIBC__
  const char* current = std::getenv("GLIBC_TUNABLES");
  std::optional<std::string> wanted = with_huge_pages(current);
  if (!wanted) return;
  // The executable's own path, not /proc/self/exe: the kernel names a
  // process after the file it runs, and `ps`, `pgrep aup` and
  // /proc/PID/status would show "exe".
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  std::string was = current ? current : "";
  if (setenv("GLIBC_TUNABLES", wanted->c_str(), 1) != 0) return;
  execv(self, argv);
  // Not restarted (the file gone since it started, say): run on with the
  // heap as it is, and the environment as it was.
  if (current) {
    setenv("GLIBC_TUNABLES", was.c_str(), 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
#else
  (void)argv;
#endif
}

}  // namespace aup::cli

#include "bench/common/proc.h"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace aup::bench {

std::string proc_file(pid_t pid, const std::string& name) {
  std::string path = (pid == 0 ? std::string("/proc/self") : "/proc/" + std::to_string(pid)) + "/" + name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

ProcessCpu process_cpu(pid_t pid) {
  std::string text = proc_file(pid, "stat");
  // The command name in parentheses may hold spaces: fields count from the
  // last ')'. After it come field 3 (state) on; utime and stime are 14 and 15.
  size_t paren = text.rfind(')');
  if (paren == std::string::npos) throw std::runtime_error("cannot parse /proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(text.substr(paren + 1));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  if (!fields) throw std::runtime_error("cannot parse /proc/" + std::to_string(pid) + "/stat");
  double ns_per_tick = 1e9 / static_cast<double>(sysconf(_SC_CLK_TCK));
  return ProcessCpu{utime * ns_per_tick, stime * ns_per_tick};
}

uint64_t proc_field(const std::string& text, const std::string& key) {
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stoull(text.substr(at + key.size()));
    at += key.size();
  }
  return 0;
}

}  // namespace aup::bench

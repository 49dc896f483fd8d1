// process_figures: a process's CPU time, device writes and resident memory
// from /proc.
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>

#include "backend.h"

namespace aup::tpcc {

namespace {

std::string proc_dir(pid_t pid) { return pid == 0 ? "/proc/self" : "/proc/" + std::to_string(pid); }

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// utime + stime (fields 14 and 15 of /proc/PID/stat), in nanoseconds. The
// command name in parentheses may hold spaces: fields count from the last ')'.
double cpu_ns(const std::string& dir) {
  std::string text = read_all(dir + "/stat");
  size_t paren = text.rfind(')');
  if (paren == std::string::npos) throw std::runtime_error("cannot parse " + dir + "/stat");
  std::istringstream fields(text.substr(paren + 1));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  if (!fields) throw std::runtime_error("cannot parse " + dir + "/stat");
  return (utime + stime) * 1e9 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The number after "KEY" at the start of a line of a /proc text file
// ("write_bytes: 123", "VmRSS:   456 kB"); 0 when absent.
uint64_t field(const std::string& text, const std::string& key) {
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stoull(text.substr(at + key.size()));
    at += key.size();
  }
  return 0;
}

}  // namespace

ProcessFigures process_figures(pid_t pid) {
  std::string dir = proc_dir(pid);
  ProcessFigures f;
  f.cpu_ns = cpu_ns(dir);
  f.write_bytes = field(read_all(dir + "/io"), "write_bytes:");
  f.resident_bytes = field(read_all(dir + "/status"), "VmRSS:") * 1024;
  return f;
}

}  // namespace aup::tpcc

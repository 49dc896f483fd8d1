#include "bench/jit/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "bench/common/spawn_actions.h"
#include "bench/common/measure.h"

extern char** environ;

namespace aup::bench::jit {

namespace {

// What an error message quotes of a failed child's stderr.
constexpr size_t kTailBytes = 2000;

double ns(const timeval& tv) { return static_cast<double>(tv.tv_sec) * 1e9 + static_cast<double>(tv.tv_usec) * 1e3; }

std::string describe(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

}  // namespace

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

Usage run_child(const Child& c) {
  if (c.argv.empty()) throw std::runtime_error("run_child: no command");
  SpawnActions actions;
  actions.open(0, c.input.c_str(), O_RDONLY, 0);
  actions.open(1, c.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  actions.open(2, c.errors.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> copy = c.argv;
  std::vector<char*> args;
  for (std::string& s : copy) args.push_back(s.data());
  args.push_back(nullptr);
  double start = now_ns(CLOCK_MONOTONIC);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], actions.get(), nullptr, args.data(), environ);
  if (rc != 0) throw std::runtime_error("cannot start " + c.argv[0] + ": " + std::strerror(rc));
  int status = 0;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) throw std::runtime_error("wait4: " + std::string(std::strerror(errno)));
  }
  Usage u;
  u.wall_ns = now_ns(CLOCK_MONOTONIC) - start;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = command_text(c.argv) + " failed (" + describe(status) + ")";
    if (c.errors != "/dev/null") {
      std::string err = read_text(c.errors);
      if (err.size() > kTailBytes) err = "..." + err.substr(err.size() - kTailBytes);
      if (!err.empty()) why += ":\n" + err;
    }
    throw std::runtime_error(why);
  }
  u.user_ns = ns(ru.ru_utime);
  u.cpu_ns = u.user_ns + ns(ru.ru_stime);
  u.max_rss_kb = ru.ru_maxrss;
  return u;
}

}  // namespace aup::bench::jit

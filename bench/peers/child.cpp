#include "bench/peers/child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "bench/common/measure.h"
#include "bench/common/spawn_actions.h"
#include "bench/peers/stream.h"

extern char** environ;

namespace aup::bench::peers {

namespace {

// Starting is compiling a module or reading a config and creating an empty
// store: well under a second; this only bounds one that never gets there.
constexpr double kStartLimitNs = 60e9;
// SIGTERM makes each of them finish what it has and exit: milliseconds.
constexpr double kStopLimitNs = 20e9;
// How much of a log an error message quotes.
constexpr size_t kLogTailBytes = 2000;

pid_t spawn(const ChildSpec& spec) {
  std::vector<std::string> argv;
  if (!spec.cpus.empty()) argv = {"taskset", "-c", spec.cpus};  // taskset execs it: the pid stays the server's
  argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
  SpawnActions actions;
  actions.open(0, "/dev/null", O_RDONLY);
  actions.open(1, spec.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  actions.dup2(1, 2);
  std::vector<char*> args;
  for (std::string& s : argv) args.push_back(s.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], actions.get(), nullptr, args.data(), environ);
  if (rc != 0) throw std::runtime_error("cannot start " + spec.name + ": " + std::strerror(rc));
  return pid;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

}  // namespace

Child::Child(ChildSpec spec) : spec_(std::move(spec)) {
  pid_ = spawn(spec_);
  double deadline = now_ns(CLOCK_MONOTONIC) + kStartLimitNs;
  while (!Stream::accepts(spec_.socket)) {
    int status = 0;
    if (wait_exit(0, status)) {
      throw std::runtime_error(spec_.name + " ended (" + describe_status(status) + ") before it listened:\n" +
                               log_tail());
    }
    if (now_ns(CLOCK_MONOTONIC) > deadline) {
      std::string why = spec_.name + " did not listen within 60 s:\n" + log_tail();
      ::kill(pid_, SIGKILL);
      wait_exit(kStopLimitNs, status);
      throw std::runtime_error(why);
    }
    ::usleep(10000);
  }
}

Child::~Child() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    wait_exit(kStopLimitNs, status);
  }
}

uint64_t Child::write_bytes() const { return proc_field(proc_file(pid_, "io"), "write_bytes:"); }

bool Child::wait_exit(double limit_ns, int& status) {
  double deadline = now_ns(CLOCK_MONOTONIC) + limit_ns;
  for (;;) {
    pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      pid_ = -1;
      return true;
    }
    if (done < 0 && errno != EINTR) throw std::runtime_error("waitpid: " + std::string(std::strerror(errno)));
    if (now_ns(CLOCK_MONOTONIC) >= deadline) return false;
    ::usleep(5000);
  }
}

void Child::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  if (!wait_exit(kStopLimitNs, status)) {
    throw std::runtime_error(spec_.name + " did not exit within 20 s of SIGTERM");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(spec_.name + " ended with " + describe_status(status) + " after SIGTERM:\n" +
                             log_tail());
  }
}

std::string Child::log_tail() const {
  std::ifstream in(spec_.log);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  if (all.size() > kLogTailBytes) all = "..." + all.substr(all.size() - kLogTailBytes);
  return all.empty() ? "  (its log " + spec_.log + " is empty)\n" : all;
}

}  // namespace aup::bench::peers

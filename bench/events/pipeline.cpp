#include "bench/events/pipeline.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "bench/common/spawn_actions.h"
#include "bench/common/measure.h"

extern char** environ;

namespace aup::bench::events {

namespace {

double ns(const timeval& tv) { return static_cast<double>(tv.tv_sec) * 1e9 + static_cast<double>(tv.tv_usec) * 1e3; }

// Owns a file descriptor; closes it once.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

pid_t spawn(const std::vector<std::string>& argv, const SpawnActions& actions) {
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& s : copy) args.push_back(s.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], actions.get(), nullptr, args.data(), environ);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  return pid;
}

// Waits for `pid`; throws unless it exited with status 0.
rusage wait_ok(pid_t pid, const std::string& name) {
  int status = 0;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) throw std::runtime_error("wait4: " + std::string(std::strerror(errno)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(name + " failed (status " + std::to_string(status) + ")");
  }
  return ru;
}

}  // namespace

Timing run(const Command& c) {
  Fd out(::open(c.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (out.get() < 0) throw std::runtime_error("cannot open " + c.output);
  Timing t;
  double start = now_ns(CLOCK_MONOTONIC);
  pid_t producer = -1;
  pid_t consumer = -1;
  if (c.through_pipe) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
    Fd read_end(p[0]), write_end(p[1]);
    SpawnActions pa;
    pa.dup2(write_end.get(), 1);
    producer = spawn({"cat", c.input}, pa);
    SpawnActions ca;
    ca.dup2(read_end.get(), 0);
    ca.dup2(out.get(), 1);
    consumer = spawn(c.consumer, ca);
  } else {
    Fd in(::open(c.input.c_str(), O_RDONLY | O_CLOEXEC));
    if (in.get() < 0) throw std::runtime_error("cannot open " + c.input);
    SpawnActions ca;
    ca.dup2(in.get(), 0);
    ca.dup2(out.get(), 1);
    consumer = spawn(c.consumer, ca);
  }
  rusage ru = wait_ok(consumer, c.consumer[0]);
  if (producer > 0) wait_ok(producer, "cat");
  t.wall_ns = now_ns(CLOCK_MONOTONIC) - start;
  t.consumer_user_ns = ns(ru.ru_utime);
  t.consumer_cpu_ns = ns(ru.ru_utime) + ns(ru.ru_stime);
  t.consumer_max_rss_kb = ru.ru_maxrss;
  return t;
}

}  // namespace aup::bench::events

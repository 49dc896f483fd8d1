#include "bench/server/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "bench/common/spawn_actions.h"
#include "bench/common/measure.h"
#include "bench/common/proc.h"

extern char** environ;

namespace aup::bench::server {

namespace {

// Starting means compiling the module and opening (creating) the store:
// milliseconds; this only bounds a server that never gets there.
constexpr auto kStartLimit = std::chrono::seconds(60);
// SIGTERM answers what is in flight and exits; the server gives slow
// clients at most a few seconds, so this is generous.
constexpr double kStopLimitNs = 20e9;
// Kept for an error message; a server that prints more is broken anyway.
constexpr size_t kMaxKeptLines = 200;

std::vector<std::string> server_argv(const ServerConfig& c) {
  std::vector<std::string> argv;
  if (!c.cpus.empty()) argv = {"taskset", "-c", c.cpus};
  argv.insert(argv.end(), {c.aup, "run", c.module, "--listen", "unix:" + c.socket, "--io-threads",
                           std::to_string(c.io_threads), "--stats"});
  if (c.data_dir.empty()) {
    argv.push_back("--memory");
  } else {
    argv.push_back("--data");
    argv.push_back(c.data_dir);
  }
  if (c.tcp) argv.insert(argv.end(), {"--listen", ":0"});
  if (c.http) argv.insert(argv.end(), {"--listen", "http://:0"});
  argv.insert(argv.end(), c.extra_args.begin(), c.extra_args.end());
  return argv;
}

// stdin and stdout are /dev/null; stderr is `err_fd`. Returns the pid.
// argv[0] without a slash ("taskset") is looked up in PATH.
pid_t spawn(const std::vector<std::string>& argv, int err_fd) {
  SpawnActions actions;
  actions.open(0, "/dev/null", O_RDONLY, 0);
  actions.open(1, "/dev/null", O_WRONLY, 0);
  actions.dup2(err_fd, 2);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& s : copy) args.push_back(s.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], actions.get(), nullptr, args.data(), environ);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  return pid;
}

// The number after "KEY": in a --stats line; 0 when absent.
double field(const std::string& line, const char* key) {
  std::string quoted = std::string("\"") + key + "\":";
  size_t at = line.find(quoted);
  return at == std::string::npos ? 0 : std::strtod(line.c_str() + at + quoted.size(), nullptr);
}

StatsLine parse_stats(const std::string& line) {
  StatsLine s;
  s.at_ns = now_ns(CLOCK_MONOTONIC);
  s.events_per_s = field(line, "events_per_s");
  s.batch = field(line, "batch");
  s.commit_p50_us = field(line, "commit_p50_us");
  s.commit_p99_us = field(line, "commit_p99_us");
  s.owner_busy = field(line, "owner_busy");
  return s;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

}  // namespace

ServerProcess::ServerProcess(const ServerConfig& config) {
  listeners_ = 1 + (config.tcp ? 1 : 0) + (config.http ? 1 : 0);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
  try {
    pid_ = spawn(server_argv(config), p[1]);
  } catch (...) {
    ::close(p[0]);
    ::close(p[1]);
    throw;
  }
  ::close(p[1]);  // the server holds the only write end: EOF when it exits
  reader_ = std::thread([this, fd = p[0]] { read_stderr(fd); });
  bool ready = false, ended = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kStartLimit, [&] { return listening_ || eof_; });
    ready = listening_;
    ended = eof_;
  }
  if (!ready) {
    std::string why = "aup run --listen did not listen within 60 s:\n";
    if (ended) {
      std::optional<int> status = wait_exit(kStopLimitNs);
      why = "aup run --listen ended (" + (status ? describe_status(*status) : "stderr closed") +
            ") before it listened:\n";
    }
    why += stderr_text();
    abandon();  // the destructor does not run for a throwing constructor
    throw std::runtime_error(why);
  }
}

ServerProcess::~ServerProcess() { abandon(); }

void ServerProcess::abandon() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (reader_.joinable()) reader_.join();
}

std::optional<int> ServerProcess::wait_exit(double limit_ns) {
  double deadline = now_ns(CLOCK_MONOTONIC) + limit_ns;
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid_, &status, WNOHANG)) == 0 || (done < 0 && errno == EINTR)) {
    if (now_ns(CLOCK_MONOTONIC) > deadline) return std::nullopt;
    ::usleep(5000);
  }
  if (done < 0) throw std::runtime_error("waitpid: " + std::string(std::strerror(errno)));
  pid_ = -1;
  return status;
}

void ServerProcess::read_stderr(int fd) {
  std::string pending;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      take_line(pending.substr(0, nl));
      pending.erase(0, nl + 1);
    }
  }
  if (!pending.empty()) take_line(pending);
  ::close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  eof_ = true;
  cv_.notify_all();
}

void ServerProcess::take_line(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (line.rfind("aup: listening on ", 0) == 0) {
    announced_.push_back(line.substr(18));
    listening_ = announced_.size() == listeners_;
    cv_.notify_all();
  } else if (line.rfind("aup: stats {", 0) == 0) {
    stats_.push_back(parse_stats(line));
  } else if (lines_.size() < kMaxKeptLines) {
    lines_.push_back(line);
  }
}

std::string ServerProcess::stderr_text() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string text;
  for (const std::string& l : lines_) text += "  " + l + "\n";
  return text.empty() ? "  (nothing on stderr)\n" : text;
}

uint16_t ServerProcess::port(const std::string& prefix) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string want = prefix + "127.0.0.1:";
  for (const std::string& a : announced_) {
    if (a.rfind(want, 0) == 0) return static_cast<uint16_t>(std::stoul(a.substr(want.size())));
  }
  return 0;
}

CpuTimes ServerProcess::cpu() const {
  ProcessCpu c = process_cpu(pid_);
  return CpuTimes{c.user_ns, c.system_ns};
}

std::vector<StatsLine> ServerProcess::stats_between(double from_ns, double to_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StatsLine> out;
  for (const StatsLine& s : stats_) {
    if (s.at_ns >= from_ns && s.at_ns <= to_ns) out.push_back(s);
  }
  return out;
}

void ServerProcess::stop() {
  if (pid_ <= 0) return;
  pid_t pid = pid_;
  ::kill(pid_, SIGTERM);
  std::optional<int> status = wait_exit(kStopLimitNs);
  if (!status) {
    throw std::runtime_error("aup run --listen (pid " + std::to_string(pid) + ") did not exit within 20 s of SIGTERM");
  }
  if (reader_.joinable()) reader_.join();
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    throw std::runtime_error("aup run --listen ended with " + describe_status(*status) + " after SIGTERM:\n" +
                             stderr_text());
  }
}

}  // namespace aup::bench::server

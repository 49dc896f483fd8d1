#include "cli/client.h"

#include <fmt/format.h>
#include <netdb.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/json.h"
#include "runtime/listener.h"

extern char** environ;

namespace aup::cli {

namespace {
std::string named_primary(std::string_view answer);
}  // namespace

Client::~Client() {
  if (write_fd_ >= 0 && write_fd_ != read_fd_) ::close(write_fd_);
  if (read_fd_ >= 0) ::close(read_fd_);
  if (child_ > 0) ::waitpid(child_, nullptr, 0);  // it exits at the end of its input
}

bool Client::spawn(const std::vector<std::string>& argv, std::string& error) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
    error = fmt::format("cannot make a pipe: {}", std::strerror(errno));
    return false;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  // A process group of its own: a Ctrl-C at the terminal signals the
  // terminal's foreground group, and the child (which holds a --memory
  // shell's whole state) must not die of a key meant for the shell. It
  // ends when its stdin closes, whatever ends the shell.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    error = fmt::format("cannot start {}: {}", argv[0], std::strerror(rc));
    return false;
  }
  child_ = pid;
  write_fd_ = in[1];
  read_fd_ = out[0];
  address_ = "aup run";
  return true;
}

int Client::child_exit_status() {
  if (child_ <= 0) return -1;
  // Its stdout closed: it is exiting, if it has not yet; a second at most.
  for (int tries = 0; tries < 100; ++tries) {
    int status = 0;
    pid_t got = ::waitpid(child_, &status, WNOHANG);
    if (got == child_) {
      child_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (got < 0) return -1;
    ::usleep(10'000);
  }
  return -1;
}

bool Client::connect(const std::string& addresses, std::string& error) {
  std::string failures;
  for (std::string_view rest = addresses; !rest.empty();) {
    size_t comma = rest.find(',');
    std::string one(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    std::string why;
    if (connect_one(one, why)) return true;
    failures += (failures.empty() ? "" : "; ") + why;
  }
  error = failures.empty() ? "no address given" : failures;
  return false;
}

bool Client::connect_one(const std::string& address, std::string& error) {
  close_connection();
  runtime::ListenAddress a;
  if (!runtime::parse_listen_address(address, a, error)) return false;
  address_ = address;
  read_fd_ = write_fd_ = runtime::connect_to(a, address, error);
  http_.reset();
  if (a.http) {
    http_host_ = fmt::format("{}:{}", a.host, a.port);
    http_ = std::make_unique<runtime::HttpAnswerReader>();
  }
  return read_fd_ >= 0;
}

void Client::close_connection() {
  if (child_ > 0) return;  // a child's pipes are kept
  if (read_fd_ >= 0) ::close(read_fd_);
  read_fd_ = write_fd_ = -1;
  buffered_.clear();
}

namespace {

// The primary a not_primary answer names ("" when it is no such answer).
std::string named_primary(std::string_view answer) {
  runtime::JsonDoc doc;
  std::string why;
  if (!doc.parse(answer, why) || doc.node(doc.root()).kind != runtime::JsonNode::Kind::Object) return "";
  uint32_t e = doc.member(doc.root(), "error");
  uint32_t code = e ? doc.member(e, "code") : 0, primary = e ? doc.member(e, "primary") : 0;
  if (!code || doc.node(code).str != "not_primary" || !primary) return "";
  return std::string(doc.node(primary).str);
}

}  // namespace

bool Client::exchange(const std::string& line, std::chrono::milliseconds timeout, std::string& answer,
                      std::string& error) {
  // A replica refuses an event before it runs: sending it to the primary
  // the refusal names is safe, a few times (a failover may be under way).
  for (int hop = 0;; ++hop) {
    if (!exchange_once(line, timeout, answer, error)) return false;
    std::string primary = child_ > 0 ? std::string() : named_primary(answer);
    if (primary.empty() || primary == address_ || hop == kMaxHops) return true;
    std::string why;
    if (!connect_one(primary, why)) return true;  // the refusal stands: it says where to go
  }
}

bool Client::exchange_once(const std::string& line, std::chrono::milliseconds timeout, std::string& answer,
                           std::string& error) {
  std::string out;
  if (!http_) {
    out = line + "\n";
  } else if (!runtime::http_request_for_line(line, http_host_, out, error)) {
    error = fmt::format("{}: not sent: {}", address_, error);
    return false;
  }
  return send_all(out, error) && read_line(timeout, answer, error);
}

bool Client::send_all(const std::string& out, std::string& error) {
  for (size_t sent = 0; sent < out.size();) {
    ssize_t n = ::write(write_fd_, out.data() + sent, out.size() - sent);  // SIGPIPE is ignored (call.cpp)
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = fmt::format("{}: not sent: {}", address_, std::strerror(errno));
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  return true;
}

bool Client::read_line(std::chrono::milliseconds timeout, std::string& answer, std::string& error) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (http_) {
      int status = 0;
      if (!http_->feed(buffered_, error)) {
        error = fmt::format("{}: sent, but {} (perhaps applied)", address_, error);
        return false;
      }
      buffered_.clear();
      if (http_->next(status, answer)) {
        if (!answer.empty() && answer.back() == '\n') answer.pop_back();
        return true;
      }
    } else if (size_t nl = buffered_.find('\n'); nl != std::string::npos) {
      answer = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return true;
    }
    if (!read_more(deadline, timeout, error)) return false;
  }
}

bool Client::read_more(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds timeout,
                       std::string& error) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{read_fd_, POLLIN, 0};
    int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      error = fmt::format("{}: sent, but no answer within {} ms (perhaps applied)", address_, timeout.count());
      return false;
    }
    char buf[65536];
    ssize_t n = ready < 0 ? -1 : ::read(read_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = fmt::format("{}: sent, but the connection {} before the answer (perhaps applied)", address_,
                          n == 0 ? "closed" : std::strerror(errno));
      return false;
    }
    buffered_.append(buf, static_cast<size_t>(n));
    return true;
  }
}

}  // namespace aup::cli

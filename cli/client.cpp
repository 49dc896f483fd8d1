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

#include "runtime/listener.h"

extern char** environ;

namespace aup::cli {

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
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
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

bool Client::connect(const std::string& address, std::string& error) {
  runtime::ListenAddress a;
  if (!runtime::parse_listen_address(address, a, error)) return false;
  address_ = address;
  read_fd_ = write_fd_ = runtime::connect_to(a, address, error);
  if (a.http) {
    http_host_ = fmt::format("{}:{}", a.host, a.port);
    http_ = std::make_unique<runtime::HttpAnswerReader>();
  }
  return read_fd_ >= 0;
}

bool Client::exchange(const std::string& line, std::chrono::milliseconds timeout, std::string& answer,
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

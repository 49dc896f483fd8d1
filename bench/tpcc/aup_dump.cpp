#include "bench/tpcc/aup_dump.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

extern char** environ;

namespace aup::tpcc {

namespace {

// A dump row is under 1,000 bytes; a line this long means replay printed
// something else, and reading on would only grow the buffer.
constexpr size_t kMaxDumpLineBytes = 1 << 20;
// replay's stderr is a usage or damage message; kept for the error.
constexpr size_t kMaxStderrBytes = 16 * 1024;

std::string errno_text() { return std::strerror(errno); }

// A pipe whose ends close when it goes.
struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (::pipe2(fd, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + errno_text());
  }
  ~Pipe() {
    close_end(0);
    close_end(1);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

// A child process: killed and reaped if it is still running when this goes
// (an exception while reading its output).
class Child {
 public:
  // Starts argv with stdin /dev/null, stdout and stderr the write ends given.
  Child(const std::vector<std::string>& argv, int out_fd, int err_fd) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
    std::vector<std::string> copy = argv;
    std::vector<char*> args;
    for (std::string& s : copy) args.push_back(s.data());
    args.push_back(nullptr);
    int rc = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error(fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Waits for the end; the wait status.
  int wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0) {
      if (errno != EINTR) throw std::runtime_error("waitpid: " + errno_text());
    }
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
};

// Reads the child's stdout (`out`) and stderr (`err`) to their ends,
// handing every whole stdout line to `each` and keeping the start of
// stderr in `err_text`.
void read_output(int out, int err, std::string& err_text, const std::function<void(std::string_view)>& each) {
  std::string pending;
  char buf[64 * 1024];
  pollfd fds[2] = {{out, POLLIN, 0}, {err, POLLIN, 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("poll: " + errno_text());
    }
    for (pollfd& p : fds) {
      if (p.fd < 0 || p.revents == 0) continue;
      ssize_t n = ::read(p.fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        p.fd = -1;  // poll skips negative descriptors
        continue;
      }
      if (&p == &fds[1]) {
        size_t room = kMaxStderrBytes - std::min(kMaxStderrBytes, err_text.size());
        err_text.append(buf, std::min(static_cast<size_t>(n), room));
        continue;
      }
      pending.append(buf, static_cast<size_t>(n));
      size_t begin = 0;
      for (size_t nl; (nl = pending.find('\n', begin)) != std::string::npos; begin = nl + 1) {
        each(std::string_view(pending).substr(begin, nl - begin));
      }
      pending.erase(0, begin);
      if (pending.size() > kMaxDumpLineBytes) {
        throw std::runtime_error(fmt::format("aup replay printed a line longer than {} bytes", kMaxDumpLineBytes));
      }
    }
  }
  if (!pending.empty()) throw std::runtime_error("aup replay's output ends in the middle of a line");
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("signal {}", WTERMSIG(status));
  return fmt::format("wait status {}", status);
}

// One table's rows, ascending by key.
TableRows dump_table(const std::string& aup, const std::string& store_dir, const TableSpec& spec) {
  std::vector<std::string> argv{aup, "replay", "--data", store_dir, "--dump", std::string(spec.name)};
  Pipe out, err;
  Child child(argv, out.fd[1], err.fd[1]);
  out.close_end(1);  // the child holds the only write ends: EOF when it exits
  err.close_end(1);
  TableRows table;
  std::string err_text;
  DumpRowReader reader(spec);
  read_output(out.fd[0], err.fd[0], err_text, [&](std::string_view line) {
    table.rows.push_back(reader.read(line));
    size_t n = table.rows.size();
    if (n > 1 && !key_less(spec, table.rows[n - 2], table.rows[n - 1])) {
      throw std::runtime_error(fmt::format("aup replay --dump {}: the key of row {} does not follow row {}'s",
                                           spec.name, n, n - 1));
    }
  });
  int status = child.wait();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(fmt::format("aup replay --data {} --dump {} ended with {}:\n{}", store_dir, spec.name,
                                         describe_status(status), err_text));
  }
  return table;
}

}  // namespace

DumpRowReader::DumpRowReader(const TableSpec& spec)
    : spec_(spec), what_(fmt::format("a row of `aup replay --dump {}`", spec.name)) {}

Row DumpRowReader::read(std::string_view line) {
  json_.parse(line, what_);
  const runtime::JsonNode& object = json_.node(json_.root());
  if (object.count != spec_.columns.size()) {
    json_.fail(fmt::format("{} fields, the table has {} columns", object.count, spec_.columns.size()));
  }
  Row row;
  row.reserve(spec_.columns.size());
  uint32_t key = json_.root() + 1;  // members: the key's node, then the value's (json.h)
  for (const ColumnSpec& column : spec_.columns) {
    if (json_.node(key).str != column.name) json_.fail(fmt::format("expected `{}` here", column.name));
    if (column.kind == ColumnKind::text) {
      row.emplace_back(std::string(json_.text(key + 1)));
    } else {
      row.emplace_back(json_.whole(key + 1));
    }
    key = json_.node(key + 1).next;
  }
  return row;
}

State dump_store(const std::string& aup, const std::string& store_dir) {
  State state;
  const auto& specs = table_specs();
  for (int t = 0; t < kTables; ++t) state.tables[t] = dump_table(aup, store_dir, specs[t]);
  return state;
}

}  // namespace aup::tpcc

// A client's end of the line protocol (docs/protocol.md): one connection to
// a running `aup run --listen` server, a request line out, its answer line
// back. Over HTTP (`http://HOST:PORT`) the request line goes out as the
// request for its route and the answer line is the response's body
// (runtime/http.h), so callers see the same lines either way. Blocking, one request at a time: what `aup call` and `aup shell`
// need, not a load generator (bench/server has that). `aup shell MODULE`
// talks the same protocol to an `aup run` child over pipes, so a store
// opened by the shell goes through the same request pipeline as any.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/http.h"

namespace aup::cli {

class Client {
 public:
  Client() = default;
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Connects to the first of `addresses` that answers: one address as
  // --listen spells it (unix:PATH, HOST:PORT, :PORT, http://HOST:PORT), or
  // several with a comma between (a cluster's nodes); false with a message
  // that names each address and the reason.
  bool connect(const std::string& addresses, std::string& error);
  // The address connected to now.
  const std::string& address() const { return address_; }
  // Starts `argv` (an `aup run` on stdin) as a child and talks to it over
  // its stdin and stdout; its stderr is ours. The child ends when this
  // does (its stdin closes: it commits, answers and exits).
  // The child runs in a process group of its own (a Ctrl-C typed at the
  // shell's terminal does not reach it).
  bool spawn(const std::vector<std::string>& argv, std::string& error);
  bool spawned() const { return child_ > 0; }
  // Once the child has closed its stdout: its exit status (128 + the
  // signal that ended it), reaped; -1 if it is still running.
  int child_exit_status();
  // Sends `line` (a newline is added) and reads its answer line (without
  // the newline); false with a message when the connection fails, closes
  // before the answer, or `timeout` passes without one. An answer
  // `not_primary` that names the primary (a replica's: nothing was run) is
  // followed: the line is sent there, up to kMaxHops times, and that
  // connection kept.
  bool exchange(const std::string& line, std::chrono::milliseconds timeout, std::string& answer, std::string& error);
  static constexpr int kMaxHops = 3;

 private:
  bool connect_one(const std::string& address, std::string& error);
  void close_connection();
  bool exchange_once(const std::string& line, std::chrono::milliseconds timeout, std::string& answer,
                     std::string& error);
  bool read_line(std::chrono::milliseconds timeout, std::string& answer, std::string& error);
  bool send_all(const std::string& bytes, std::string& error);
  // Reads more of the answer within `deadline`: false with a message.
  bool read_more(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds timeout,
                 std::string& error);

  int read_fd_ = -1;
  int write_fd_ = -1;  // the same socket as read_fd_, or the child's stdin
  int child_ = -1;
  std::string address_;
  std::string buffered_;  // bytes read and not yet taken as an answer
  // HTTP: the Host header, and the reader of the server's responses.
  std::string http_host_;
  std::unique_ptr<runtime::HttpAnswerReader> http_;
};

}  // namespace aup::cli

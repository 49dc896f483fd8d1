// The client side of the request protocol on a Unix socket (or on TCP, or
// over HTTP): a connection that writes request bytes and waits for answer
// lines (in poll: bench/server/wait_input.h), and the bank's set-up and
// final check, which go through it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace aup::runtime {
class HttpAnswerReader;
}

namespace aup::bench::server {

class Connection {
 public:
  // Connects to the Unix socket `path`; throws std::runtime_error.
  explicit Connection(const std::string& path);
  // Connects to 127.0.0.1:`port`, speaking the line protocol or HTTP (then
  // the answers read are the responses' bodies, in order).
  Connection(uint16_t port, bool http);
  ~Connection();
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&&) = delete;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Writes all of `bytes`; throws when the server is gone.
  void send(std::string_view bytes);
  // Blocks until at least one whole answer line has arrived (or throws:
  // the server closed the connection, or said nothing for 30 s), then
  // calls `each` with every whole line read, without its newline.
  template <class F>
  void receive(const F& each) {
    fill();
    size_t begin = 0;
    for (size_t nl; (nl = in_.find('\n', begin)) != std::string::npos; begin = nl + 1) {
      each(std::string_view(in_).substr(begin, nl - begin));
    }
    in_.erase(0, begin);
  }

 private:
  // Reads until `in_` holds a newline.
  void fill();

  int fd_ = -1;
  std::string in_;  // bytes read and not yet taken as lines
  std::unique_ptr<runtime::HttpAnswerReader> http_;  // HTTP: reads the responses
};

// An answer that succeeded: the server writes `ok` right after the `id`,
// and these requests have no id.
inline bool is_ok(std::string_view answer) { return answer.rfind(R"({"ok":true)", 0) == 0; }

// Sends `requests` (one line each, newline included) in one write, then
// reads as many answers; returns them in order.
std::vector<std::string> exchange(Connection& c, const std::string& requests, size_t count);

// Opens accounts 1..accounts and deposits `deposit` into each, pipelined in
// chunks below the server's pending limit; throws on any answer but ok.
void open_accounts(const std::string& socket, uint32_t accounts, uint64_t deposit);

// What the bank says after a run: the transfers it made, and the sum of
// all balances (transfers move money, so it stays what was deposited).
struct BankTotals {
  double transfers_made = 0;
  double total = 0;
  double accounts = 0;
};
BankTotals read_totals(const std::string& socket);

}  // namespace aup::bench::server

// IPROTO, Tarantool's binary protocol, as much as the benchmark speaks: the
// 128-byte greeting, then CALL requests (a stored Lua function by name with
// an array of arguments) as the guest user, which needs no authentication.
// A packet is a MessagePack uint (its length), a header map and a body map.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/peers/stream.h"

namespace aup::bench::peers::iproto {

struct Response {
  uint64_t sync = 0;
  uint64_t code = 0;   // 0: ok; 0x8000 | error code otherwise
  std::string error;   // IPROTO_ERROR_24's message, when not ok
  std::string data;    // IPROTO_DATA as MessagePack (an array: what the function returned)
  bool ok() const { return code == 0; }
};

// One CALL packet: FUNCTION(ARGS...), with `args` already MessagePack
// (an array) and `sync` the id its response will carry.
std::string call_packet(uint64_t sync, std::string_view function, std::string_view args);

// One whole response at the front of `in`, and the bytes it took; nothing
// when only part of it has arrived. Throws std::runtime_error on a packet
// that is not IPROTO.
std::optional<Response> parse(std::string_view in, size_t& used);

// Reads and checks the greeting a new connection begins with.
void read_greeting(Stream& s);

// One client's own connection: a call, then its answer.
class Connection {
 public:
  explicit Connection(const std::string& socket);
  // Throws when the connection fails; a function that raised an error is
  // an answer (not ok), not an exception.
  Response call(std::string_view function, std::string_view args);
  // `count` CALLs of `function` pipelined in one write, with arguments
  // args[i]; throws on the first answer that is not ok.
  void pipeline(std::string_view function, const std::vector<std::string>& args);

 private:
  Stream stream_;
  uint64_t next_sync_ = 1;
};

// One connection that many threads call through at once, each waiting for
// the response with its own sync: net.box's usual use. A reader thread
// takes the responses off the socket and hands each to its caller.
// The threads that call must return before it is destroyed.
class SharedConnection {
 public:
  explicit SharedConnection(const std::string& socket);
  ~SharedConnection();
  SharedConnection(const SharedConnection&) = delete;
  SharedConnection& operator=(const SharedConnection&) = delete;

  // Any thread; throws when the connection failed or no answer came
  // within 30 s.
  Response call(std::string_view function, std::string_view args);

 private:
  // A caller waiting for its response.
  struct Waiter {
    std::optional<Response> response;
    std::condition_variable done;
  };
  void read_responses();

  Stream stream_;  // written by callers under write_mu_, read by reader_ only
  std::mutex write_mu_;
  std::mutex mu_;  // guards everything below
  uint64_t next_sync_ = 1;
  std::map<uint64_t, Waiter*> waiting_;
  std::string failure_;  // why the reader stopped; empty while it runs
  std::thread reader_;
};

}  // namespace aup::bench::peers::iproto

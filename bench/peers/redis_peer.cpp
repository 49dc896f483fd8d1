// Redis: redis-server with a generated config (a Unix socket, no TCP port,
// the append-only file fsync'ed before every reply, no RDB snapshots),
// accounts as keys `acct:N`, and the transfer as a Lua script run by
// EVALSHA: Redis runs a script alone, so check-then-apply is atomic.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "bench/peers/peer.h"
#include "bench/peers/resp.h"
#include "bench/peers/stream.h"

namespace aup::bench::peers {

namespace {

// KEYS: the two accounts and the counter of transfers made; ARGV[1]: the
// amount. A missing account or a short balance is refused before anything
// is written.
constexpr const char* kTransferScript = R"lua(
local amount = tonumber(ARGV[1])
local balance = tonumber(redis.call('GET', KEYS[1]))
if balance == nil or redis.call('EXISTS', KEYS[2]) == 0 then return redis.error_reply('no such account') end
if balance < amount then return redis.error_reply('insufficient funds') end
redis.call('DECRBY', KEYS[1], amount)
redis.call('INCRBY', KEYS[2], amount)
return redis.call('INCR', KEYS[3])
)lua";

// ARGV[1]: the number of accounts. Returns {sum of balances, accounts
// found, transfers made}.
constexpr const char* kTotalsScript = R"lua(
local sum, found = 0, 0
for i = 1, tonumber(ARGV[1]) do
  local v = redis.call('GET', 'acct:' .. i)
  if v then sum = sum + tonumber(v); found = found + 1 end
end
return {sum, found, tonumber(redis.call('GET', 'transfers') or '0')}
)lua";

// Accounts per MSET: a few kilobytes a command.
constexpr uint32_t kRedisFundChunk = 500;

std::string account_key(uint32_t id) { return "acct:" + std::to_string(id); }

// Every setting that matters here is written out, not left to defaults.
void write_config(const std::string& path, const std::string& socket, const std::string& data) {
  std::ofstream out(path);
  out << "port 0\n"
      << "unixsocket " << socket << "\n"
      << "unixsocketperm 700\n"
      << "dir " << data << "\n"
      << "daemonize no\n"
      << "logfile \"\"\n"
      << "save \"\"\n"
      << "appendonly yes\n"
      << "appendfsync always\n";
  if (!out) throw std::runtime_error("cannot write " + path);
}

resp::Reply checked(resp::Reply r, const std::string& what) {
  if (r.is_error()) throw std::runtime_error("redis: " + what + ": " + r.text);
  return r;
}

class RedisTeller : public Teller {
 public:
  RedisTeller(const std::string& socket, std::string sha) : stream_(socket), sha_(std::move(sha)) {}
  bool transfer(uint32_t from, uint32_t to, uint32_t amount, std::string& why) override {
    request_.clear();
    resp::append_command(request_, {"EVALSHA", sha_, "3", account_key(from), account_key(to), "transfers",
                                    std::to_string(amount)});
    stream_.send(request_);
    resp::Reply r = std::move(resp::receive(stream_, 1).front());
    if (r.type == ':') return true;
    why = r.is_error() ? r.text : "an answer of type " + std::string(1, r.type);
    return false;
  }

 private:
  Stream stream_;
  std::string sha_;
  std::string request_;
};

class RedisPeer : public Peer {
 public:
  RedisPeer(const std::string& redis_server, const PeerSetup& setup)
      : socket_(setup.dir + "/redis.sock"), child_(spec(redis_server, setup, socket_)), admin_(socket_) {
    transfer_sha_ = checked(resp::call(admin_, {"SCRIPT", "LOAD", kTransferScript}), "SCRIPT LOAD").text;
  }

  const Child& process() const override { return child_; }

  void fund(uint32_t accounts, uint64_t deposit) override {
    checked(resp::call(admin_, {"SET", "transfers", "0"}), "SET");
    std::string value = std::to_string(deposit);
    for (uint32_t first = 1; first <= accounts; first += kRedisFundChunk) {
      std::vector<std::string> args{"MSET"};
      for (uint32_t id = first; id <= std::min(accounts, first + kRedisFundChunk - 1); ++id) {
        args.push_back(account_key(id));
        args.push_back(value);
      }
      send_command(args);
    }
  }

  std::vector<std::unique_ptr<Teller>> tellers(uint32_t clients) override {
    std::vector<std::unique_ptr<Teller>> out;
    for (uint32_t i = 0; i < clients; ++i) out.push_back(std::make_unique<RedisTeller>(socket_, transfer_sha_));
    return out;
  }

  Totals totals() override {
    resp::Reply r = checked(resp::call(admin_, {"EVAL", kTotalsScript, "0", std::to_string(accounts_)}), "totals");
    if (r.items.size() != 3) throw std::runtime_error("redis: the totals script answered no triple");
    return Totals{static_cast<double>(r.items[2].integer), static_cast<double>(r.items[0].integer),
                  static_cast<double>(r.items[1].integer)};
  }

  void stop() override { child_.stop(); }

 private:
  static ChildSpec spec(const std::string& redis_server, const PeerSetup& setup, const std::string& socket) {
    std::string data = setup.dir + "/redis-data";
    std::filesystem::create_directories(data);
    std::string config = setup.dir + "/redis.conf";
    write_config(config, socket, data);
    return ChildSpec{"redis-server", {redis_server, config}, setup.cpus, setup.dir + "/redis.log", socket};
  }

  void send_command(const std::vector<std::string>& args) {
    checked(resp::call(admin_, std::vector<std::string_view>(args.begin(), args.end())), args.front());
    if (args.front() == "MSET") accounts_ += static_cast<uint32_t>(args.size() / 2);
  }

  std::string socket_;
  Child child_;
  Stream admin_;  // set-up and totals
  std::string transfer_sha_;
  uint32_t accounts_ = 0;  // funded, for the totals script
};

}  // namespace

std::unique_ptr<Peer> start_redis(const std::string& redis_server, const PeerSetup& setup) {
  return std::make_unique<RedisPeer>(redis_server, setup);
}

}  // namespace aup::bench::peers

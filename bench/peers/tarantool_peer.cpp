// Tarantool: `tarantool init.lua` with a generated script (a memtx space of
// accounts, the WAL fsync'ed on every write, stored functions), spoken to
// over IPROTO on a Unix socket as the guest user. A transfer is the stored
// function transfer(from, to, amount): one box.begin()/box.commit()
// transaction that checks and applies, answered once the WAL is synced.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "bench/peers/iproto.h"
#include "bench/peers/msgpack.h"
#include "bench/peers/peer.h"

namespace aup::bench::peers {

namespace {

// memtx keeps everything in this arena; 10,000 accounts take well under a
// megabyte.
constexpr uint64_t kMemtxBytes = 128 << 20;
// Accounts per fund() call: one transaction of this many inserts.
constexpr uint32_t kTarantoolFundChunk = 1000;

// {0} the work directory, {1} the socket, {2} memtx_memory. The schema and
// functions exist before the socket listens, so a server that accepts a
// connection is ready for every call.
constexpr const char* kInitScript = R"lua(-- written by peers_bench
box.cfg{{work_dir = '{0}', wal_mode = 'fsync', memtx_memory = {2}}}
local accounts = box.schema.space.create('accounts')
accounts:create_index('primary', {{type = 'tree', parts = {{1, 'unsigned'}}}})
local counters = box.schema.space.create('counters')
counters:create_index('primary', {{parts = {{1, 'unsigned'}}}})
counters:insert{{1, 0}}
box.schema.user.grant('guest', 'read,write,execute', 'universe')

-- Check, then apply both changes and count the transfer, in one transaction.
function transfer(from, to, amount)
  box.begin()
  local a, b = accounts:get(from), accounts:get(to)
  if a == nil or b == nil then box.rollback(); error('no such account') end
  if a[2] < amount then box.rollback(); error('insufficient funds') end
  accounts:update(from, {{{{'-', 2, amount}}}})
  accounts:update(to, {{{{'+', 2, amount}}}})
  counters:update(1, {{{{'+', 2, 1}}}})
  box.commit()
  return true
end

function fund(first, last, deposit)
  box.begin()
  for id = first, last do accounts:insert{{id, deposit}} end
  box.commit()
  return last - first + 1
end

-- The sum of balances, the accounts, the transfers made.
function totals()
  local sum, found = 0, 0
  for _, t in accounts:pairs() do sum = sum + t[2]; found = found + 1 end
  return sum, found, counters:get(1)[2]
end

box.cfg{{listen = 'unix/:{1}'}}
)lua";

std::string three_uints(uint64_t a, uint64_t b, uint64_t c) {
  std::string args;
  msgpack::put_array(args, 3);
  msgpack::put_uint(args, a);
  msgpack::put_uint(args, b);
  msgpack::put_uint(args, c);
  return args;
}

template <class Connection>
class TarantoolTeller : public Teller {
 public:
  explicit TarantoolTeller(Connection& c) : c_(c) {}
  bool transfer(uint32_t from, uint32_t to, uint32_t amount, std::string& why) override {
    iproto::Response r = c_.call("transfer", three_uints(from, to, amount));
    if (!r.ok()) why = fmt::format("error {:#x}: {}", r.code, r.error);
    return r.ok();
  }

 private:
  Connection& c_;
};

// A teller that owns its connection.
class OwnTeller : public Teller {
 public:
  explicit OwnTeller(const std::string& socket) : c_(socket), teller_(c_) {}
  bool transfer(uint32_t from, uint32_t to, uint32_t amount, std::string& why) override {
    return teller_.transfer(from, to, amount, why);
  }

 private:
  iproto::Connection c_;
  TarantoolTeller<iproto::Connection> teller_;
};

class TarantoolPeer : public Peer {
 public:
  TarantoolPeer(const std::string& tarantool, bool shared, const PeerSetup& setup)
      : socket_(setup.dir + "/tarantool.sock"), shared_(shared), child_(spec(tarantool, setup, socket_)),
        admin_(socket_) {}

  const Child& process() const override { return child_; }

  void fund(uint32_t accounts, uint64_t deposit) override {
    std::vector<std::string> calls;
    for (uint32_t first = 1; first <= accounts; first += kTarantoolFundChunk) {
      calls.push_back(three_uints(first, std::min(accounts, first + kTarantoolFundChunk - 1), deposit));
    }
    admin_.pipeline("fund", calls);
  }

  // The shared connection is made here, so it lives as long as this peer
  // and outlives the tellers the sweep drops before it asks for totals.
  std::vector<std::unique_ptr<Teller>> tellers(uint32_t clients) override {
    std::vector<std::unique_ptr<Teller>> out;
    if (shared_ && !shared_connection_) shared_connection_ = std::make_unique<iproto::SharedConnection>(socket_);
    for (uint32_t i = 0; i < clients; ++i) {
      if (shared_) {
        out.push_back(std::make_unique<TarantoolTeller<iproto::SharedConnection>>(*shared_connection_));
      } else {
        out.push_back(std::make_unique<OwnTeller>(socket_));
      }
    }
    return out;
  }

  Totals totals() override {
    iproto::Response r = admin_.call("totals", std::string(1, '\x90'));  // no arguments: an empty array
    if (!r.ok()) throw std::runtime_error("tarantool: totals() failed: " + r.error);
    msgpack::Reader data(r.data);
    if (data.array() != 3) throw std::runtime_error("tarantool: totals() returned no triple");
    Totals t;
    t.sum = data.number();
    t.accounts = data.number();
    t.transfers = data.number();
    return t;
  }

  void stop() override {
    shared_connection_.reset();
    child_.stop();
  }

 private:
  static ChildSpec spec(const std::string& tarantool, const PeerSetup& setup, const std::string& socket) {
    std::string script = setup.dir + "/init.lua";
    std::ofstream out(script);
    out << fmt::format(kInitScript, setup.dir, socket, kMemtxBytes);
    if (!out) throw std::runtime_error("cannot write " + script);
    out.close();
    return ChildSpec{"tarantool", {tarantool, script}, setup.cpus, setup.dir + "/tarantool.log", socket};
  }

  std::string socket_;
  bool shared_;
  Child child_;
  iproto::Connection admin_;  // set-up and totals
  std::unique_ptr<iproto::SharedConnection> shared_connection_;
};

}  // namespace

std::unique_ptr<Peer> start_tarantool(const std::string& tarantool, bool shared, const PeerSetup& setup) {
  return std::make_unique<TarantoolPeer>(tarantool, shared, setup);
}

}  // namespace aup::bench::peers

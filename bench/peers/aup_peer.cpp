// aup: `aup run examples/bank/bank.aup --data DIR --listen unix:PATH`, its
// `transfer` event in newline-delimited JSON; and the floor
// (floor_server.cpp), which speaks the same lines. Set-up and the final
// totals go through bench/server's client (open_accounts, read_totals).
#include <fmt/format.h>

#include "bench/peers/peer.h"
#include "bench/server/client.h"
#include "bench/peers/stream.h"

namespace aup::bench::peers {

namespace {

class AupTeller : public Teller {
 public:
  explicit AupTeller(const std::string& socket) : stream_(socket) {}
  bool transfer(uint32_t from, uint32_t to, uint32_t amount, std::string& why) override {
    request_.clear();
    fmt::format_to(std::back_inserter(request_),
                   "{{\"event\":\"transfer\",\"args\":{{\"from\":{},\"to\":{},\"amount\":{}}}}}\n", from, to, amount);
    stream_.send(request_);
    size_t nl;
    while ((nl = stream_.input().find('\n')) == std::string_view::npos) stream_.fill();
    std::string_view answer = stream_.input().substr(0, nl);
    bool ok = server::is_ok(answer);
    if (!ok) why = answer;
    stream_.consume(nl + 1);
    return ok;
  }

 private:
  Stream stream_;
  std::string request_;  // reused: no allocation per transfer
};

// A server spoken to in aup's line protocol: aup itself, or the floor
// (floor_server.cpp), which starts with the accounts already funded.
class LinePeer : public Peer {
 public:
  LinePeer(ChildSpec spec, bool funded_at_start)
      : socket_(spec.socket), funded_at_start_(funded_at_start), child_(std::move(spec)) {}

  const Child& process() const override { return child_; }
  void fund(uint32_t accounts, uint64_t deposit) override {
    if (!funded_at_start_) server::open_accounts(socket_, accounts, deposit);
  }
  std::vector<std::unique_ptr<Teller>> tellers(uint32_t clients) override {
    std::vector<std::unique_ptr<Teller>> out;
    for (uint32_t i = 0; i < clients; ++i) out.push_back(std::make_unique<AupTeller>(socket_));
    return out;
  }
  Totals totals() override {
    server::BankTotals t = server::read_totals(socket_);
    return Totals{t.transfers_made, t.total, t.accounts};
  }
  void stop() override { child_.stop(); }

 private:
  std::string socket_;
  bool funded_at_start_;
  Child child_;
};

}  // namespace

std::unique_ptr<Peer> start_aup(const AupConfig& config, const PeerSetup& setup) {
  std::string socket = setup.dir + "/aup.sock";
  std::vector<std::string> argv{config.aup, "run", config.bank, "--data", setup.dir + "/store", "--listen",
                                "unix:" + socket};
  if (config.io_threads >= 0) {
    argv.push_back("--io-threads");
    argv.push_back(std::to_string(config.io_threads));
  }
  return std::make_unique<LinePeer>(ChildSpec{"aup run", argv, setup.cpus, setup.dir + "/aup.log", socket}, false);
}

std::unique_ptr<Peer> start_floor(const std::string& program, uint32_t accounts, uint64_t deposit,
                                  const PeerSetup& setup) {
  std::string socket = setup.dir + "/floor.sock";
  std::vector<std::string> argv{program, socket, setup.dir + "/floor.log", std::to_string(accounts),
                                std::to_string(deposit)};
  return std::make_unique<LinePeer>(ChildSpec{"peers_floor", argv, setup.cpus, setup.dir + "/floor.out", socket},
                                    true);
}

}  // namespace aup::bench::peers

// aup: `aup run examples/bank/bank.aup --data DIR --listen unix:PATH`, its
// `transfer` event in newline-delimited JSON. Set-up and the final totals
// go through bench/server's client (open_accounts, read_totals).
#include <fmt/format.h>

#include "peer.h"
#include "server/client.h"
#include "stream.h"

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

class AupPeer : public Peer {
 public:
  AupPeer(const AupConfig& config, const PeerSetup& setup)
      : socket_(setup.dir + "/aup.sock"), child_(spec(config, setup, socket_)) {}

  const Child& process() const override { return child_; }
  void fund(uint32_t accounts, uint64_t deposit) override { server::open_accounts(socket_, accounts, deposit); }
  std::vector<std::unique_ptr<Teller>> tellers(uint32_t clients) override {
    std::vector<std::unique_ptr<Teller>> out;
    for (uint32_t i = 0; i < clients; ++i) out.push_back(line_teller(socket_));
    return out;
  }
  Totals totals() override { return line_totals(socket_); }
  void stop() override { child_.stop(); }

 private:
  static ChildSpec spec(const AupConfig& config, const PeerSetup& setup, const std::string& socket) {
    std::vector<std::string> argv{config.aup, "run", config.bank, "--data", setup.dir + "/store",
                                  "--listen", "unix:" + socket};
    if (config.io_threads >= 0) {
      argv.push_back("--io-threads");
      argv.push_back(std::to_string(config.io_threads));
    }
    return ChildSpec{"aup run", argv, setup.cpus, setup.dir + "/aup.log", socket};
  }

  std::string socket_;
  Child child_;
};

}  // namespace

std::unique_ptr<Teller> line_teller(const std::string& socket) { return std::make_unique<AupTeller>(socket); }

Totals line_totals(const std::string& socket) {
  server::BankTotals t = server::read_totals(socket);
  return Totals{t.transfers_made, t.total, t.accounts};
}

std::unique_ptr<Peer> start_aup(const AupConfig& config, const PeerSetup& setup) {
  return std::make_unique<AupPeer>(config, setup);
}

}  // namespace aup::bench::peers

// aup: `aup run examples/bank/bank.aup --data DIR --listen unix:PATH`, its
// `transfer` event in newline-delimited JSON; and the floor
// (floor_server.cpp), which speaks the same lines. Set-up and the final
// totals go through bench/server's client (open_accounts, read_totals).
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

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

std::unique_ptr<Teller> make_teller(const std::string& socket) { return std::make_unique<AupTeller>(socket); }

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
    for (uint32_t i = 0; i < clients; ++i) out.push_back(make_teller(socket_));
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

namespace aup::bench::peers {

namespace {

// A figure of a server's stats request (docs/operations.md), read by name
// from its answer line.
double stat(const std::string& socket, std::string_view name) {
  server::Connection c(socket);
  std::vector<std::string> answers = server::exchange(c, "{\"stats\":{}}\n", 1);
  std::string key = fmt::format("\"{}\":", name);
  size_t at = answers.empty() ? std::string::npos : answers[0].find(key);
  if (at == std::string::npos) throw std::runtime_error(fmt::format("no `{}` in the stats of {}", name, socket));
  return std::strtod(answers[0].c_str() + at + key.size(), nullptr);
}

// Until `done` holds or 60 s pass (then throws `what`).
template <class F>
void wait_for(const F& done, const std::string& what) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("timed out waiting until " + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

class ReplicatedPeer : public Peer {
 public:
  ReplicatedPeer(ChildSpec primary, ChildSpec replica)
      : primary_socket_(primary.socket), replica_socket_(replica.socket), primary_(std::move(primary)),
        replica_(std::move(replica)) {
    wait_for([this] { return stat(primary_socket_, "replicas_connected") >= 1; }, "the replica follows");
  }
  ~ReplicatedPeer() override { stop_sampling(); }
  const Child& process() const override { return primary_; }
  const Child* replica() const override { return &replica_; }
  void fund(uint32_t accounts, uint64_t deposit) override {
    server::open_accounts(primary_socket_, accounts, deposit);
    caught_up();
  }
  std::vector<std::unique_ptr<Teller>> tellers(uint32_t clients) override {
    std::vector<std::unique_ptr<Teller>> out;
    for (uint32_t i = 0; i < clients; ++i) out.push_back(make_teller(primary_socket_));
    sampling_ = true;
    sampler_ = std::thread([this] { sample(); });
    return out;
  }
  std::vector<LagSample> lag() override { return lag_; }
  Totals totals() override {
    stop_sampling();
    caught_up();
    server::BankTotals p = server::read_totals(primary_socket_), r = server::read_totals(replica_socket_);
    if (p.transfers_made != r.transfers_made || p.total != r.total || p.accounts != r.accounts) {
      throw std::runtime_error(fmt::format("the replica holds {} transfers and {} in {} accounts, the primary {}, "
                                           "{} in {}",
                                           r.transfers_made, r.total, r.accounts, p.transfers_made, p.total,
                                           p.accounts));
    }
    return Totals{p.transfers_made, p.total, p.accounts};
  }
  void stop() override {
    replica_.stop();
    primary_.stop();
  }

 private:
  void caught_up() {
    double want = stat(primary_socket_, "replication_save");
    wait_for([&] { return stat(replica_socket_, "replication_save") >= want; }, "the replica catches up");
  }
  void sample() {
    while (sampling_.load()) {
      lag_.push_back(LagSample{stat(replica_socket_, "replication_lag_entries"),
                               stat(replica_socket_, "replication_lag_seconds")});
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  void stop_sampling() {
    sampling_ = false;
    if (sampler_.joinable()) sampler_.join();
  }

  std::string primary_socket_, replica_socket_;
  Child primary_, replica_;
  std::atomic<bool> sampling_{false};
  std::thread sampler_;
  std::vector<LagSample> lag_;  // the sampler's until it is joined
};

}  // namespace

std::unique_ptr<Peer> start_aup_replicated(const AupConfig& config, uint32_t k, const std::string& replica_cpus,
                                           const PeerSetup& setup) {
  std::string primary = setup.dir + "/aup.sock", replica = setup.dir + "/replica.sock";
  std::vector<std::string> p{config.aup, "run", config.bank, "--data", setup.dir + "/store", "--listen",
                             "unix:" + primary, "--sync-replicas", std::to_string(k)};
  std::vector<std::string> r{config.aup, "run", config.bank, "--data", setup.dir + "/replica", "--listen",
                             "unix:" + replica, "--replica-of", "unix:" + primary};
  if (config.io_threads >= 0) {
    for (auto* argv : {&p, &r}) argv->insert(argv->end(), {"--io-threads", std::to_string(config.io_threads)});
  }
  ChildSpec ps{"aup run (primary)", p, setup.cpus, setup.dir + "/aup.log", primary};
  ChildSpec rs{"aup run (replica)", r, replica_cpus, setup.dir + "/replica.log", replica};
  return std::make_unique<ReplicatedPeer>(std::move(ps), std::move(rs));
}

}  // namespace aup::bench::peers

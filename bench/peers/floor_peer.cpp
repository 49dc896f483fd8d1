// The floor (floor_server.cpp): started with the accounts already funded,
// spoken to in aup's line protocol (aup_peer.cpp's teller and totals).
#include "peer.h"

namespace aup::bench::peers {

namespace {

class FloorPeer : public Peer {
 public:
  FloorPeer(const std::string& program, uint32_t accounts, uint64_t deposit, const PeerSetup& setup)
      : socket_(setup.dir + "/floor.sock"),
        child_(ChildSpec{"peers_floor",
                         {program, socket_, setup.dir + "/floor.log", std::to_string(accounts), std::to_string(deposit)},
                         setup.cpus, setup.dir + "/floor.out", socket_}) {}

  const Child& process() const override { return child_; }
  void fund(uint32_t, uint64_t) override {}  // funded when it started
  std::vector<std::unique_ptr<Teller>> tellers(uint32_t clients) override {
    std::vector<std::unique_ptr<Teller>> out;
    for (uint32_t i = 0; i < clients; ++i) out.push_back(line_teller(socket_));
    return out;
  }
  Totals totals() override { return line_totals(socket_); }
  void stop() override { child_.stop(); }

 private:
  std::string socket_;
  Child child_;
};

}  // namespace

std::unique_ptr<Peer> start_floor(const std::string& program, uint32_t accounts, uint64_t deposit,
                                  const PeerSetup& setup) {
  return std::make_unique<FloorPeer>(program, accounts, deposit, setup);
}

}  // namespace aup::bench::peers

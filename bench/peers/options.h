// What the peers benchmark is told: where the three servers' programs are,
// where their data goes, the shape of the load and the pinning. main.cpp
// fills it from the command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/common/program.h"
#include "bench/peers/peer.h"

namespace aup::bench::peers {

struct Options : RunOptions {
  Options() { reps = 3; }
  std::string aup;                                  // the aup executable
  std::string bank;                                 // examples/bank/bank.aup
  std::string redis_server = "/usr/bin/redis-server";
  std::string tarantool = "/usr/bin/tarantool";
  std::string floor;                                // peers_floor (floor_server.cpp)
  std::string data;                                 // every run's fresh directory goes inside
  std::string data_shown;  // --data as given, for the report (results name no checkout path)
  // In the order of the report; a system whose program is missing is
  // dropped from it before the runs (main.cpp says so).
  std::vector<std::string> systems{kAup, kRedis, kTarantoolShared, kTarantoolPerClient, kFloor};
  std::vector<std::string> skipped;                 // "redis: the Debian package redis-server is not installed"
  std::vector<uint32_t> clients{1, 16, 64};
  double seconds = 10;                              // the timed phase of one run
  double warmup = 2;                                // load before it
  double sync_seconds = 3;                          // the bare fdatasync loop, once per repetition
  uint32_t accounts = 10000;
  uint64_t deposit = 1000000;                       // each account's: no transfer of 1 can run short
  int io_threads = -1;                              // aup's --io-threads; -1: its default
  std::string server_cpus = "0";                    // taskset -c for every server; empty: not pinned
  std::string client_cpus = "1";                    // this program's CPUs; empty: not pinned
  // aup-k0 and aup-k1's replica: the CPUs it runs on (a replica is another
  // machine's in real use; here it shares the load generator's by default).
  std::string replica_cpus = "1";
  std::string name = "peers";                       // results go to OUT/NAME.{json,md}
};

}  // namespace aup::bench::peers

// `aup cluster status --cluster etcd://HOST:PORT[,...]/NAME`: every node of
// a cluster (runtime/cluster.h) as etcd lists it, and what each says of
// itself when asked (its stats: the replication_* gauges), a line each:
//
//   cluster bank: primary n2 (term 5); synchronous: n2, n3
//   node  address          role     term  save  lag  lag_ms
//   n1    127.0.0.1:19001  replica  5     412   0    0
//   n2    127.0.0.1:19002  primary  5     412   -    -
//
// Exit status: 0 a primary leads and every node answered, 1 not (no
// primary, or a node that does not answer), 2 usage, or etcd unreachable.
#pragma once

#include <cstdio>
#include <string>

namespace aup::cli {

struct ClusterStatusOptions {
  std::string cluster;
  bool json = false;  // one JSON object instead of the table
  double timeout_seconds = 5;
};

int cluster_status(const ClusterStatusOptions& o, std::FILE* out, std::FILE* err);

}  // namespace aup::cli

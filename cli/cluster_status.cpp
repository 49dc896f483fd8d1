#include "cli/cluster_status.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <optional>
#include <vector>

#include "cli/call.h"
#include "cli/client.h"
#include "compiler/driver.h"
#include "runtime/cluster.h"
#include "runtime/etcd.h"
#include "runtime/json.h"

namespace aup::cli {

namespace {

using runtime::JsonDoc;
using runtime::JsonNode;

struct NodeStatus {
  std::string node, address;
  bool answered = false;
  std::string why;  // when it did not
  double role = 0, term = 0, save = 0, lag = 0, lag_seconds = 0;
};

// A member of the stats result, or 0.
double figure(const JsonDoc& doc, std::string_view name) {
  uint32_t v = doc.member(doc.root(), name);
  return v && doc.node(v).kind == JsonNode::Kind::Number ? doc.node(v).num : 0;
}

// What the node at `status.address` says of itself.
void ask(NodeStatus& status, double timeout_seconds) {
  Client client;
  std::string error, answer;
  auto timeout = std::chrono::milliseconds(static_cast<long long>(timeout_seconds * 1000));
  if (!client.connect(status.address, error) || !client.exchange("{\"stats\":{}}", timeout, answer, error)) {
    status.why = error;
    return;
  }
  Answer a = read_answer(answer);
  JsonDoc doc;
  if (!a.ok || !doc.parse(a.result, error)) {
    status.why = a.ok ? error : a.error;
    return;
  }
  status.answered = true;
  status.role = figure(doc, "replication_role");
  status.term = figure(doc, "replication_term");
  status.save = figure(doc, "replication_save");
  status.lag = figure(doc, "replication_lag_entries");
  status.lag_seconds = figure(doc, "replication_lag_seconds");
}

std::string role_name(double role) {
  return role == 1 ? "primary" : role == 2 ? "replica" : role == 3 ? "joining" : "alone";
}

// The nodes etcd lists (their advertise addresses), the leader's name and
// term, and the sync key's names. False with why etcd was not read.
bool read_cluster(const std::vector<std::string>& endpoints, const std::string& name, std::vector<NodeStatus>& nodes,
                  std::string& leader, int64_t& term, std::string& sync, std::string& error) {
  runtime::EtcdClient c(endpoints, 2000);
  std::string prefix = runtime::cluster_prefix(name);
  std::vector<runtime::EtcdKv> kvs;
  int64_t revision = 0;
  runtime::EtcdStatus st = c.get_prefix(prefix + "nodes/", kvs, revision);
  std::optional<runtime::EtcdLeader> l;
  if (st.ok()) st = c.leader(prefix + "leader", l);
  std::optional<runtime::EtcdKv> s;
  if (st.ok()) st = c.get(prefix + "sync", s);
  if (!st.ok()) {
    error = st.message;
    return false;
  }
  for (const runtime::EtcdKv& kv : kvs) {
    JsonDoc doc;
    std::string why;
    uint32_t a = doc.parse(kv.value, why) ? doc.member(doc.root(), "advertise") : 0;
    NodeStatus& n = nodes.emplace_back();
    n.node = kv.key.substr(prefix.size() + 6);  // after "nodes/"
    n.address = a ? std::string(doc.node(a).str) : "";
  }
  if (l) {
    JsonDoc doc;
    std::string why;
    uint32_t n = doc.parse(l->value, why) ? doc.member(doc.root(), "node") : 0;
    leader = n ? std::string(doc.node(n).str) : "?";
    term = l->rev;
  }
  if (s) {
    JsonDoc doc;
    std::string why;
    uint32_t list = doc.parse(s->value, why) ? doc.member(doc.root(), "nodes") : 0;
    for (uint32_t i = 0, k = list ? doc.first_child(list) : 0; list && i < doc.node(list).count; ++i, k = doc.after(k)) {
      sync += (sync.empty() ? "" : ", ") + std::string(doc.node(k).str);
    }
  }
  return true;
}

void print_table(std::FILE* out, const std::string& name, const std::string& leader, int64_t term,
                 const std::string& sync, const std::vector<NodeStatus>& nodes) {
  fmt::print(out, "cluster {}: {}{}\n", name,
             leader.empty() ? "no primary now" : fmt::format("primary {} (term {})", leader, term),
             sync.empty() ? "" : "; synchronous: " + sync);
  size_t w = 4, aw = 7;
  for (const NodeStatus& n : nodes) {
    w = std::max(w, n.node.size());
    aw = std::max(aw, n.address.size());
  }
  fmt::print(out, "{:<{}}  {:<{}}  {:<8} {:>6} {:>10} {:>8} {:>8}\n", "node", w, "address", aw, "role", "term", "save",
             "lag", "lag_ms");
  for (const NodeStatus& n : nodes) {
    if (!n.answered) {
      fmt::print(out, "{:<{}}  {:<{}}  unreachable: {}\n", n.node, w, n.address, aw, n.why);
      continue;
    }
    bool replica = n.role == 2;
    fmt::print(out, "{:<{}}  {:<{}}  {:<8} {:>6} {:>10} {:>8} {:>8}\n", n.node, w, n.address, aw, role_name(n.role),
               n.term, n.save, replica ? fmt::format("{}", n.lag) : "-",
               replica ? fmt::format("{:.0f}", n.lag_seconds * 1000) : "-");
  }
}

void print_json(std::FILE* out, const std::string& name, const std::string& leader, int64_t term,
                const std::vector<NodeStatus>& nodes) {
  std::string s = "{\"cluster\":";
  runtime::json_append_string(s, name);
  s += ",\"primary\":";
  if (leader.empty()) s += "null";
  else runtime::json_append_string(s, leader);
  s += fmt::format(",\"term\":{},\"nodes\":[", term);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeStatus& n = nodes[i];
    s += i ? ",{\"node\":" : "{\"node\":";
    runtime::json_append_string(s, n.node);
    s += ",\"address\":";
    runtime::json_append_string(s, n.address);
    if (n.answered) {
      s += fmt::format(",\"role\":\"{}\",\"term\":{},\"save\":{},\"lag_entries\":{},\"lag_ms\":{:.0f}}}",
                       role_name(n.role), n.term, n.save, n.lag, n.lag_seconds * 1000);
    } else {
      s += ",\"unreachable\":";
      runtime::json_append_string(s, n.why);
      s += '}';
    }
  }
  fmt::print(out, "{}]}}\n", s);
}

}  // namespace

int cluster_status(const ClusterStatusOptions& o, std::FILE* out, std::FILE* err) {
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> endpoints;
  std::string name, error;
  if (!runtime::parse_cluster_address(o.cluster, endpoints, name, error)) {
    fmt::print(err, "aup cluster status: {}\n", error);
    return kExitUsage;
  }
  std::vector<NodeStatus> nodes;
  std::string leader, sync;
  int64_t term = 0;
  if (!read_cluster(endpoints, name, nodes, leader, term, sync, error)) {
    fmt::print(err, "aup cluster status: cannot read the cluster {} from etcd: {}\n", name, error);
    return kExitUsage;
  }
  for (NodeStatus& n : nodes) ask(n, o.timeout_seconds);
  o.json ? print_json(out, name, leader, term, nodes) : print_table(out, name, leader, term, sync, nodes);
  bool all = std::all_of(nodes.begin(), nodes.end(), [](const NodeStatus& n) { return n.answered; });
  return !leader.empty() && all && !nodes.empty() ? kExitOk : kExitErrors;
}

}  // namespace aup::cli

#include "runtime/cluster.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "runtime/json.h"
#include "runtime/signals.h"
#include "storage/log_format.h"

namespace aup::runtime {

namespace {

// Each call to etcd (but a campaign's wait) gets this long an endpoint.
constexpr int kEtcdTimeoutMs = 1000;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What this node may not count on of its lease: a renewal is timed from
// when it was sent, and the clocks of etcd's members and this node run at
// slightly different rates.
int64_t margin_ms(int64_t ttl_ms) { return std::max<int64_t>(250, ttl_ms / 5); }

std::string json_text(std::string_view s) {
  std::string out;
  json_append_string(out, s);
  return out;
}

// A candidate's value: {"node":ID,"advertise":ADDRESS}.
bool read_leader_value(std::string_view value, std::string& node, std::string& advertise) {
  JsonDoc doc;
  std::string error;
  if (!doc.parse(value, error) || doc.node(doc.root()).kind != JsonNode::Kind::Object) return false;
  uint32_t n = doc.member(doc.root(), "node"), a = doc.member(doc.root(), "advertise");
  if (!n || !a || doc.node(n).kind != JsonNode::Kind::String || doc.node(a).kind != JsonNode::Kind::String) {
    return false;
  }
  node = doc.node(n).str;
  advertise = doc.node(a).str;
  return true;
}

// The sync key: {"term":T,"nodes":[ID,...]}.
bool read_sync_nodes(std::string_view value, std::vector<std::string>& nodes) {
  JsonDoc doc;
  std::string error;
  if (!doc.parse(value, error) || doc.node(doc.root()).kind != JsonNode::Kind::Object) return false;
  uint32_t list = doc.member(doc.root(), "nodes");
  if (!list || doc.node(list).kind != JsonNode::Kind::Array) return false;
  nodes.clear();
  for (uint32_t i = 0, k = doc.first_child(list); i < doc.node(list).count; ++i, k = doc.after(k)) {
    if (doc.node(k).kind != JsonNode::Kind::String) return false;
    nodes.emplace_back(doc.node(k).str);
  }
  return true;
}

bool valid_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

}  // namespace

bool parse_cluster_address(std::string_view url, std::vector<std::string>& endpoints, std::string& name,
                           std::string& error) {
  constexpr std::string_view kScheme = "etcd://";
  auto refuse = [&](std::string why) {
    error = fmt::format("--cluster {}: {}; the form is etcd://HOST:PORT[,HOST:PORT...]/NAME", url, why);
    return false;
  };
  if (url.substr(0, kScheme.size()) != kScheme) return refuse("not an etcd:// address");
  std::string_view rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return refuse("no cluster name after the endpoints");
  name = std::string(rest.substr(slash + 1));
  if (!valid_name(name)) return refuse("a cluster's name is letters, digits, `-`, `_` and `.`");
  endpoints.clear();
  for (std::string_view hosts = rest.substr(0, slash); !hosts.empty();) {
    size_t comma = hosts.find(',');
    std::string_view one = hosts.substr(0, comma);
    size_t colon = one.rfind(':');
    std::string_view port = colon == std::string_view::npos ? std::string_view() : one.substr(colon + 1);
    if (colon == 0 || port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return refuse(fmt::format("`{}` is not HOST:PORT", one));
    }
    endpoints.emplace_back(one);
    hosts = comma == std::string_view::npos ? std::string_view() : hosts.substr(comma + 1);
  }
  if (endpoints.empty()) return refuse("no etcd endpoint");
  return true;
}

std::string cluster_prefix(std::string_view name) { return fmt::format("/aup/{}/", name); }

Cluster::Cluster(ClusterOptions o, storage::Store& store, storage::Io& io, OwnerTasks& tasks,
                 StoreDurability& durability, Shipper& shipper, std::FILE* err, std::function<void()> restart)
    : o_(std::move(o)), prefix_(cluster_prefix(o_.name)), election_(prefix_ + "leader"),
      value_(fmt::format("{{\"node\":{},\"advertise\":{}}}", json_text(o_.node), json_text(o_.advertise))),
      store_(store), io_(io), tasks_(tasks), durability_(durability), shipper_(shipper), err_(err),
      restart_(std::move(restart)) {
  control_ = quiet_thread([this] { control(); });
}

Cluster::~Cluster() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  cancel_campaign_.store(true);
  control_.join();
  if (keepalive_.joinable()) keepalive_.join();
  if (campaign_.joinable()) campaign_.join();
  drop_follower();
  // Revoked, the lease takes this node's keys with it: its candidacy, and
  // its leadership, so another node is elected now rather than after the TTL.
  if (int64_t lease = lease_.load(); lease != 0) {
    EtcdClient c(o_.etcd, kEtcdTimeoutMs);
    c.revoke(lease);
  }
}

ReplicationFigures Cluster::figures() const {
  Role r = role();
  ReplicationFigures f;
  if (r == Role::Primary) {
    f = shipper_.figures(o_.sync_replicas, term());
    // Until its first batch the store's figures still say where it
    // stood when it opened, before it followed anyone.
    f.save = f.primary_save = static_cast<double>(floor_.load(std::memory_order_relaxed));
  } else {
    std::lock_guard<std::mutex> lock(follower_mu_);
    if (r == Role::Replica && follower_) f = follower_->figures();
    f.role = r == Role::Replica ? 2 : 3;
  }
  f.term = term();
  return f;
}

bool Cluster::may_answer() const {
  return role() == Role::Primary && now_ns() < valid_until_ns_.load(std::memory_order_acquire);
}

void Cluster::say(const std::string& line) {
  fmt::print(err_, "aup: {}\n", line);
  std::fflush(err_);
}

bool Cluster::wait_ms(int ms) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stop_; });
  return !stop_;
}

// Runs `task` on the owner thread and waits for it; false when stopping
// first (a task not yet run then never runs: the server has stopped).
bool Cluster::on_owner(std::function<void()> task) {
  struct Done {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto done = std::make_shared<Done>();
  tasks_.post([task = std::move(task), done] {
    task();
    std::lock_guard<std::mutex> lock(done->mu);
    done->done = true;
    done->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(done->mu);
  while (!done->done) {
    done->cv.wait_for(lock, std::chrono::milliseconds(kTickMs));
    std::lock_guard<std::mutex> stopping(mu_);
    if (stop_) return done->done;
  }
  return true;
}

// ---- the control loop ------------------------------------------------------------------

void Cluster::control() {
  EtcdClient c(o_.etcd, kEtcdTimeoutMs);
  bool said = false;
  while (!join(c)) {
    if (!said) say(fmt::format("cannot join the cluster {} through etcd at {}; trying again every second", o_.name,
                               fmt::join(o_.etcd, ",")));
    said = true;
    if (!wait_ms(1000)) return;
  }
  say(fmt::format("joined the cluster {} as node {} ({}), lease {:x} of {} s", o_.name, o_.node, o_.advertise,
                  lease_.load(), granted_ttl_ms_.load() / 1000));
  keepalive_ = quiet_thread([this] { keep_alive(); });
  while (wait_ms(kTickMs)) tick(c);
}

// A lease, and this node's key under it.
bool Cluster::join(EtcdClient& c) {
  int64_t sent = now_ns(), lease = 0, ttl = 0;
  if (!c.grant(o_.lease_ttl_seconds, lease, ttl).ok()) return false;
  int64_t ttl_ms = ttl * 1000;
  granted_ttl_ms_.store(ttl_ms);
  valid_until_ns_.store(sent + (ttl_ms - margin_ms(ttl_ms)) * 1000000);
  lease_.store(lease);
  std::string value = fmt::format("{{\"advertise\":{}}}", json_text(o_.advertise));
  return c.put(prefix_ + "nodes/" + o_.node, value, lease).ok();
}

void Cluster::keep_alive() {
  EtcdClient c(o_.etcd, kEtcdTimeoutMs);
  int64_t ttl_ms = granted_ttl_ms_.load();
  bool said = false;
  while (wait_ms(static_cast<int>(std::max<int64_t>(100, ttl_ms / 3)))) {
    int64_t sent = now_ns(), left = 0;
    EtcdStatus st = c.keepalive(lease_.load(), left);
    if (st.ok() && left > 0) {
      valid_until_ns_.store(sent + (ttl_ms - margin_ms(ttl_ms)) * 1000000, std::memory_order_release);
      said = false;
    } else if (st.error == EtcdError::Refused || (st.ok() && left == 0)) {
      lease_lost_.store(true);
      return;
    } else if (!said) {
      say(fmt::format("cannot renew the lease in etcd: {}", st.message));
      said = true;
    }
  }
}

void Cluster::tick(EtcdClient& c) {
  if (restarting()) return;
  if (lease_lost_.load()) {
    step_down("its lease in etcd ended");
    return;
  }
  std::optional<EtcdLeader> won;
  {
    std::lock_guard<std::mutex> lock(mu_);
    won.swap(won_);
  }
  if (won) take_over(c, *won);
  if (restarting()) return;
  role() == Role::Primary ? tick_primary(c) : tick_replica(c);
}

void Cluster::tick_replica(EtcdClient& c) {
  std::optional<EtcdLeader> l;
  if (c.leader(election_, l).ok()) {
    Leader who;
    if (!l) {
      no_primary();
    } else if (read_leader_value(l->value, who.node, who.advertise) && who.node != o_.node) {
      who.rev = l->rev;
      follow(who);
    }
    // This node's own name under another lease: its previous run's
    // candidacy, gone once that lease ends.
  }
  bool may = eligible(c);
  std::lock_guard<std::mutex> lock(mu_);
  if (!campaigning_ && may && !stop_) {
    if (campaign_.joinable()) campaign_.join();  // the last one has ended
    campaigning_ = true;
    cancel_campaign_.store(false);
    campaign_ = quiet_thread([this] { campaign(); });
  } else if (campaigning_ && !may) {
    cancel_campaign_.store(true);
  }
}

// Whether this node may take over: with --sync-replicas K ≥ 1, only one the
// primary named synchronous (or any, before a primary ever named one).
bool Cluster::eligible(EtcdClient& c) {
  if (store_.unavailable()) return false;  // its disk failed: it cannot begin a term
  if (o_.sync_replicas == 0) return caught_up_or_waited();
  std::optional<EtcdKv> kv;
  if (!c.get(prefix_ + "sync", kv).ok()) return false;
  if (!kv) return true;
  std::vector<std::string> nodes;
  return read_sync_nodes(kv->value, nodes) && std::find(nodes.begin(), nodes.end(), o_.node) != nodes.end();
}

// With K = 0 any node may take over, holding what it was sent. Not one
// still catching up with the primary it follows (a node started again,
// far behind): a node that caught up holds all but the last moments', and
// the entries a new primary lacks are lost. A cluster whose nodes are all
// behind is not left without a primary for good: after kLaggardWaitTtls
// TTLs with none, any node may take over.
bool Cluster::caught_up_or_waited() {
  {
    std::lock_guard<std::mutex> lock(follower_mu_);
    if (!follower_ || follower_->caught_up_once()) return true;
  }
  if (no_primary_since_ns_ == 0) return false;  // a primary leads: nothing to take over yet
  int64_t wait_ms = kLaggardWaitTtls * granted_ttl_ms_.load();
  if (now_ns() - no_primary_since_ns_ >= wait_ms * 1000000) return true;
  if (!said_laggard_) {
    say(fmt::format("this node has not caught up with the primary it followed: it takes over only if no other "
                    "node has in {} ms",
                    wait_ms));
    said_laggard_ = true;
  }
  return false;
}

void Cluster::campaign() {
  EtcdClient c(o_.etcd, kEtcdTimeoutMs);
  EtcdLeader won;
  EtcdStatus st = c.campaign(election_, value_, lease_.load(), won, &cancel_campaign_);
  std::lock_guard<std::mutex> lock(mu_);
  campaigning_ = false;
  if (st.ok()) won_ = won;
}

void Cluster::follow(const Leader& l) {
  term_.store(static_cast<uint32_t>(std::min<int64_t>(l.rev, storage::log_format::kMaxTerm)));
  bool refusal_stale = said_no_primary_;  // events were refused for want of a primary
  said_no_primary_ = false;
  no_primary_since_ns_ = 0;
  said_laggard_ = false;
  if (following_ == l.advertise) {
    if (refusal_stale) on_owner([this, a = l.advertise] { durability_.set_replica_of(a); });
    return;
  }
  drop_follower();
  on_owner([this, a = l.advertise] { durability_.set_replica_of(a); });
  shipper_.refuse_replicas(
      fmt::format("this node is a replica of {}: replicas follow the primary, {}", l.advertise, l.advertise));
  say(fmt::format("the cluster {} is led by node {} at {} (term {}): following it", o_.name, l.node, l.advertise,
                  l.rev));
  // A follower that must reopen the store (a cut, a copy) restarts the
  // node as a step down does.
  auto reopen = [this] {
    restarting_.store(true);
    role_.store(Role::Joining, std::memory_order_release);
    if (restart_) restart_();
  };
  auto next = std::make_unique<Follower>(l.advertise, store_, io_, tasks_, err_, reopen, o_.node);
  {
    std::lock_guard<std::mutex> lock(follower_mu_);
    follower_ = std::move(next);
  }
  following_ = l.advertise;
  role_.store(Role::Replica, std::memory_order_release);
}

// Stopped outside the lock (its thread may be waiting on the owner), then
// forgotten under it.
void Cluster::drop_follower() {
  std::unique_ptr<Follower> gone;
  {
    std::lock_guard<std::mutex> lock(follower_mu_);
    gone.swap(follower_);
  }
}

void Cluster::no_primary() {
  if (said_no_primary_) return;
  said_no_primary_ = true;
  no_primary_since_ns_ = now_ns();
  on_owner([this] {
    durability_.refuse_events(Code::Unavailable, fmt::format("the cluster {} has no primary now (an election is "
                                                             "under way): send it again shortly",
                                                             o_.name));
  });
  say(fmt::format("the cluster {} has no primary now", o_.name));
}

// ---- leading ---------------------------------------------------------------------------

void Cluster::take_over(EtcdClient& c, const EtcdLeader& won) {
  if (won.rev > storage::log_format::kMaxTerm || static_cast<uint64_t>(won.rev) <= store_.term()) {
    say(fmt::format("won the election, but its term {} is not past this store's, {}: not leading", won.rev,
                    store_.term()));
    c.resign(won);
    step_down("it cannot begin the term it was elected in");
    return;
  }
  if (!eligible(c)) {
    c.resign(won);
    return;
  }
  drop_follower();
  following_.clear();
  leading_ = won;
  std::string why;
  if (!begin_leading(won, why) || (o_.sync_replicas > 0 && !write_sync_set(c, {}))) {
    c.resign(won);
    step_down(why.empty() ? "it could not name its synchronous replicas in etcd" : why);
    return;
  }
  role_.store(Role::Primary, std::memory_order_release);
  say(fmt::format("this node leads the cluster {} in term {}, from save {}", o_.name, won.rev, floor_.load()));
}

// The term begun in the store (an entry of no changes, synced), then
// events taken and replicas served.
bool Cluster::begin_leading(const EtcdLeader& won, std::string& why) {
  auto term = static_cast<uint32_t>(won.rev);
  term_.store(term);
  bool ran = on_owner([this, term, &why] {
    storage::Status st = store_.begin_term(term);
    if (!st.ok()) {
      why = "it could not begin its term: " + st.message;
      return;
    }
    floor_.store(store_.last_seq(), std::memory_order_relaxed);
    durability_.refuse_events(Code::NotPrimary, "");  // events are taken from here on
  });
  if (!ran || !why.empty()) return false;
  if (o_.sync_replicas > 0) shipper_.set_synchronous({});
  counted_.clear();
  shipper_.refuse_replicas("");
  return true;
}

// The sync key, written only while this node leads: this node and the
// replicas whose acknowledgements it counts.
bool Cluster::write_sync_set(EtcdClient& c, const std::vector<std::string>& replicas) {
  std::string nodes = json_text(o_.node);
  for (const std::string& r : replicas) nodes += "," + json_text(r);
  std::string value = fmt::format("{{\"term\":{},\"nodes\":[{}]}}", leading_.rev, nodes);
  EtcdClient::Compare leads{EtcdClient::Compare::Target::CreateRevision, EtcdClient::Compare::Result::Equal,
                            leading_.key, leading_.rev, ""};
  EtcdClient::Op put{EtcdClient::Op::Kind::Put, prefix_ + "sync", value, 0};
  bool succeeded = false;
  return c.txn({leads}, {put}, {}, succeeded).ok() && succeeded;
}

void Cluster::tick_primary(EtcdClient& c) {
  int64_t now = now_ns();
  if (now >= valid_until_ns_.load()) {
    step_down("its lease may have expired: no renewal was confirmed in time");
    return;
  }
  std::optional<EtcdLeader> l;
  if (c.leader(election_, l).ok() && (!l || l->rev != leading_.rev)) {
    step_down("another node leads the cluster now");
    return;
  }
  if (o_.sync_replicas > 0) keep_sync_set(c);
}

// With K ≥ 1: K replicas counted, each connected. One that went is
// replaced by a connected one that holds every save answered so far (the
// term's first, and every save confirmed since), named in etcd first.
void Cluster::keep_sync_set(EtcdClient& c) {
  std::vector<Shipper::Replica> replicas = shipper_.replicas();
  auto connected = [&](const std::string& node) {
    return std::any_of(replicas.begin(), replicas.end(), [&](const Shipper::Replica& r) { return r.node == node; });
  };
  std::vector<std::string> next;
  for (const std::string& n : counted_) {
    if (connected(n)) next.push_back(n);
  }
  if (next.size() == counted_.size() && counted_.size() >= o_.sync_replicas) return;
  uint64_t needed = std::max(floor_.load(), shipper_.confirmed_high());
  std::sort(replicas.begin(), replicas.end(),
            [](const Shipper::Replica& a, const Shipper::Replica& b) { return a.durable > b.durable; });
  for (const Shipper::Replica& r : replicas) {
    if (next.size() >= o_.sync_replicas) break;
    if (r.node.empty() || r.node == o_.node || r.durable < needed) continue;
    if (std::find(next.begin(), next.end(), r.node) == next.end()) next.push_back(r.node);
  }
  if (next.size() < o_.sync_replicas) return;  // not enough yet: events wait, the ones counted stay named
  if (!write_sync_set(c, next)) return;
  shipper_.set_synchronous(next);
  counted_ = next;
  say(fmt::format("synchronous replicas of term {}: {}", leading_.rev, fmt::join(next, ", ")));
}

void Cluster::step_down(const std::string& why) {
  if (restarting_.exchange(true)) return;
  role_.store(Role::Joining, std::memory_order_release);  // no answer says an event took effect from here on
  cancel_campaign_.store(true);
  say(fmt::format("this node steps down: {}; starting again to follow the cluster's primary", why));
  if (restart_) restart_();
}

}  // namespace aup::runtime

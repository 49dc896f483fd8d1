// The etcd client (runtime/etcd.h) against real etcd processes (etcd on
// PATH: Debian's etcd-server): leases, keys, transactions, elections, dead
// endpoints and a member killed under a 3-member cluster. One single-member
// etcd serves every case that needs no more (each case keeps to its own
// keys and elections); the cluster cases start their own.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/etcd.h"

namespace aup::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Compare = EtcdClient::Compare;
using Op = EtcdClient::Op;

long ms_since(Clock::time_point t) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count());
}

// A loopback socket bound to port 0: the kernel's choice of a free port.
int bound_socket(uint16_t& port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  port = ntohs(a.sin_port);
  return fd;
}

// A port nobody listens on (free when asked; nothing else on a test
// machine takes it meanwhile).
uint16_t free_port() {
  uint16_t port = 0;
  close(bound_socket(port));
  return port;
}

std::string loopback(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

// A socket that listens and never accepts: the kernel completes the
// connections, nobody answers their requests (a hung member).
struct SilentEndpoint {
  SilentEndpoint() : fd(bound_socket(port)) { REQUIRE(listen(fd, 16) == 0); }
  ~SilentEndpoint() { close(fd); }
  std::string address() const { return loopback(port); }
  uint16_t port = 0;
  int fd;
};

// etcd members on free loopback ports, each a child process with its data
// directory under one fresh mkdtemp directory; stopped (SIGTERM, SIGKILL
// after 5 s) and the directory removed at the end. Short heartbeats and
// elections (50 ms, 500 ms) make a start and a lost leader quick.
class Etcd {
 public:
  explicit Etcd(size_t members) {
    std::string pattern = (std::filesystem::temp_directory_path() / "aup-etcd-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    dir_ = pattern;
    std::string cluster;
    for (size_t i = 0; i < members; ++i) {
      members_.push_back({"m" + std::to_string(i), free_port(), free_port(), -1});
      cluster += (i == 0 ? "" : ",") + members_[i].name + "=http://" + loopback(members_[i].peer);
    }
    for (Member& m : members_) m.pid = spawn(m, cluster);
    for (size_t i = 0; i < members; ++i) wait_ready(i);
  }
  ~Etcd() {
    for (size_t i = 0; i < members_.size(); ++i) stop(i, SIGTERM);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  Etcd(const Etcd&) = delete;
  Etcd& operator=(const Etcd&) = delete;

  std::string endpoint(size_t i) const { return loopback(members_[i].client); }
  std::vector<std::string> endpoints() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < members_.size(); ++i) out.push_back(endpoint(i));
    return out;
  }
  size_t member_at(const std::string& endpoint_text) const {
    for (size_t i = 0; i < members_.size(); ++i) {
      if (endpoint(i) == endpoint_text) return i;
    }
    FAIL("no member at " << endpoint_text);
    return 0;
  }
  // The member that leads raft now, as `etcdctl endpoint status` says
  // (its simple output: "ENDPOINT, ID, VERSION, DB SIZE, IS LEADER, ...").
  size_t raft_leader() const {
    std::string command = "etcdctl --endpoints=";
    for (size_t i = 0; i < members_.size(); ++i) command += (i == 0 ? "" : ",") + endpoint(i);
    FILE* out = popen((command + " endpoint status 2>/dev/null").c_str(), "r");
    REQUIRE(out != nullptr);
    char line[512];
    std::optional<size_t> leader;
    while (std::fgets(line, sizeof line, out) != nullptr) {
      std::string text = line;
      size_t comma = text.find(", ");
      bool leads = comma != std::string::npos && text.find(", true, ") != std::string::npos;
      if (leads) leader = member_at(text.substr(0, comma));
    }
    pclose(out);
    REQUIRE_MESSAGE(leader.has_value(), "etcdctl named no raft leader");
    return *leader;
  }
  // Stops member i: SIGTERM waits for it to end (SIGKILL after 5 s);
  // SIGKILL is a crash.
  void stop(size_t i, int signal) {
    Member& m = members_[i];
    if (m.pid <= 0) return;
    kill(m.pid, signal);
    Clock::time_point start = Clock::now();
    while (waitpid(m.pid, nullptr, WNOHANG) == 0) {
      if (ms_since(start) > 5000) {
        kill(m.pid, SIGKILL);
        waitpid(m.pid, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    m.pid = -1;
  }

 private:
  struct Member {
    std::string name;
    uint16_t client, peer;
    pid_t pid;
  };

  // fork + exec of `etcd` from PATH, its output in DIR/NAME.log. Everything
  // the child needs is made before the fork (a child of a threaded process
  // may not allocate). It dies with the test (PR_SET_PDEATHSIG), so a
  // crashed test leaves no etcd behind.
  pid_t spawn(const Member& m, const std::string& cluster) {
    std::string client = "http://" + loopback(m.client), peer = "http://" + loopback(m.peer);
    std::vector<std::string> args = {"etcd", "--name", m.name, "--data-dir", dir_ + "/" + m.name,
                                     "--listen-client-urls", client, "--advertise-client-urls", client,
                                     "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                                     "--initial-cluster", cluster, "--initial-cluster-state", "new",
                                     "--initial-cluster-token", dir_, "--heartbeat-interval", "50",
                                     "--election-timeout", "500"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::string log = dir_ + "/" + m.name + ".log";
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      FILE* out = std::freopen(log.c_str(), "w", stdout);
      if (out == nullptr || dup2(STDOUT_FILENO, STDERR_FILENO) < 0) _exit(126);
      execvp("etcd", argv.data());
      _exit(127);
    }
    return pid;
  }

  // Until member i answers a read (which needs the cluster's leader): 15 s.
  void wait_ready(size_t i) {
    EtcdClient c({endpoint(i)}, 500);
    Clock::time_point start = Clock::now();
    std::optional<EtcdKv> kv;
    while (!c.get("ready", kv).ok()) {
      REQUIRE_MESSAGE(waitpid(members_[i].pid, nullptr, WNOHANG) == 0, "etcd exited; see " << dir_);
      REQUIRE_MESSAGE(ms_since(start) < 15000, "etcd did not answer in 15 s; see " << dir_);
      std::this_thread::sleep_for(20ms);
    }
  }

  std::string dir_;
  std::vector<Member> members_;
};

// The single-member etcd the cases share, started by the first that asks.
Etcd& shared_etcd() {
  static Etcd etcd(1);
  return etcd;
}

EtcdClient shared_client(int timeout_ms = 2000) { return EtcdClient({shared_etcd().endpoint(0)}, timeout_ms); }

int64_t grant_lease(EtcdClient& c, int64_t ttl) {
  int64_t lease = 0, granted = 0;
  EtcdStatus s = c.grant(ttl, lease, granted);
  REQUIRE_MESSAGE(s.ok(), s.message);
  REQUIRE(granted >= ttl);
  return lease;
}

std::optional<EtcdKv> get_key(EtcdClient& c, std::string_view key) {
  std::optional<EtcdKv> kv;
  EtcdStatus s = c.get(key, kv);
  REQUIRE_MESSAGE(s.ok(), s.message);
  return kv;
}

std::optional<EtcdLeader> current_leader(EtcdClient& c, std::string_view election) {
  std::optional<EtcdLeader> l;
  EtcdStatus s = c.leader(election, l);
  REQUIRE_MESSAGE(s.ok(), s.message);
  return l;
}

EtcdLeader win(EtcdClient& c, std::string_view election, std::string_view value, int64_t lease) {
  EtcdLeader won;
  EtcdStatus s = c.campaign(election, value, lease, won, nullptr);
  REQUIRE_MESSAGE(s.ok(), s.message);
  return won;
}

// A campaign on its own thread (and its own client: a client is one
// thread's), its outcome read once `done`.
class Candidate {
 public:
  Candidate(std::vector<std::string> endpoints, std::string election, std::string value, int64_t lease)
      : client_(std::move(endpoints), 2000),
        thread_([this, election, value, lease] {
          status_ = client_.campaign(election, value, lease, won_, &cancel_);
          ended_at_ = Clock::now();
          done_ = true;
        }) {}
  ~Candidate() {
    cancel_ = true;
    thread_.join();
  }
  bool done() const { return done_; }
  // Waits up to `limit_ms` for the campaign to end.
  bool wait(long limit_ms) {
    Clock::time_point start = Clock::now();
    while (!done_ && ms_since(start) < limit_ms) std::this_thread::sleep_for(5ms);
    return done_;
  }
  void cancel() { cancel_ = true; }
  const EtcdStatus& status() const { return status_; }
  const EtcdLeader& won() const { return won_; }
  Clock::time_point ended_at() const { return ended_at_; }

 private:
  EtcdClient client_;
  EtcdStatus status_;
  EtcdLeader won_;
  Clock::time_point ended_at_;
  std::atomic<bool> cancel_{false}, done_{false};
  std::thread thread_;
};

TEST_SUITE("etcd") {

TEST_CASE("base64 round trips empty, text and every byte value") {
  // RFC 4648's test vectors.
  const char* vectors[][2] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},        {"foo", "Zm9v"},
                              {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (auto& v : vectors) {
    CHECK(base64_encode(v[0]) == v[1]);
    std::string back;
    CHECK(base64_decode(v[1], back));
    CHECK(back == v[0]);
  }
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n = 0; n <= all.size(); n += 37) {
    std::string bytes = all.substr(256 - n) + all.substr(0, n % 7), back;
    REQUIRE(base64_decode(base64_encode(bytes), back));
    CHECK(back == bytes);
  }
  std::string out;
  for (const char* bad : {"Zg", "Zg=", "Z===", "Zh==", "Zm9=", "Zm9v!A==", "=Zm9", "Zg==Zg==", "Zm 9v"}) {
    CHECK_MESSAGE(!base64_decode(bad, out), bad);
  }
}

TEST_CASE("a lease kept alive outlives its TTL, and is gone once revoked") {
  EtcdClient c = shared_client();
  int64_t lease = grant_lease(c, 2);
  REQUIRE(c.put("kept/key", "v", lease).ok());
  Clock::time_point start = Clock::now();
  while (ms_since(start) < 3500) {
    int64_t ttl = 0;
    EtcdStatus s = c.keepalive(lease, ttl);
    REQUIRE_MESSAGE(s.ok(), s.message);
    CHECK(ttl >= 1);
    std::this_thread::sleep_for(500ms);
  }
  CHECK(get_key(c, "kept/key").has_value());
  REQUIRE(c.revoke(lease).ok());
  CHECK(!get_key(c, "kept/key").has_value());
  int64_t ttl = 5;
  EtcdStatus s = c.keepalive(lease, ttl);
  CHECK(s.error == EtcdError::Refused);
  CHECK(ttl == 0);
  s = c.revoke(lease);
  CHECK(s.error == EtcdError::Refused);
  CHECK(s.message.find("etcdserver: requested lease not found") != std::string::npos);
  CHECK(s.message.find(c.endpoint()) != std::string::npos);
}

TEST_CASE("a lease left alone takes its keys when its TTL ends") {
  EtcdClient c = shared_client();
  int64_t lease = grant_lease(c, 2);
  REQUIRE(c.put("alone/a", "1", lease).ok());
  REQUIRE(c.put("alone/b", "2", lease).ok());
  REQUIRE(c.put("alone/c", "3").ok());
  Clock::time_point start = Clock::now();
  while (get_key(c, "alone/a").has_value() && ms_since(start) < 5000) std::this_thread::sleep_for(50ms);
  CHECK(ms_since(start) >= 1500);
  CHECK(!get_key(c, "alone/a").has_value());
  CHECK(!get_key(c, "alone/b").has_value());
  CHECK(get_key(c, "alone/c").has_value());
  int64_t ttl = 0;
  CHECK(c.keepalive(lease, ttl).error == EtcdError::Refused);
  EtcdStatus s = c.put("alone/d", "4", lease);
  CHECK(s.error == EtcdError::Refused);
  CHECK(s.message.find("requested lease not found") != std::string::npos);
}

TEST_CASE("put, get, get_prefix and remove") {
  EtcdClient c = shared_client();
  std::string binary("\0\xff\x01 v", 5);
  REQUIRE(c.put("kv/a/1", "one").ok());
  REQUIRE(c.put("kv/a/2", binary).ok());
  REQUIRE(c.put("kv/a/3", "").ok());
  REQUIRE(c.put("kv/b", "other").ok());
  std::optional<EtcdKv> kv = get_key(c, "kv/a/1");
  REQUIRE(kv);
  CHECK(kv->key == "kv/a/1");
  CHECK(kv->value == "one");
  CHECK(kv->version == 1);
  CHECK(kv->create_revision == kv->mod_revision);
  REQUIRE(c.put("kv/a/1", "uno").ok());
  std::optional<EtcdKv> again = get_key(c, "kv/a/1");
  REQUIRE(again);
  CHECK(again->value == "uno");
  CHECK(again->version == 2);
  CHECK(again->create_revision == kv->create_revision);
  CHECK(again->mod_revision > kv->mod_revision);
  CHECK(get_key(c, "kv/a/2")->value == binary);
  CHECK(!get_key(c, "kv/none").has_value());

  std::vector<EtcdKv> kvs;
  int64_t revision = 0;
  REQUIRE(c.get_prefix("kv/a/", kvs, revision).ok());
  REQUIRE(kvs.size() == 3);
  CHECK(kvs[0].key == "kv/a/1");
  CHECK(kvs[1].value == binary);
  CHECK(kvs[2].key == "kv/a/3");
  CHECK(kvs[2].value.empty());
  CHECK(revision >= again->mod_revision);
  REQUIRE(c.get_prefix("", kvs, revision).ok());
  CHECK(kvs.size() >= 4);  // every key, the other cases' too

  REQUIRE(c.remove("kv/a/2").ok());
  REQUIRE(c.remove("kv/a/2").ok());  // a missing key is no error
  CHECK(!get_key(c, "kv/a/2").has_value());
  REQUIRE(c.get_prefix("kv/a/", kvs, revision).ok());
  CHECK(kvs.size() == 2);
  REQUIRE(c.get_prefix("kv/zzz/", kvs, revision).ok());
  CHECK(kvs.empty());
  CHECK(revision > 0);
}

TEST_CASE("get_prefix takes a prefix ending in 0xff bytes") {
  EtcdClient c = shared_client();
  std::string prefix("ff/\xff\xff", 5);
  REQUIRE(c.put(prefix + "a", "1").ok());
  REQUIRE(c.put(std::string("ff/\xff\xff\xff", 6), "2").ok());
  REQUIRE(c.put("ff0", "outside").ok());
  std::vector<EtcdKv> kvs;
  int64_t revision = 0;
  REQUIRE(c.get_prefix(prefix, kvs, revision).ok());
  REQUIRE(kvs.size() == 2);
  CHECK(kvs[0].key == prefix + "a");
}

// One txn on `compare` whose success branch puts txn/yes and failure branch
// txn/no: the outcome it reports, checked against what it did to the store.
bool txn_outcome(EtcdClient& c, Compare compare) {
  REQUIRE(c.remove("txn/yes").ok());
  REQUIRE(c.remove("txn/no").ok());
  bool succeeded = false;
  EtcdStatus s = c.txn({compare}, {Op{Op::Kind::Put, "txn/yes", "1"}}, {Op{Op::Kind::Put, "txn/no", "1"}}, succeeded);
  REQUIRE_MESSAGE(s.ok(), s.message);
  CHECK(get_key(c, "txn/yes").has_value() == succeeded);
  CHECK(get_key(c, "txn/no").has_value() == !succeeded);
  return succeeded;
}

TEST_CASE("txn succeeds and fails on each compare target") {
  using T = Compare::Target;
  using R = Compare::Result;
  EtcdClient c = shared_client();
  REQUIRE(c.put("txn/k", "first").ok());
  REQUIRE(c.put("txn/k", "v").ok());
  std::optional<EtcdKv> kv = get_key(c, "txn/k");
  REQUIRE(kv);
  CHECK(txn_outcome(c, {T::CreateRevision, R::Equal, "txn/k", kv->create_revision, ""}));
  CHECK(!txn_outcome(c, {T::CreateRevision, R::Equal, "txn/k", kv->create_revision + 1, ""}));
  CHECK(txn_outcome(c, {T::CreateRevision, R::Equal, "txn/missing", 0, ""}));  // a missing key's is 0
  CHECK(txn_outcome(c, {T::ModRevision, R::Greater, "txn/k", kv->create_revision, ""}));
  CHECK(!txn_outcome(c, {T::ModRevision, R::Less, "txn/k", kv->mod_revision, ""}));
  CHECK(txn_outcome(c, {T::Version, R::Equal, "txn/k", 2, ""}));
  CHECK(!txn_outcome(c, {T::Version, R::NotEqual, "txn/k", 2, ""}));
  CHECK(txn_outcome(c, {T::Value, R::Equal, "txn/k", 0, "v"}));
  CHECK(!txn_outcome(c, {T::Value, R::Equal, "txn/k", 0, "w"}));
  CHECK(txn_outcome(c, {T::Value, R::NotEqual, "txn/k", 0, "w"}));
  CHECK(!txn_outcome(c, {T::Value, R::NotEqual, "txn/missing", 0, "w"}));  // no value to differ from

  // Several compares and ops: all must hold; the ops apply together.
  bool succeeded = false;
  std::vector<Compare> both = {{T::Version, R::Equal, "txn/k", 2, ""}, {T::Value, R::Equal, "txn/k", 0, "v"}};
  REQUIRE(c.txn(both, {Op{Op::Kind::Put, "txn/k", "w"}, Op{Op::Kind::Delete, "txn/yes", ""}}, {}, succeeded).ok());
  CHECK(succeeded);
  CHECK(get_key(c, "txn/k")->value == "w");
  REQUIRE(c.txn(both, {Op{Op::Kind::Put, "txn/k", "x"}}, {}, succeeded).ok());
  CHECK(!succeeded);
  CHECK(get_key(c, "txn/k")->value == "w");
}

TEST_CASE("campaign: the first leads at once, the second when the first resigns") {
  EtcdClient c = shared_client();
  int64_t la = grant_lease(c, 30), lb = grant_lease(c, 30);
  Clock::time_point start = Clock::now();
  EtcdLeader a = win(c, "resign-election", "a", la);
  CHECK(ms_since(start) < 500);
  CHECK(a.name == "resign-election");
  CHECK(a.value == "a");
  CHECK(a.lease == la);
  CHECK(a.key.starts_with("resign-election/"));

  Candidate b({shared_etcd().endpoint(0)}, "resign-election", "b", lb);
  std::this_thread::sleep_for(800ms);
  CHECK(!b.done());
  CHECK(current_leader(c, "resign-election")->value == "a");
  REQUIRE(c.resign(a).ok());
  REQUIRE(b.wait(2000));
  REQUIRE_MESSAGE(b.status().ok(), b.status().message);
  CHECK(b.won().value == "b");
  CHECK(b.won().rev > a.rev);
  CHECK(current_leader(c, "resign-election")->value == "b");

  // The fencing term: a txn on the old leader's key and rev fails, on the
  // new one's succeeds.
  bool succeeded = true;
  using T = Compare::Target;
  using R = Compare::Result;
  Compare old_term{T::CreateRevision, R::Equal, a.key, a.rev, ""};
  Compare new_term{T::CreateRevision, R::Equal, b.won().key, b.won().rev, ""};
  REQUIRE(c.txn({old_term}, {Op{Op::Kind::Put, "fenced", "a"}}, {}, succeeded).ok());
  CHECK(!succeeded);
  REQUIRE(c.txn({new_term}, {Op{Op::Kind::Put, "fenced", "b"}}, {}, succeeded).ok());
  CHECK(succeeded);
  CHECK(get_key(c, "fenced")->value == "b");
  REQUIRE(c.revoke(la).ok());
  REQUIRE(c.revoke(lb).ok());
}

TEST_CASE("campaign: revoking the leader's lease hands leadership on") {
  EtcdClient c = shared_client();
  int64_t la = grant_lease(c, 30), lb = grant_lease(c, 30);
  EtcdLeader a = win(c, "revoke-election", "a", la);
  Candidate b({shared_etcd().endpoint(0)}, "revoke-election", "b", lb);
  std::this_thread::sleep_for(300ms);
  CHECK(!b.done());
  REQUIRE(c.revoke(la).ok());
  REQUIRE(b.wait(2000));
  REQUIRE_MESSAGE(b.status().ok(), b.status().message);
  CHECK(b.won().rev > a.rev);
  CHECK(b.won().lease == lb);
  REQUIRE(c.revoke(lb).ok());
}

TEST_CASE("leader names the current leader, and none when nobody leads") {
  EtcdClient c = shared_client();
  CHECK(!current_leader(c, "leader-election").has_value());
  int64_t lease = grant_lease(c, 30);
  EtcdLeader won = win(c, "leader-election", "me", lease);
  std::optional<EtcdLeader> l = current_leader(c, "leader-election");
  REQUIRE(l);
  CHECK(l->name == "leader-election");
  CHECK(l->value == "me");
  CHECK(l->key == won.key);
  CHECK(l->rev == won.rev);
  CHECK(l->lease == lease);
  REQUIRE(c.resign(won).ok());
  CHECK(!current_leader(c, "leader-election").has_value());
  REQUIRE(c.revoke(lease).ok());
}

TEST_CASE("a cancelled campaign returns Cancelled within 200 ms and withdraws") {
  EtcdClient c = shared_client();
  int64_t la = grant_lease(c, 30), lb = grant_lease(c, 30);
  EtcdLeader a = win(c, "cancel-election", "a", la);
  Clock::time_point cancelled;
  {
    Candidate b({shared_etcd().endpoint(0)}, "cancel-election", "b", lb);
    std::this_thread::sleep_for(500ms);
    REQUIRE(!b.done());
    cancelled = Clock::now();
    b.cancel();
    REQUIRE(b.wait(1000));
    CHECK(b.status().error == EtcdError::Cancelled);
    CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(b.ended_at() - cancelled).count() < 200);
  }
  // etcd deletes the candidate's key once it sees the connection closed.
  std::vector<EtcdKv> kvs;
  int64_t revision = 0;
  Clock::time_point start = Clock::now();
  for (;;) {
    REQUIRE(c.get_prefix("cancel-election/", kvs, revision).ok());
    if (kvs.size() <= 1 || ms_since(start) > 2000) break;
    std::this_thread::sleep_for(20ms);
  }
  REQUIRE(kvs.size() == 1);
  CHECK(kvs[0].key == a.key);
  REQUIRE(c.resign(a).ok());
  CHECK(!current_leader(c, "cancel-election").has_value());  // b did not take over
  REQUIRE(c.revoke(la).ok());
  REQUIRE(c.revoke(lb).ok());
}

TEST_CASE("a campaign whose lease expires while it waits fails instead of hanging") {
  EtcdClient c = shared_client();
  int64_t la = grant_lease(c, 30), lb = grant_lease(c, 2);
  EtcdLeader a = win(c, "expire-election", "a", la);
  Candidate b({shared_etcd().endpoint(0)}, "expire-election", "b", lb);
  Clock::time_point start = Clock::now();
  REQUIRE(b.wait(5000));
  CHECK(ms_since(start) >= 1000);
  CHECK(b.status().error == EtcdError::Refused);
  CHECK(b.status().message.find("ended while campaigning") != std::string::npos);
  CHECK(current_leader(c, "expire-election")->key == a.key);
  // A lease already gone is refused at once.
  EtcdLeader won;
  EtcdStatus s = c.campaign("expire-election", "b", lb, won, nullptr);
  CHECK(s.error == EtcdError::Refused);
  CHECK(s.message.find("requested lease not found") != std::string::npos);
  REQUIRE(c.revoke(la).ok());
}

// etcd 3.4 answers the campaign of a candidate whose key went with its lease
// as won once the candidates before it are gone: the client must not.
TEST_CASE("a campaign whose lease ends just before the leader leaves is not a win") {
  EtcdClient c = shared_client();
  int64_t la = grant_lease(c, 30), lb = grant_lease(c, 30);
  win(c, "late-election", "a", la);
  Candidate b({shared_etcd().endpoint(0)}, "late-election", "b", lb);
  std::this_thread::sleep_for(300ms);
  REQUIRE(!b.done());
  REQUIRE(c.revoke(lb).ok());
  REQUIRE(c.revoke(la).ok());
  REQUIRE(b.wait(2000));
  CHECK(b.status().error == EtcdError::Refused);
  CHECK(b.status().message.find("ended while campaigning") != std::string::npos);
  CHECK(!current_leader(c, "late-election").has_value());
}

TEST_CASE("a dead or silent first endpoint is skipped; all of them is Unreachable in time") {
  std::string real = shared_etcd().endpoint(0), dead = loopback(free_port());
  SilentEndpoint silent;
  EtcdClient skips_dead({dead, real}, 500);
  CHECK(skips_dead.put("endpoints/a", "1").ok());
  CHECK(skips_dead.endpoint() == real);

  EtcdClient skips_silent({silent.address(), real}, 500);
  Clock::time_point start = Clock::now();
  CHECK(skips_silent.put("endpoints/b", "2").ok());
  CHECK(ms_since(start) >= 450);  // it waited out the silent one
  start = Clock::now();
  CHECK(get_key(skips_silent, "endpoints/b").has_value());
  CHECK(ms_since(start) < 250);  // and starts with the one that answered

  EtcdClient none({dead, silent.address()}, 500);
  start = Clock::now();
  EtcdStatus s = none.put("endpoints/c", "3");
  long took = ms_since(start);
  CHECK(s.error == EtcdError::Unreachable);
  CHECK(took >= 450);
  CHECK(took < 1300);
  CHECK(s.message.find(dead) != std::string::npos);
  CHECK(s.message.find(silent.address()) != std::string::npos);

  // A campaign too: refused connections at once, a silent endpoint once a
  // lease check goes unanswered.
  EtcdLeader won;
  start = Clock::now();
  s = none.campaign("endpoints-election", "x", 1, won, nullptr);
  took = ms_since(start);
  CHECK(s.error == EtcdError::Unreachable);
  CHECK(took < kEtcdLeaseCheckMs + 1300);
}

// The member killed is the raft leader too, the worst case: the next
// member asked still takes it for the leader, so its proposal is lost and
// the call times out there (3 s); by then the other has a new leader.
TEST_CASE("a 3-member cluster keeps answering when the member that answered last dies") {
  Etcd cluster(3);
  std::vector<std::string> all = cluster.endpoints();
  size_t raft_leader = cluster.raft_leader();
  std::swap(all[0], all[raft_leader]);  // the client asks it first
  EtcdClient c(all, 3000);
  REQUIRE(c.put("cluster/k", "1").ok());
  REQUIRE(cluster.member_at(c.endpoint()) == raft_leader);
  int64_t lease = grant_lease(c, 30);
  size_t victim = cluster.member_at(c.endpoint());
  cluster.stop(victim, SIGKILL);

  EtcdStatus s = c.put("cluster/k", "2", lease);
  REQUIRE_MESSAGE(s.ok(), s.message);
  CHECK(cluster.member_at(c.endpoint()) != victim);
  CHECK(get_key(c, "cluster/k")->value == "2");
  int64_t ttl = 0;
  CHECK(c.keepalive(lease, ttl).ok());
  bool succeeded = false;
  REQUIRE(c.txn({{Compare::Target::Value, Compare::Result::Equal, "cluster/k", 0, "2"}},
                {Op{Op::Kind::Put, "cluster/k", "3"}}, {}, succeeded)
              .ok());
  CHECK(succeeded);
  EtcdLeader won = win(c, "cluster-election", "survivor", lease);
  CHECK(current_leader(c, "cluster-election")->rev == won.rev);
}

// The campaign's member is the raft leader: the member the campaign moves
// to takes the dead one for the leader a moment longer, loses the
// campaign's proposal and answers "etcdserver: request timed out" after
// etcd's request timeout (5 s + 2 x 500 ms); the campaign moves on again to
// the third member, which resumes the candidacy (the same key and rev).
TEST_CASE("a waiting campaign moves to another member when its member dies") {
  Etcd cluster(3);
  std::vector<std::string> all = cluster.endpoints();
  size_t raft_leader = cluster.raft_leader();
  std::swap(all[0], all[raft_leader]);
  EtcdClient leader_side({all[1], all[2]}, 3000);
  int64_t la = grant_lease(leader_side, 30), lb = grant_lease(leader_side, 30);
  EtcdLeader a = win(leader_side, "move-election", "a", la);
  Candidate b(all, "move-election", "b", lb);  // campaigns at the raft leader
  std::this_thread::sleep_for(300ms);
  Clock::time_point killed = Clock::now();
  cluster.stop(raft_leader, SIGKILL);
  std::this_thread::sleep_for(1000ms);
  REQUIRE(!b.done());  // still waiting, now at another member
  EtcdStatus s = leader_side.resign(a);
  REQUIRE_MESSAGE(s.ok(), s.message);
  REQUIRE(b.wait(9000));
  REQUIRE_MESSAGE(b.status().ok(), b.status().message);
  MESSAGE("the campaign won " << ms_since(killed) << " ms after its member died");
  CHECK(b.won().value == "b");
  CHECK(b.won().rev > a.rev);
  CHECK(current_leader(leader_side, "move-election")->value == "b");
}

}  // TEST_SUITE

}  // namespace
}  // namespace aup::runtime

// A blocking etcd v3 client over etcd's JSON gateway (`POST /v3/...`),
// through libcurl: the leases, keys, transactions and elections that decide
// which aup replica leads.
//
// The gateway's JSON: keys and values are base64, 64-bit integers are JSON
// strings, members at their zero value are left out ({"header":{...}} is a
// range that found nothing). Errors come as {"error":TEXT,"code":GRPC} (a
// stream's, keepalive's, as {"error":{"message":TEXT,...}}).
//
// Endpoints: each call starts with the endpoint that answered last and
// moves on to the next after a connection failure, a timeout or an answer
// that the member cannot serve now (gRPC code 14, Unavailable, or its texts:
// "etcdserver: no leader", "etcdserver: request timed out"), each endpoint
// once; the caller retries a call that found none. A member that still
// takes a dead raft leader for the leader loses the proposals sent to it
// (etcd then answers "request timed out" after 5 s + 2 election timeouts):
// `timeout_ms` ends such an attempt sooner, except a campaign's. Every
// call but txn may reach etcd twice that way: repeating them changes
// nothing that matters (a second grant leaves a lease that expires
// unused). A txn is not sent again once it may have arrived: its failure
// is then Unreachable with "outcome unknown", since a repeated
// compare-and-set would report failure for the write the first one made.
//
// Threads: a client is used by one thread at a time (it owns curl handles,
// which are not thread-safe; callers make one client per thread). Clients
// share nothing but curl's global initialisation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aup::runtime {

struct EtcdAnswer;   // one request's answer (etcd.cpp)
struct EtcdAttempt;  // one transfer in flight (etcd.cpp)

// Bounds the bytes of one answer (a range over a large prefix): past it the
// call fails with BadAnswer rather than growing without limit. etcd refuses
// requests over 1.5 MiB by default; aup keeps a few small keys.
inline constexpr size_t kMaxEtcdAnswerBytes = size_t{16} << 20;
// A campaign looks at `cancel` at least every kEtcdPollMs, and asks every
// kEtcdLeaseCheckMs whether its lease still lives (etcd 3.4 does not end a
// campaign whose lease expires).
inline constexpr int kEtcdPollMs = 50;
inline constexpr int kEtcdLeaseCheckMs = 500;

struct EtcdKv {
  std::string key, value;
  int64_t create_revision = 0, mod_revision = 0, version = 0, lease = 0;
};

// An election's leader. `rev` is the create revision of its key: it grows
// with every election, so aup fences on it (a txn that compares the key's
// CreateRevision with it succeeds only while this leader leads).
struct EtcdLeader {
  std::string name;   // the election
  std::string key;    // NAME/<lease in hex>
  std::string value;  // what the leader campaigned with
  int64_t rev = 0;
  int64_t lease = 0;
};

enum class EtcdError : uint8_t {
  None,
  Unreachable,  // no endpoint answered in time (or could serve the call)
  Refused,      // etcd answered an error: a lease not found, a lease that ended while campaigning
  Cancelled,    // the caller's `cancel` was set
  BadAnswer,    // an answer that is not the gateway's JSON, or too long
};

struct EtcdStatus {
  EtcdError error = EtcdError::None;
  std::string message;  // names the endpoint(s) and etcd's own error text
  bool ok() const { return error == EtcdError::None; }
};

class EtcdClient {
 public:
  struct Compare {
    enum class Target : uint8_t { CreateRevision, ModRevision, Version, Value } target;
    enum class Result : uint8_t { Equal, NotEqual, Greater, Less } result;
    std::string key;
    int64_t number = 0;  // the revision or version compared with
    std::string value;   // Target::Value
  };
  struct Op {
    enum class Kind : uint8_t { Put, Delete } kind;
    std::string key, value;
    int64_t lease = 0;  // Put
  };

  // `endpoints`: "HOST:PORT", at least one. `timeout_ms` bounds one attempt
  // (connect and answer) of every call, and a campaign's connect.
  EtcdClient(std::vector<std::string> endpoints, int timeout_ms);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // The endpoint that answered last (the first one before any answered).
  const std::string& endpoint() const { return endpoints_[current_]; }

  // A lease of `ttl_seconds` (etcd grants at least its minimum, 2 s with
  // the default election timeout): its id and the TTL granted.
  EtcdStatus grant(int64_t ttl_seconds, int64_t& lease, int64_t& granted_ttl);
  // One renewal. A lease that is gone (expired, revoked) is Refused, with
  // `ttl_left` 0.
  EtcdStatus keepalive(int64_t lease, int64_t& ttl_left);
  // Ends the lease and deletes its keys; Refused when it is already gone.
  EtcdStatus revoke(int64_t lease);

  EtcdStatus put(std::string_view key, std::string_view value, int64_t lease = 0);
  // `kv` is empty when the key does not exist.
  EtcdStatus get(std::string_view key, std::optional<EtcdKv>& kv);
  // Every key starting with `prefix` (all keys for ""), in key order, and
  // the store's revision they were read at.
  EtcdStatus get_prefix(std::string_view prefix, std::vector<EtcdKv>& kvs, int64_t& revision);
  // Deletes `key`; ok when it did not exist.
  EtcdStatus remove(std::string_view key);
  // If every compare holds, applies `success`, else `failure`, atomically;
  // `succeeded` says which. A Value compare on a missing key fails
  // (whatever its Result); the others compare a missing key's 0.
  EtcdStatus txn(const std::vector<Compare>& compares, const std::vector<Op>& success,
                 const std::vector<Op>& failure, bool& succeeded);

  // Campaigns in `election` with `value` under `lease` (whose keepalives
  // are the caller's): blocks until this candidate leads (`won`), `cancel`
  // is set (checked every kEtcdPollMs; may be null), or the lease ends
  // (Refused: the client asks every kEtcdLeaseCheckMs, since etcd 3.4 keeps
  // such a candidate waiting, and answers it as won once the candidates
  // before it are gone; a win is checked against the key before it counts).
  // The wait has no time limit but the connect's; it moves to the next
  // endpoint when its connection breaks, when a lease check goes unanswered
  // for timeout_ms (a hung member), or on a member's "request timed out"
  // (see the top; that one costs etcd's request timeout, 6 s and more).
  //
  // A campaign with the same lease resumes the same candidacy (the same
  // key and rev), at any member. Closing a waiting campaign's connection
  // (cancel, moving on) makes that member withdraw the candidacy, deleting
  // its key a moment later, if it is still alive: a campaign resumed
  // meanwhile, at once, with the same lease, can lose its key (and a win)
  // to that late withdrawal. That is safe, not silent: the key is gone, so
  // the txns fenced on it fail and leader() shows it. After a cancel, wait
  // until the key is gone (or use a new lease) before campaigning again.
  EtcdStatus campaign(std::string_view election, std::string_view value, int64_t lease, EtcdLeader& won,
                      const std::atomic<bool>* cancel);
  // The current leader of `election`, none when nobody leads.
  EtcdStatus leader(std::string_view election, std::optional<EtcdLeader>& leader);
  // Gives up leadership (deletes the leader key, if it is still `l`'s);
  // the next candidate leads. The lease lives on.
  EtcdStatus resign(const EtcdLeader& l);

 private:
  // Whether a call may be sent to the next endpoint after it may have
  // reached etcd (see the top of this file).
  enum class Resend : uint8_t { Yes, BeforeArrival };

  EtcdStatus call(std::string_view path, const std::string& body, Resend resend, EtcdAnswer& answer);
  // Adds a transfer of `body` to `path` at `endpoint` to the multi handle
  // (timeout_ms 0: no limit but the connect's).
  void start(void* handle, EtcdAttempt& a, size_t endpoint, std::string_view path, const std::string& body,
             long timeout_ms);
  void stop(void* handle);
  // One turn of the multi handle: runs what is ready, marks the attempts
  // that ended, and waits up to kEtcdPollMs for more when none did.
  void turn();
  // What an ended attempt came to: ok (its answer read into `answer`), a
  // status that ends the call, or nothing: try the next endpoint (the
  // reason appended to `failures`).
  std::optional<EtcdStatus> judge(void* handle, EtcdAttempt& a, size_t endpoint, Resend resend, EtcdAnswer& answer,
                                  std::string& failures);
  std::optional<EtcdStatus> campaign_at(size_t endpoint, const std::string& body, int64_t lease, EtcdAnswer& answer,
                                        const std::atomic<bool>* cancel, std::string& failures);
  std::optional<EtcdStatus> judge_check(const EtcdAttempt& check, int64_t lease, size_t endpoint,
                                        std::string& failures) const;
  EtcdStatus lease_ended(int64_t lease, size_t endpoint, std::string_view why) const;
  EtcdStatus confirm_win(const EtcdLeader& won);

  std::vector<std::string> endpoints_;
  size_t current_ = 0;  // the endpoint that answered last
  int timeout_ms_;
  // curl handles (CURLM*, CURL*, curl_slist*), typed void* as curl.h does,
  // to keep curl.h out of this header. One multi handle drives both easy
  // handles, so they share its connections (kept alive between calls).
  void* multi_ = nullptr;
  void* call_ = nullptr;     // every call, and a campaign's lease checks
  void* poll_ = nullptr;     // a campaign's long poll
  void* headers_ = nullptr;  // both handles' request headers
};

// Standard base64 (RFC 4648, with padding), as the gateway writes bytes.
std::string base64_encode(std::string_view bytes);
// False on anything but canonical padded base64 (a bad character, a bad
// length, padding inside, non-zero bits past the last byte).
bool base64_decode(std::string_view text, std::string& bytes);

}  // namespace aup::runtime

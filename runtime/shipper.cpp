#include "runtime/shipper.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "runtime/json.h"
#include "runtime/replication_stream.h"
#include "runtime/signals.h"
#include "storage/copy.h"
#include "storage/key_tables.h"
#include "storage/live.h"
#include "storage/log.h"
#include "storage/schema_file.h"
#include "storage/terms.h"

namespace aup::runtime {

namespace {

// A replica that takes longer than this to accept bytes is let go.
constexpr int kSendTimeoutSeconds = 10;
// Frames are gathered up to this many bytes before a send.
constexpr size_t kSendBytes = size_t{256} << 10;
// After a replica is sent a copy, the log entries after it are kept this
// long for it to come back for (it installs the copy and reopens first).
constexpr int kCopyLingerSeconds = 60;

std::string answer_line(std::string_view code, std::string_view message) {
  std::string line = "{\"code\":";
  json_append_string(line, code);
  line += ",\"message\":";
  json_append_string(line, message);
  line += "}\n";
  return line;
}

}  // namespace

// One replica's feed: its connection and the thread that serves it.
class Feed {
 public:
  // `problem`: why the replica is refused outright, with `problem_code`.
  Feed(Shipper& shipper, storage::Io& io, const std::string& dir, const storage::Schema& schema, std::FILE* err,
       int fd, stream::Hello hello, std::string problem_code, std::string problem)
      : shipper_(shipper), io_(io), dir_(dir), schema_(schema), err_(err), fd_(fd), hello_(std::move(hello)),
        problem_code_(std::move(problem_code)), problem_(std::move(problem)),
        wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    retain_after_.store(hello_.save, std::memory_order_relaxed);
    thread_ = quiet_thread([this] { run(); });
  }
  ~Feed() {
    stop_.store(true, std::memory_order_release);
    wake();
    ::shutdown(fd_, SHUT_RDWR);  // a send or poll in progress returns
    thread_.join();
    ::close(fd_);
    if (wake_ >= 0) ::close(wake_);
  }
  void wake() {
    uint64_t one = 1;
    ssize_t n = ::write(wake_, &one, sizeof one);
    (void)n;
  }
  // The thread has ended (the replica went, or was refused, or was sent a copy).
  bool ended() const { return ended_.load(std::memory_order_acquire); }
  // Ended, and no longer holding log segments back: a replica sent a copy
  // is given kCopyLingerSeconds to come back for the entries after it.
  bool done() const {
    return ended() && std::chrono::steady_clock::now() >= linger_until_.load(std::memory_order_acquire);
  }
  uint64_t retain_after() const { return retain_after_.load(std::memory_order_acquire); }
  Shipper::Replica state() const {
    return {hello_.node, sent_.load(std::memory_order_relaxed), durable_.load(std::memory_order_acquire),
            applied_.load(std::memory_order_relaxed)};
  }

 private:
  // What the handshake decided: entries follow (Stream), the replica is
  // sent a copy, or nothing more (refused, or told to cut its log).
  enum class Plan { Stream, Copy, End };
  void run();
  Plan handshake();
  Plan plan_for(const storage::LiveMark& mark);
  Plan catch_up();
  void send_copy();
  bool follow();
  bool read_acks();
  bool send_pending();
  bool send_text(const std::string& s);
  storage::Status entry(const storage::LogEntry& e);
  void refuse(std::string_view code, const std::string& why);
  void greet();

  Shipper& shipper_;
  storage::Io& io_;
  const std::string& dir_;
  const storage::Schema& schema_;
  std::FILE* err_;
  int fd_;
  stream::Hello hello_;
  std::string problem_code_, problem_;  // the replica is refused outright: why
  int wake_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, ended_{false};
  std::atomic<std::chrono::steady_clock::time_point> linger_until_{};
  std::atomic<uint64_t> retain_after_{0};
  std::atomic<uint64_t> sent_{0}, durable_{0}, applied_{0};
  std::unique_ptr<storage::Log> log_;  // the store's log, read only, up to the last mark read
  std::vector<uint8_t> out_;           // frames not yet sent
  std::vector<uint8_t> in_;            // acks read, not yet taken
  uint64_t pending_last_ = 0;          // the last entry's save among out_'s frames
  bool needs_copy_ = false;            // catching up found the log no longer reaches back (set by entry())
  std::string greeting_;               // the handshake's `ok` line, until it is sent
};

void Feed::run() {
  timeval tv{kSendTimeoutSeconds, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int flags = ::fcntl(fd_, F_GETFL);
  ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  Plan plan = handshake();
  if (plan == Plan::Stream) plan = catch_up();
  if (plan == Plan::Copy) send_copy();
  while (plan == Plan::Stream && !stop_.load(std::memory_order_acquire) && follow()) {
  }
  ended_.store(true, std::memory_order_release);
}

void Feed::refuse(std::string_view code, const std::string& why) {
  send_text(answer_line(code, why));
  fmt::print(err_, "aup: a replica was refused: {}\n", why);
}

// The replica's module against the primary's, then what it is to be sent.
Feed::Plan Feed::handshake() {
  if (!problem_.empty()) {
    refuse(problem_code_, problem_);
    return Plan::End;
  }
  storage::Schema theirs;
  storage::Status st = storage::parse_schema_file_bytes("the replica's schema", hello_.schema, theirs);
  if (!st.ok()) {
    refuse("bad_request", st.message);
    return Plan::End;
  }
  // Said as an open says it of a module against a store: here the
  // replica's module against the primary's store.
  auto keeps_keys = [](const storage::Schema& s) {
    return std::any_of(s.tables.begin(), s.tables.end(),
                       [](const storage::TableSchema& t) { return storage::is_key_table(t.name); });
  };
  if (keeps_keys(schema_) != keeps_keys(theirs)) {
    refuse("bad_request", keeps_keys(schema_) ? "the primary keeps idempotency keys and the replica does not: start "
                                                "the replica with --keys N, as the primary"
                                              : "the replica keeps idempotency keys and the primary does not");
    return Plan::End;
  }
  storage::SchemaDiff diff = storage::compare_schemas(schema_, theirs);
  if (!diff.same()) {
    std::string what;
    for (const std::string& s : diff.refusals) what += (what.empty() ? "" : "; ") + s;
    for (const std::string& s : diff.additions) what += (what.empty() ? "" : "; ") + s;
    refuse("bad_request", "the replica's module differs from the primary's store: " + what);
    return Plan::End;
  }
  storage::LiveReader reader;
  storage::LiveMark mark;
  st = reader.attach(io_, dir_);
  if (st.ok()) st = reader.read_mark(mark);
  if (!st.ok()) {
    refuse("unavailable", "the primary cannot read its own log: " + st.message);
    return Plan::End;
  }
  return plan_for(mark);
}

// Where the replica's log and the primary's part (storage/terms.h): the
// replica follows on from its last save when that is the primary's too,
// cuts its log back when it holds entries after the last save they share
// (unless its images cover them), and is sent a copy otherwise.
Feed::Plan Feed::plan_for(const storage::LiveMark& mark) {
  storage::TermHistory mine;
  storage::Status st = storage::read_terms(io_, dir_, mine);
  if (!st.ok()) {
    refuse("unavailable", "the primary cannot read its own term history: " + st.message);
    return Plan::End;
  }
  if (hello_.copy) return Plan::Copy;
  uint64_t shared = storage::common_save(hello_.terms, hello_.save, mine, mark.seq);
  if (shared == hello_.save) {
    // Sent once catching up has found the entries after it: before the
    // first frame, or alone.
    greeting_ = fmt::format("{{\"code\":\"ok\",\"result\":{{\"save\":{},\"term\":{}}}}}\n", mark.seq,
                            mine.last_term());
    // The replica's store holds every entry up to its save, the primary's
    // own: it counts for them from now, as if it had acknowledged them on
    // this connection. Without it a replica that comes back holding the
    // last save (its acks lost with a cut connection, or the primary
    // restarted) would confirm nothing until a new entry reached it, and
    // a retry answered from its key, which writes none, would wait for it
    // in vain (--sync-replicas).
    durable_.store(hello_.save, std::memory_order_release);
    applied_.store(hello_.save, std::memory_order_relaxed);
    shipper_.acked();
    return Plan::Stream;
  }
  // Entries of the primary's own term that it does not hold are not a
  // deposed primary's: the primary lost them (its store restored from an
  // older copy, say). Never cut those away.
  if (uint32_t theirs = hello_.terms.term_at(hello_.save); theirs >= mine.last_term()) {
    refuse("bad_request", fmt::format("the replica is at save {} (term {}), past the primary's last save {} in "
                                      "its term {}: it holds entries the primary does not",
                                      hello_.save, theirs, shared, mine.last_term()));
    return Plan::End;
  }
  if (shared < hello_.covered) return Plan::Copy;
  fmt::print(err_, "aup: a replica at save {} holds entries the primary does not after save {}: it cuts them off\n",
             hello_.save, shared);
  send_text(fmt::format("{{\"code\":\"cut\",\"result\":{{\"save\":{}}}}}\n", shared));
  return Plan::End;
}

void Feed::greet() {
  if (greeting_.empty()) return;
  out_.insert(out_.end(), greeting_.begin(), greeting_.end());
  greeting_.clear();
}

// An entry read from the log: sent when it is past the replica's save.
storage::Status Feed::entry(const storage::LogEntry& e) {
  if (e.seq <= hello_.save) return storage::Status::good();
  if (!greeting_.empty() && e.prev_seq != hello_.save) {
    needs_copy_ = true;  // the log begins after the replica's save
    return storage::Status::error("the log no longer reaches back");
  }
  greet();
  stream::put_frame(out_, stream::Frame{stream::Kind::Entry, e.term, e.seq, e.prev_seq, 0, e.payload});
  pending_last_ = e.seq;
  if (out_.size() >= kSendBytes && !send_pending()) return storage::Status::error("the replica went away");
  return storage::Status::good();
}

// Every entry after the replica's save, read under the readers' lock up to
// the mark; a copy instead when the log no longer holds them.
Feed::Plan Feed::catch_up() {
  storage::LiveReader reader;
  storage::LiveMark mark;
  storage::Status st = reader.attach(io_, dir_);
  if (st.ok()) st = reader.read_mark(mark);
  if (st.ok()) {
    storage::Log::Options o;
    o.read_only = true;
    o.cut_segment = mark.segment;
    o.cut_end = mark.end;
    storage::LogOpenReport report;
    st = storage::Log::open(
        io_, dir_, o, [this](const storage::LogEntry& e) { return entry(e); }, log_, report);
    needs_copy_ = needs_copy_ || (st.ok() && report.entries == 0 && hello_.save < mark.seq);
  }
  if (needs_copy_ && !greeting_.empty()) return Plan::Copy;
  greet();
  if (!st.ok() || !send_pending()) {
    fmt::print(err_, "aup: a replica was let go: {}\n", st.ok() ? "it went away" : st.message);
    return Plan::End;
  }
  uint64_t last = log_->last_seq();
  retain_after_.store(last > 0 ? last - 1 : 0, std::memory_order_release);
  return Plan::Stream;
}

// A copy's files as frames into the feed's output, sent as they fill it.
class FrameSink : public storage::CopySink {
 public:
  FrameSink(std::vector<uint8_t>& out, std::function<bool()> send) : out_(out), send_(std::move(send)) {}
  storage::Status begin_file(const std::string& name, uint64_t bytes, uint64_t alloc) override {
    std::span<const uint8_t> n(reinterpret_cast<const uint8_t*>(name.data()), name.size());
    stream::put_frame(out_, stream::Frame{stream::Kind::File, 0, bytes, alloc, 0, n});
    return storage::Status::good();
  }
  storage::Status write(const uint8_t* p, size_t n) override {
    for (size_t at = 0; at < n; at += stream::kCopyChunkBytes) {
      size_t k = std::min(stream::kCopyChunkBytes, n - at);
      stream::put_frame(out_, stream::Frame{stream::Kind::Data, 0, 0, 0, 0, {p + at, k}});
      if (out_.size() >= kSendBytes && !send_()) return storage::Status::error("the replica went away");
    }
    return storage::Status::good();
  }
  storage::Status end_file() override { return storage::Status::good(); }

 private:
  std::vector<uint8_t>& out_;
  std::function<bool()> send_;
};

// The store copied to the replica (storage/copy.h), then the copy's end;
// the entries after it are kept a while for the replica to come back for.
void Feed::send_copy() {
  fmt::print(err_, "aup: a replica at save {} is sent a copy of the store\n", hello_.save);
  std::fflush(err_);
  send_text("{\"code\":\"copy\"}\n");
  FrameSink sink(out_, [this] { return send_pending(); });
  storage::CopyReport report;
  storage::Status st = storage::copy_store(io_, dir_, sink, report, nullptr);
  if (st.ok()) {
    retain_after_.store(report.seq, std::memory_order_release);
    linger_until_.store(std::chrono::steady_clock::now() + std::chrono::seconds(kCopyLingerSeconds),
                        std::memory_order_release);
    stream::put_frame(out_, stream::Frame{stream::Kind::CopyEnd, 0, report.seq, 0, 0, {}});
  }
  if (!st.ok() || !send_pending()) {
    fmt::print(err_, "aup: a replica was let go: {}\n", st.ok() ? "it went away during the copy" : st.message);
    return;
  }
  fmt::print(err_, "aup: a replica was sent a copy of the store at save {} ({} files, {} bytes)\n", report.seq,
             report.files, report.bytes);
}

// Waits for a commit, an ack or a second, then sends what the log holds
// past what was sent (or a beat).
bool Feed::follow() {
  pollfd p[2] = {{fd_, POLLIN, 0}, {wake_, POLLIN, 0}};
  int n = ::poll(p, 2, 1000);
  if (n < 0 && errno != EINTR) return false;
  if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
    if (!read_acks()) return false;
  }
  uint64_t count = 0;
  if (p[1].revents & POLLIN) {
    ssize_t got = ::read(wake_, &count, sizeof count);
    (void)got;
  }
  storage::LiveReader reader;
  storage::LiveMark mark;
  storage::Status st = reader.attach(io_, dir_);
  if (st.ok()) st = reader.read_mark(mark);
  if (st.ok() && mark.seq > log_->last_seq()) {
    st = log_->follow(mark.segment, mark.end, [this](const storage::LogEntry& e) { return entry(e); });
  }
  if (!st.ok()) {
    fmt::print(err_, "aup: a replica was let go: {}\n", st.message);
    return false;
  }
  if (out_.empty() && n == 0) {
    stream::put_frame(out_, stream::Frame{stream::Kind::Beat, log_->last_term(), mark.seq, 0, 0, {}});
  }
  if (!send_pending()) return false;
  uint64_t last = log_->last_seq();
  retain_after_.store(last > 0 ? last - 1 : 0, std::memory_order_release);
  return true;
}

bool Feed::read_acks() {
  uint8_t buf[4096];
  ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
  if (n == 0) return false;  // the replica closed
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  in_.insert(in_.end(), buf, buf + n);
  size_t at = 0;
  stream::Frame f;
  std::string why;
  while (stream::take_frame(in_, at, f, why)) {
    if (f.kind != stream::Kind::Ack) {
      fmt::print(err_, "aup: a replica was let go: it sent a frame that is not an ack\n");
      return false;
    }
    durable_.store(f.save, std::memory_order_release);
    applied_.store(f.prev, std::memory_order_relaxed);
    shipper_.acked();
  }
  in_.erase(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(at));
  if (!why.empty()) {
    fmt::print(err_, "aup: a replica was let go: {}\n", why);
    return false;
  }
  return true;
}

bool Feed::send_text(const std::string& s) {
  out_.insert(out_.end(), s.begin(), s.end());
  return send_pending();
}

bool Feed::send_pending() {
  size_t done = 0;
  while (done < out_.size()) {
    ssize_t n = ::send(fd_, out_.data() + done, out_.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  out_.clear();
  if (pending_last_ > 0) sent_.store(pending_last_, std::memory_order_relaxed);
  return !stop_.load(std::memory_order_acquire);
}

// ---- the shipper -----------------------------------------------------------------------

Shipper::Shipper(storage::Io& io, std::string dir, storage::Schema schema, std::FILE* err)
    : io_(io), dir_(std::move(dir)), schema_(std::move(schema)), err_(err) {}

Shipper::~Shipper() {
  std::lock_guard<std::mutex> lock(mu_);
  feeds_.clear();
}

void Shipper::adopt(int fd, const Request& r) {
  std::lock_guard<std::mutex> lock(mu_);
  reap();
  stream::Hello hello;
  std::string problem;
  std::string code = refusal_.empty() ? "bad_request" : "not_primary";
  if (!refusal_.empty()) {
    problem = refusal_;
  } else {
    stream::read_hello(*r.doc, r.args, hello, problem);
  }
  feeds_.push_back(std::make_unique<Feed>(*this, io_, dir_, schema_, err_, fd, std::move(hello), std::move(code),
                                          std::move(problem)));
}

void Shipper::reap() {
  feeds_.erase(std::remove_if(feeds_.begin(), feeds_.end(), [](const auto& f) { return f->done(); }), feeds_.end());
}

void Shipper::committed() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& f : feeds_) f->wake();
}

uint64_t Shipper::retain_after() {
  std::lock_guard<std::mutex> lock(mu_);
  reap();
  uint64_t least = UINT64_MAX;
  for (auto& f : feeds_) least = std::min(least, f->retain_after());
  return least;
}

uint64_t Shipper::confirmed(uint32_t k) {
  if (k == 0) return UINT64_MAX;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> held;
  uint64_t least = UINT64_MAX;
  for (const std::string& node : synchronous_) {
    uint64_t best = 0;  // not connected: nothing confirmed
    for (auto& f : feeds_) {
      if (!f->ended() && f->state().node == node) best = std::max(best, f->state().durable);
    }
    least = std::min(least, best);
  }
  for (auto& f : feeds_) {
    if (!f->ended()) held.push_back(f->state().durable);
  }
  uint64_t got = 0;
  if (counts_named_) {
    got = synchronous_.size() >= k ? least : 0;
  } else if (held.size() >= k) {
    std::nth_element(held.begin(), held.begin() + (k - 1), held.end(), std::greater<>());
    got = held[k - 1];
  }
  confirmed_high_ = std::max(confirmed_high_, got);
  return got;
}

void Shipper::refuse_replicas(std::string why) {
  std::lock_guard<std::mutex> lock(mu_);
  refusal_ = std::move(why);
}

void Shipper::set_synchronous(std::vector<std::string> nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  synchronous_ = std::move(nodes);
  counts_named_ = true;
}

uint64_t Shipper::confirmed_high() {
  std::lock_guard<std::mutex> lock(mu_);
  return confirmed_high_;
}

void Shipper::set_on_ack(std::function<void()> f) {
  std::lock_guard<std::mutex> lock(ack_mu_);
  on_ack_ = std::move(f);
}

void Shipper::acked() {
  std::lock_guard<std::mutex> lock(ack_mu_);
  if (on_ack_) on_ack_();
}

ReplicationFigures Shipper::figures(uint32_t k, uint32_t term) {
  std::vector<Replica> now = replicas();
  ReplicationFigures f;
  f.role = 1;
  f.term = term;
  f.replicas = static_cast<double>(now.size());
  std::lock_guard<std::mutex> lock(mu_);
  if (counts_named_) {
    f.synchronous = static_cast<double>(std::count_if(synchronous_.begin(), synchronous_.end(), [&](const auto& n) {
      return std::any_of(now.begin(), now.end(), [&](const Replica& r) { return r.node == n; });
    }));
  } else {
    f.synchronous = std::min<double>(k, f.replicas);
  }
  return f;
}

std::vector<Shipper::Replica> Shipper::replicas() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Replica> out;
  for (auto& f : feeds_) {
    if (!f->ended()) out.push_back(f->state());
  }
  return out;
}

}  // namespace aup::runtime

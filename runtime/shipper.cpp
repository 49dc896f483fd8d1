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
#include <thread>

#include "runtime/json.h"
#include "runtime/replication_stream.h"
#include "runtime/signals.h"
#include "storage/key_tables.h"
#include "storage/live.h"
#include "storage/log.h"
#include "storage/schema_file.h"

namespace aup::runtime {

namespace {

// A replica that takes longer than this to accept bytes is let go.
constexpr int kSendTimeoutSeconds = 10;
// Frames are gathered up to this many bytes before a send.
constexpr size_t kSendBytes = size_t{256} << 10;

// What the replica's handshake says, copied out of the request.
struct Hello {
  uint64_t save = 0;
  uint32_t term = 0;
  std::vector<uint8_t> schema;  // a schema file's bytes
  std::string problem;          // the request is not a handshake: why
};

Hello read_hello(const Request& r) {
  Hello h;
  const JsonDoc& doc = *r.doc;
  const JsonNode& obj = doc.node(r.args);
  uint32_t k = doc.first_child(r.args);
  bool saw_save = false, saw_term = false, saw_schema = false;
  for (uint32_t i = 0; i < obj.count && h.problem.empty(); ++i, k = doc.after(k + 1)) {
    std::string_view name = doc.node(k).str;
    const JsonNode& v = doc.node(k + 1);
    bool whole = v.kind == JsonNode::Kind::Number && v.num >= 0 && v.num == static_cast<double>(static_cast<uint64_t>(v.num));
    if (name == "save" && whole) {
      h.save = static_cast<uint64_t>(v.num);
      saw_save = true;
    } else if (name == "term" && whole && v.num <= UINT32_MAX) {
      h.term = static_cast<uint32_t>(v.num);
      saw_term = true;
    } else if (name == "schema" && v.kind == JsonNode::Kind::String && stream::from_hex(v.str, h.schema)) {
      saw_schema = true;
    } else {
      h.problem = fmt::format("`replicate` has `save`, `term` (whole numbers) and `schema` (hex); not `{}` as given",
                              name);
    }
  }
  if (h.problem.empty() && !(saw_save && saw_term && saw_schema)) {
    h.problem = "`replicate` needs `save`, `term` and `schema`";
  }
  return h;
}

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
  Feed(storage::Io& io, const std::string& dir, const storage::Schema& schema, std::FILE* err, int fd, Hello hello)
      : io_(io), dir_(dir), schema_(schema), err_(err), fd_(fd), hello_(std::move(hello)),
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
  bool ended() const { return ended_.load(std::memory_order_acquire); }
  uint64_t retain_after() const { return retain_after_.load(std::memory_order_acquire); }
  Shipper::Replica state() const {
    return {sent_.load(std::memory_order_relaxed), durable_.load(std::memory_order_relaxed),
            applied_.load(std::memory_order_relaxed)};
  }

 private:
  void run();
  bool handshake();
  bool catch_up();
  bool follow();
  bool read_acks();
  bool send_pending();
  bool send_text(const std::string& s);
  storage::Status entry(const storage::LogEntry& e);
  void refuse(std::string_view code, const std::string& why);
  void greet();

  storage::Io& io_;
  const std::string& dir_;
  const storage::Schema& schema_;
  std::FILE* err_;
  int fd_;
  Hello hello_;
  int wake_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, ended_{false};
  std::atomic<uint64_t> retain_after_{0};
  std::atomic<uint64_t> sent_{0}, durable_{0}, applied_{0};
  std::unique_ptr<storage::Log> log_;  // the store's log, read only, up to the last mark read
  std::vector<uint8_t> out_;           // frames not yet sent
  std::vector<uint8_t> in_;            // acks read, not yet taken
  uint64_t pending_last_ = 0;          // the last entry's save among out_'s frames
  std::string refusal_;                // why an entry cannot be sent (set by entry())
  std::string greeting_;               // the handshake's `ok` line, until it is sent
};

void Feed::run() {
  timeval tv{kSendTimeoutSeconds, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int flags = ::fcntl(fd_, F_GETFL);
  ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  if (handshake() && catch_up()) {
    while (!stop_.load(std::memory_order_acquire) && follow()) {
    }
  }
  ended_.store(true, std::memory_order_release);
}

void Feed::refuse(std::string_view code, const std::string& why) {
  send_text(answer_line(code, why));
  fmt::print(err_, "aup: a replica was refused: {}\n", why);
}

// The replica's module against the primary's, and its save against the
// primary's last.
bool Feed::handshake() {
  if (!hello_.problem.empty()) {
    refuse("bad_request", hello_.problem);
    return false;
  }
  storage::Schema theirs;
  storage::Status st = storage::parse_schema_file_bytes("the replica's schema", hello_.schema, theirs);
  if (!st.ok()) {
    refuse("bad_request", st.message);
    return false;
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
    return false;
  }
  storage::SchemaDiff diff = storage::compare_schemas(schema_, theirs);
  if (!diff.same()) {
    std::string what;
    for (const std::string& s : diff.refusals) what += (what.empty() ? "" : "; ") + s;
    for (const std::string& s : diff.additions) what += (what.empty() ? "" : "; ") + s;
    refuse("bad_request", "the replica's module differs from the primary's store: " + what);
    return false;
  }
  storage::LiveReader reader;
  storage::LiveMark mark;
  st = reader.attach(io_, dir_);
  if (st.ok()) st = reader.read_mark(mark);
  if (!st.ok()) {
    refuse("unavailable", "the primary cannot read its own log: " + st.message);
    return false;
  }
  if (hello_.save > mark.seq) {
    refuse("bad_request", fmt::format("the replica is at save {}, past the primary's last, {}: it holds entries the "
                                      "primary does not",
                                      hello_.save, mark.seq));
    return false;
  }
  // Sent once catching up has found nothing to refuse: before the first
  // frame, or alone.
  greeting_ = fmt::format("{{\"code\":\"ok\",\"result\":{{\"save\":{}}}}}\n", mark.seq);
  return true;
}

void Feed::greet() {
  if (greeting_.empty()) return;
  out_.insert(out_.end(), greeting_.begin(), greeting_.end());
  greeting_.clear();
}

// An entry read from the log: sent when it is past the replica's save.
storage::Status Feed::entry(const storage::LogEntry& e) {
  if (e.seq <= hello_.save) {
    if (e.seq == hello_.save && e.term != hello_.term) {
      refusal_ = fmt::format("the replica's save {} is of term {}, the primary's of term {}: the replica holds "
                             "entries the primary does not",
                             e.seq, hello_.term, e.term);
      return storage::Status::error(refusal_);
    }
    return storage::Status::good();
  }
  if (!greeting_.empty() && e.prev_seq != hello_.save) {
    refusal_ = fmt::format("the primary's log begins after save {}, and the replica is at save {}: it needs a copy "
                           "of the primary's images first",
                           e.prev_seq, hello_.save);
    return storage::Status::error(refusal_);
  }
  greet();
  stream::put_frame(out_, stream::Frame{stream::Kind::Entry, e.term, e.seq, e.prev_seq, 0, e.payload});
  pending_last_ = e.seq;
  if (out_.size() >= kSendBytes && !send_pending()) return storage::Status::error("the replica went away");
  return storage::Status::good();
}

// Every entry after the replica's save, read under the readers' lock up to
// the mark.
bool Feed::catch_up() {
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
    if (st.ok() && report.entries == 0 && hello_.save < mark.seq) {
      refusal_ = fmt::format("the primary's log holds no entries after save {}, and the replica is at save {}: it "
                             "needs a copy of the primary's images first",
                             mark.seq, hello_.save);
      st = storage::Status::error(refusal_);
    }
  }
  if (!refusal_.empty() && !greeting_.empty()) {
    refuse("bad_request", refusal_);
    return false;
  }
  greet();
  if (!st.ok() || !send_pending()) {
    fmt::print(err_, "aup: a replica was let go: {}\n", refusal_.empty() ? st.message : refusal_);
    return false;
  }
  uint64_t last = log_->last_seq();
  retain_after_.store(last > 0 ? last - 1 : 0, std::memory_order_release);
  return true;
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
    fmt::print(err_, "aup: a replica was let go: {}\n", refusal_.empty() ? st.message : refusal_);
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
    durable_.store(f.save, std::memory_order_relaxed);
    applied_.store(f.prev, std::memory_order_relaxed);
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
  feeds_.push_back(std::make_unique<Feed>(io_, dir_, schema_, err_, fd, read_hello(r)));
}

void Shipper::reap() {
  feeds_.erase(std::remove_if(feeds_.begin(), feeds_.end(), [](const auto& f) { return f->ended(); }), feeds_.end());
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

std::vector<Shipper::Replica> Shipper::replicas() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Replica> out;
  for (auto& f : feeds_) {
    if (!f->ended()) out.push_back(f->state());
  }
  return out;
}

}  // namespace aup::runtime

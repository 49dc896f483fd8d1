#include "runtime/follower.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "runtime/json.h"
#include "runtime/listener.h"
#include "runtime/replication_stream.h"
#include "runtime/signals.h"
#include "storage/schema_file.h"

namespace aup::runtime {

namespace {

// How long the primary may take to answer the handshake.
constexpr int kHandshakeSeconds = 10;

bool send_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    ssize_t k = ::send(fd, b, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    b += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

}  // namespace

Follower::Follower(std::string primary, storage::Store& store, OwnerTasks& tasks, std::FILE* err)
    : primary_(std::move(primary)), store_(store), tasks_(tasks), err_(err),
      schema_file_(storage::schema_file_bytes(store.schema())) {
  durable_.store(store.last_seq(), std::memory_order_relaxed);
  term_.store(store.term(), std::memory_order_relaxed);
  thread_ = quiet_thread([this] { run(); });
}

Follower::~Follower() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  int fd = fd_.load();
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
  thread_.join();
}

std::string Follower::failed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

void Follower::give_up(const std::string& why) {
  fmt::print(err_, "aup: this replica no longer follows {}: {}\n", primary_, why);
  std::fflush(err_);
  std::lock_guard<std::mutex> lock(mu_);
  failed_ = why;
}

void Follower::pause(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, d, [this] { return stop_; });
}

void Follower::run() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    if (!session()) return;
    pause(std::chrono::seconds(1));
  }
}

// One connection to the primary, until it is lost (true: connect again)
// or the primary refuses this replica (false).
bool Follower::session() {
  ListenAddress a;
  std::string error;
  if (!parse_listen_address(primary_, a, error)) {
    give_up(error);
    return false;
  }
  int fd = connect_to(a, primary_, error);
  if (fd < 0) {
    if (!said_unreachable_) fmt::print(err_, "aup: {}; trying again every second\n", error);
    std::fflush(err_);
    said_unreachable_ = true;
    return true;
  }
  said_unreachable_ = false;
  fd_.store(fd);
  std::string buffered;
  bool again = handshake(fd, buffered);
  if (again && connected_.load()) {
    std::vector<uint8_t> in(buffered.begin(), buffered.end());
    again = take_frames(fd, in);
  }
  connected_.store(false);
  fd_.store(-1);
  ::close(fd);
  return again;
}

// Sends where this store stands and reads the primary's answer line
// (bytes after it, the first frames, are left in `buffered`). True with
// connected() set when it said ok; true without it when the connection
// was lost; false when the primary refused.
bool Follower::handshake(int fd, std::string& buffered) {
  std::string line = stream::handshake_line(durable(), term_.load(), schema_file_) + "\n";
  if (!send_all(fd, line.data(), line.size())) return true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kHandshakeSeconds);
  size_t nl;
  while ((nl = buffered.find('\n')) == std::string::npos) {
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, left) <= 0) return true;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;
    buffered.append(buf, static_cast<size_t>(n));
  }
  std::string answer = buffered.substr(0, nl);
  buffered.erase(0, nl + 1);
  JsonDoc doc;
  std::string error;
  uint32_t code = doc.parse(answer, error) ? doc.member(doc.root(), "code") : 0;
  if (code == 0 || doc.node(code).str != "ok") {
    uint32_t message = code ? doc.member(doc.root(), "message") : 0;
    give_up(fmt::format("the primary refused it: {}", message ? std::string(doc.node(message).str) : answer));
    return false;
  }
  uint32_t result = doc.member(doc.root(), "result");
  uint32_t save = result ? doc.member(result, "save") : 0;
  if (save) primary_save_.store(static_cast<uint64_t>(doc.node(save).num), std::memory_order_release);
  connected_.store(true);
  fmt::print(err_, "aup: following the primary {} from save {} (it is at save {})\n", primary_, durable(),
             primary_save());
  catch_up_to_ = primary_save();
  caught_up_said_ = false;
  say_caught_up();
  return true;
}

// Once per connection, when the store holds what the primary held at the
// handshake.
void Follower::say_caught_up() {
  if (!caught_up_said_ && durable() >= catch_up_to_) {
    fmt::print(err_, "aup: caught up with the primary at save {}\n", durable());
    caught_up_said_ = true;
  }
  std::fflush(err_);
}

// Frames until the connection is lost or falls silent: the entries of
// each read written and applied by the owner, then acknowledged.
bool Follower::take_frames(int fd, std::vector<uint8_t>& in) {
  auto heard = std::chrono::steady_clock::now();
  for (;;) {
    size_t at = 0;
    stream::Frame f;
    std::string why;
    auto batch = std::make_shared<std::vector<Received>>();
    uint64_t expect = durable();
    while (stream::take_frame(in, at, f, why)) {
      heard = std::chrono::steady_clock::now();
      if (f.kind == stream::Kind::Beat) {
        primary_save_.store(f.save, std::memory_order_release);
        continue;
      }
      if (f.kind != stream::Kind::Entry || f.prev != expect || f.term < term_.load()) {
        why = f.kind != stream::Kind::Entry
                  ? "a frame that is not an entry"
                  : fmt::format("entry {} (term {}) after save {}, where save {} (term {} or later) was expected",
                                f.save, f.term, f.prev, expect, term_.load());
        break;
      }
      batch->push_back(Received{f.term, f.save, std::vector<uint8_t>(f.payload.begin(), f.payload.end())});
      expect = f.save;
      primary_save_.store(std::max(primary_save(), f.save), std::memory_order_release);
    }
    in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(at));
    if (!batch->empty()) {
      if (!write_entries(*batch)) return false;  // (it takes the entries)
      if (!send_ack(fd)) break;
      say_caught_up();
    }
    if (!why.empty()) {
      fmt::print(err_, "aup: the primary {} sent {}; connecting again\n", primary_, why);
      break;
    }
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, 1000);
    if (n < 0 && errno != EINTR) break;
    if (n == 0 && std::chrono::steady_clock::now() - heard > std::chrono::seconds(kSilentSeconds)) {
      fmt::print(err_, "aup: nothing from the primary {} for {} s; connecting again\n", primary_, kSilentSeconds);
      break;
    }
    if (n <= 0) continue;
    uint8_t buf[64 << 10];
    ssize_t got = ::recv(fd, buf, sizeof buf, 0);
    if (got <= 0) {
      fmt::print(err_, "aup: the connection to the primary {} was lost; connecting again\n", primary_);
      break;
    }
    in.insert(in.end(), buf, buf + got);
  }
  std::fflush(err_);
  return true;
}

// Hands the entries to the owner thread and waits until it has written
// and applied them. False (following stops) when the store refused one.
bool Follower::write_entries(std::vector<Received>& batch) {
  auto held = std::make_shared<std::vector<Received>>(std::move(batch));
  {
    std::lock_guard<std::mutex> lock(mu_);
    written_ = false;
  }
  tasks_.post([this, held] {
    std::string error;
    for (const Received& r : *held) {
      storage::Status st = store_.append_copy(r.term, r.save, r.payload);
      if (!st.ok()) {
        error = fmt::format("entry {} was not taken: {}", r.save, st.message);
        break;
      }
    }
    durable_.store(store_.last_seq(), std::memory_order_release);
    term_.store(store_.term(), std::memory_order_release);
    store_.tick();  // checkpoints, as between a primary's batches
    std::lock_guard<std::mutex> lock(mu_);
    written_ = true;
    write_error_ = error;
    cv_.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return written_ || stop_; });
  if (stop_ || write_error_.empty()) return !stop_;
  std::string why = write_error_;
  lock.unlock();
  give_up(why);
  return false;
}

bool Follower::send_ack(int fd) {
  std::vector<uint8_t> frame;
  uint64_t d = durable();
  stream::put_frame(frame, stream::Frame{stream::Kind::Ack, 0, d, d, 0, {}});
  return send_all(fd, frame.data(), frame.size());
}

}  // namespace aup::runtime

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
#include "runtime/signals.h"
#include "storage/copy.h"
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

// A file name a copy may hold: one of a store's, never a path.
bool store_file_name(std::string_view n) {
  return !n.empty() && n.find('/') == std::string_view::npos && n != "." && n != ".." &&
         (n == "schema" || n == "terms" || n == "image.vars" || n.rfind("image-", 0) == 0 || n.rfind("log-", 0) == 0);
}

}  // namespace

// A task handed to the owner thread, and what came of it. Whatever it
// refers to is its own (held by the closure) or the Follower's: a task
// not yet run when the Follower goes is cancelled, and one running then is
// waited for (~Follower).
struct Follower::Job {
  std::mutex mu;  // held while the task runs
  std::function<std::string()> task;
  bool cancelled = false, ran = false;
  std::string error;
};

Follower::Follower(std::string primary, storage::Store& store, storage::Io& io, OwnerTasks& tasks, std::FILE* err,
                   std::function<void()> restart, std::string node)
    : primary_(std::move(primary)), store_(store), io_(io), tasks_(tasks), err_(err), restart_(std::move(restart)),
      node_(std::move(node)),
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
  std::shared_ptr<Job> job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job = current_;
  }
  if (job) {
    std::lock_guard<std::mutex> running(job->mu);  // waits for it if the owner runs it now
    job->cancelled = true;
  }
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

void Follower::restart(const std::string& why) {
  fmt::print(err_, "aup: {}; restarting to open the store again\n", why);
  std::fflush(err_);
  restarting_.store(true, std::memory_order_release);
  if (restart_) restart_();
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
// or following ends (false: refused, or the store is to be reopened).
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
  uint64_t cut_to = 0;
  Answer answer = handshake(fd, buffered, cut_to);
  std::vector<uint8_t> in(buffered.begin(), buffered.end());
  bool again = answer != Answer::Refused;
  if (answer == Answer::Stream) again = take_frames(fd, in);
  if (answer == Answer::Copy) again = receive_copy(fd, in);
  if (answer == Answer::Cut) again = cut(cut_to);
  connected_.store(false);
  fd_.store(-1);
  ::close(fd);
  return again;
}

// Where the store stands, as the owner thread sees it.
stream::Hello Follower::where() {
  auto h = std::make_shared<stream::Hello>();
  h->schema = schema_file_;
  h->copy = ask_copy_;
  h->node = node_;
  run_on_owner([this, h] {
    h->save = store_.last_seq();
    h->covered = store_.images_cover();
    h->terms = store_.terms();
    return std::string();
  });
  return *h;
}

// Sends where this store stands and reads the primary's answer line
// (bytes after it, the first frames, are left in `buffered`).
Follower::Answer Follower::handshake(int fd, std::string& buffered, uint64_t& cut_to) {
  stream::Hello hello = where();
  std::string line = stream::handshake_line(hello) + "\n";
  if (!send_all(fd, line.data(), line.size())) return Answer::Lost;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kHandshakeSeconds);
  size_t nl;
  while ((nl = buffered.find('\n')) == std::string::npos) {
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, left) <= 0) return Answer::Lost;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return Answer::Lost;
    buffered.append(buf, static_cast<size_t>(n));
  }
  std::string answer = buffered.substr(0, nl);
  buffered.erase(0, nl + 1);
  JsonDoc doc;
  std::string error;
  uint32_t code = doc.parse(answer, error) ? doc.member(doc.root(), "code") : 0;
  std::string_view said = code ? doc.node(code).str : std::string_view();
  uint32_t result = said == "ok" || said == "cut" ? doc.member(doc.root(), "result") : 0;
  uint32_t save = result ? doc.member(result, "save") : 0;
  if (said == "copy") return Answer::Copy;
  if ((said == "ok" || said == "cut") && save && doc.node(save).num >= 0) {
    uint64_t at = static_cast<uint64_t>(doc.node(save).num);
    if (said == "cut") {
      cut_to = at;
      return Answer::Cut;
    }
    uint32_t term = result ? doc.member(result, "term") : 0;
    if (term && doc.node(term).num < hello.terms.last_term()) {
      fmt::print(err_, "aup: the primary {} is in term {}, older than this replica's, {}; connecting again\n",
                 primary_, doc.node(term).num, hello.terms.last_term());
      return Answer::Lost;
    }
    heard_of(at);
    connected_.store(true);
    fmt::print(err_, "aup: following the primary {} from save {} (it is at save {})\n", primary_, hello.save, at);
    catch_up_to_ = at;
    caught_up_said_ = false;
    say_caught_up();
    return Answer::Stream;
  }
  uint32_t message = code ? doc.member(doc.root(), "message") : 0;
  std::string why = message ? std::string(doc.node(message).str) : answer;
  if (said == "not_primary" || said == "unavailable") {
    // Not for good: a cluster's node that does not lead yet, or any more.
    fmt::print(err_, "aup: {} does not serve replicas now ({}); trying again\n", primary_, why);
    return Answer::Lost;
  }
  give_up("the primary refused it: " + why);
  return Answer::Refused;
}

// The primary is at save `save`: this replica is behind from now, unless
// it already was (or holds it).
void Follower::heard_of(uint64_t save) {
  primary_save_.store(save, std::memory_order_release);
  if (save > durable() && behind_since_ns_.load(std::memory_order_relaxed) == 0) {
    behind_since_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_release);
  }
}

double Follower::lag_seconds() const {
  int64_t since = behind_since_ns_.load(std::memory_order_acquire);
  if (since == 0) return 0;
  return static_cast<double>(std::chrono::steady_clock::now().time_since_epoch().count() - since) * 1e-9;
}

ReplicationFigures Follower::figures() const {
  ReplicationFigures f;
  f.role = 2;
  f.term = term_.load(std::memory_order_acquire);
  uint64_t have = durable(), primary = std::max(primary_save(), have);
  f.save = static_cast<double>(have);
  f.primary_save = static_cast<double>(primary);
  f.lag_entries = static_cast<double>(primary - have);
  f.lag_seconds = lag_seconds();
  return f;
}

// Once per connection, when the store holds what the primary held at the
// handshake.
void Follower::say_caught_up() {
  if (!caught_up_said_ && durable() >= catch_up_to_) {
    fmt::print(err_, "aup: caught up with the primary at save {}\n", durable());
    caught_up_said_ = true;
    caught_up_once_.store(true, std::memory_order_release);
  }
  std::fflush(err_);
}

// One more read from the primary into `in`: false when the connection is
// lost or silent too long (said why).
bool Follower::read_more(int fd, std::vector<uint8_t>& in, std::chrono::steady_clock::time_point& heard) {
  pollfd p{fd, POLLIN, 0};
  int n = ::poll(&p, 1, 1000);
  if (n < 0 && errno != EINTR) return false;
  if (n <= 0) {
    if (std::chrono::steady_clock::now() - heard <= std::chrono::seconds(kSilentSeconds)) return true;
    fmt::print(err_, "aup: nothing from the primary {} for {} s; connecting again\n", primary_, kSilentSeconds);
    return false;
  }
  uint8_t buf[64 << 10];
  ssize_t got = ::recv(fd, buf, sizeof buf, 0);
  if (got <= 0) {
    fmt::print(err_, "aup: the connection to the primary {} was lost; connecting again\n", primary_);
    return false;
  }
  in.insert(in.end(), buf, buf + got);
  heard = std::chrono::steady_clock::now();
  return true;
}

// Frames until the connection is lost or falls silent: the entries of
// each read written and applied by the owner, then acknowledged.
bool Follower::take_frames(int fd, std::vector<uint8_t>& in) {
  auto heard = std::chrono::steady_clock::now();
  for (;;) {
    size_t at = 0;
    stream::Frame f;
    std::string why;
    std::vector<Received> batch;
    uint64_t expect = durable();
    while (stream::take_frame(in, at, f, why)) {
      if (f.kind == stream::Kind::Beat) {
        heard_of(f.save);
        continue;
      }
      if (f.kind != stream::Kind::Entry || f.prev != expect || f.term < term_.load()) {
        why = f.kind != stream::Kind::Entry
                  ? "a frame that is not an entry"
                  : fmt::format("entry {} (term {}) after save {}, where save {} (term {} or later) was expected",
                                f.save, f.term, f.prev, expect, term_.load());
        break;
      }
      batch.push_back(Received{f.term, f.save, std::vector<uint8_t>(f.payload.begin(), f.payload.end())});
      expect = f.save;
      heard_of(std::max(primary_save(), f.save));
    }
    in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(at));
    if (!batch.empty()) {
      if (!write_entries(batch)) return false;
      if (!send_ack(fd)) break;
      say_caught_up();
    }
    if (!why.empty()) {
      fmt::print(err_, "aup: the primary {} sent {}; connecting again\n", primary_, why);
      break;
    }
    if (!read_more(fd, in, heard)) break;
  }
  std::fflush(err_);
  return true;
}

// The copy's frames into DIR/copy.partial, then the copy made ready for
// the next open (storage/copy.h) and the process restarted. A lost
// connection leaves the partial copy for the next try to start over.
bool Follower::receive_copy(int fd, std::vector<uint8_t>& in) {
  fmt::print(err_, "aup: receiving a copy of the primary's store from {}\n", primary_);
  std::fflush(err_);
  std::string partial;
  storage::Status st = storage::begin_received_copy(io_, store_.dir(), partial);
  storage::DirSink sink(io_, partial);
  bool open_file = false;
  auto heard = std::chrono::steady_clock::now();
  while (st.ok()) {
    size_t at = 0;
    stream::Frame f;
    std::string why;
    while (st.ok() && stream::take_frame(in, at, f, why)) {
      if (f.kind == stream::Kind::File || f.kind == stream::Kind::CopyEnd) {
        if (open_file) st = sink.end_file();
        open_file = false;
      }
      std::string_view name(reinterpret_cast<const char*>(f.payload.data()), f.payload.size());
      if (!st.ok()) break;
      if (f.kind == stream::Kind::File) {
        st = store_file_name(name) ? sink.begin_file(std::string(name), f.save, f.prev)
                                   : storage::Status::error(fmt::format("a copy's file named `{}`", name));
        open_file = st.ok();
      } else if (f.kind == stream::Kind::Data && open_file) {
        st = sink.write(f.payload.data(), f.payload.size());
      } else if (f.kind == stream::Kind::CopyEnd) {
        st = storage::end_received_copy(io_, store_.dir(), f.save);
        if (!st.ok()) break;
        restart(fmt::format("received a copy of the primary's store at save {}", f.save));
        return false;
      } else {
        st = storage::Status::error("a frame out of place in a copy");
      }
    }
    in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(at));
    if (!why.empty()) st = storage::Status::error(why);
    if (st.ok() && !read_more(fd, in, heard)) return true;
  }
  fmt::print(err_, "aup: the copy from the primary {} was not taken: {}; connecting again\n", primary_, st.message);
  std::fflush(err_);
  return true;
}

// The log cut back to `save` by the owner, then the process restarted; a
// store whose images cover a later save asks for a copy next time.
bool Follower::cut(uint64_t save) {
  auto cut = std::make_shared<storage::CutPrepared>();
  auto err = std::make_shared<int>(0);
  bool ok = run_on_owner([this, save, cut, err] {
    storage::Status st = store_.cut_after(save, *cut);
    *err = st.err;
    return st.message;
  });
  if (!ok && *err == ERANGE) {
    fmt::print(err_, "aup: this replica holds entries after save {} that the primary does not, and its images "
                     "cover them: asking the primary for a copy\n",
               save);
    ask_copy_ = true;
    return true;
  }
  if (!ok) return false;  // run_on_owner said why
  restart(cut->first == 0 ? fmt::format("the primary's log parts from this one after save {}", save)
                          : fmt::format("cut entries {} to {} off the log, after save {} where the primary's parts "
                                        "from it; they are kept in {}",
                                        cut->first, cut->last, save, cut->side_file));
  return false;
}

// Runs `task` on the owner thread and waits for it; false (following
// stops, said why) when it returns a reason, or when stopping.
bool Follower::run_on_owner(std::function<std::string()> task) {
  auto job = std::make_shared<Job>();
  job->task = std::move(task);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return false;
    current_ = job;
  }
  tasks_.post([this, job] {
    std::lock_guard<std::mutex> running(job->mu);
    if (job->cancelled) return;
    std::string error = job->task();
    std::lock_guard<std::mutex> lock(mu_);
    job->ran = true;
    job->error = std::move(error);
    cv_.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this, &job] { return job->ran || stop_; });
  if (!job->ran) return false;
  current_.reset();
  if (job->error.empty()) return true;
  std::string why = job->error;
  lock.unlock();
  if (!restarting()) give_up(why);
  return false;
}

// The entries written and applied by the owner thread. False (following
// stops) when the store refused one.
bool Follower::write_entries(std::vector<Received>& received) {
  auto batch = std::make_shared<std::vector<Received>>(std::move(received));
  return run_on_owner([this, batch] {
    std::string error;
    std::vector<storage::Store::Copy> copies;
    for (const Received& r : *batch) copies.push_back(storage::Store::Copy{r.term, r.save, r.payload});
    storage::Status st = store_.append_copies(copies);
    if (!st.ok()) {
      error = fmt::format("entries {} to {} were not taken: {}", batch->front().save, batch->back().save, st.message);
    }
    durable_.store(store_.last_seq(), std::memory_order_release);
    term_.store(store_.term(), std::memory_order_release);
    if (store_.last_seq() >= primary_save()) behind_since_ns_.store(0, std::memory_order_release);
    store_.tick();  // checkpoints, as between a primary's batches
    return error;
  });
}

bool Follower::send_ack(int fd) {
  std::vector<uint8_t> frame;
  uint64_t d = durable();
  stream::put_frame(frame, stream::Frame{stream::Kind::Ack, 0, d, d, 0, {}});
  return send_all(fd, frame.data(), frame.size());
}

}  // namespace aup::runtime

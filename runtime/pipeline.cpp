#include "runtime/pipeline.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>

#include "runtime/reply.h"

namespace aup::runtime {

std::string too_long_answer(size_t max_line_bytes) {
  std::string out;
  append_error(out, {}, "bad_request", fmt::format("line longer than {} bytes", max_line_bytes));
  return out;
}

// ---- LineFramer ----------------------------------------------------------------------

namespace {
// Whether a request line holds nothing (ignored, not answered).
bool blank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}
// Each read asks for at least this much room, so a long line is not read
// a few bytes at a time.
constexpr size_t kMinReadBytes = 4096;
}  // namespace

LineFramer::LineFramer(size_t max_line_bytes, size_t initial_bytes)
    : max_line_bytes_(max_line_bytes), buf_(std::max(initial_bytes, 2 * kMinReadBytes)) {}

void LineFramer::make_room() {
  if (buf_.size() - end_ >= kMinReadBytes) return;
  // Move the unfinished line to the front; grow only when it fills the
  // buffer, up to the line limit (past it the line is being skipped).
  std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
  if (buf_.size() - end_ < kMinReadBytes) buf_.resize(std::min(buf_.size() * 2, max_line_bytes_ + 65536));
}

ssize_t LineFramer::read_from(int fd) {
  make_room();
  ssize_t n = ::read(fd, buf_.data() + end_, buf_.size() - end_);
  if (n > 0) {
    end_ += static_cast<size_t>(n);
    return n;
  }
  if (n == 0) {
    eof_ = true;
    return 0;
  }
  return -errno;
}

LineFramer::Piece LineFramer::next(std::string_view& line) {
  for (;;) {
    const char* base = buf_.data();
    const char* nl = static_cast<const char*>(std::memchr(base + begin_, '\n', end_ - begin_));
    if (!nl) {
      if (end_ - begin_ > max_line_bytes_) {
        // An unfinished line already over the limit: answered now, its
        // bytes dropped as they come.
        bool first = !skipping_;
        skipping_ = true;
        begin_ = end_ = 0;
        if (first) return Piece::TooLong;
        return Piece::None;
      }
      if (eof_ && end_ > begin_ && !skipping_) {
        line = std::string_view(base + begin_, end_ - begin_);  // the last line, without a newline
        begin_ = end_;
      } else {
        if (begin_ == end_) begin_ = end_ = 0;
        return Piece::None;
      }
    } else {
      size_t line_end = static_cast<size_t>(nl - base);
      line = std::string_view(base + begin_, line_end - begin_);
      begin_ = line_end + 1;
      if (skipping_) {
        skipping_ = false;  // the newline that ends the long line
        continue;
      }
      if (line.size() > max_line_bytes_) return Piece::TooLong;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!blank(line)) return Piece::Line;
  }
}

bool LineFramer::ready() const {
  if (end_ - begin_ > max_line_bytes_) return !skipping_;
  if (std::memchr(buf_.data() + begin_, '\n', end_ - begin_)) return true;
  return eof_ && end_ > begin_ && !skipping_;
}

// ---- Committer -----------------------------------------------------------------------

Committer::Committer(Service& service, Durability& durability, uint32_t max_events)
    : service_(service), durability_(durability), max_events_(max_events) {
  if (Metrics* m = service_.metrics()) m->after_batch(0, 0, true, service_.state(), durability_);
}

size_t Committer::take(uint64_t to, double now, std::string_view request) {
  service_.set_refusing(durability_.refusing());
  bool query = service_.prepared_query();
  Entry& e = next_entry(to);
  Outcome o = service_.finish(now, e.text);
  if (o == Outcome::EventApplied) {
    e.applied = true;
    e.has_result = service_.has_result();
    e.id.assign(service_.id());
    ++events_;
    return e.text.size();
  }
  e.formed = true;
  if (query && events_ > 0) {
    // It read events whose commit may still fail.
    assert(!request.empty());
    e.rerun = true;
    e.request.assign(request);
    e.now = now;
  }
  return e.text.size();
}

void Committer::add(uint64_t to, std::string answer) {
  Entry& e = next_entry(to);
  e.text = std::move(answer);
  e.formed = true;
}

Committer::Entry& Committer::next_entry(uint64_t to) {
  // Not while commit() delivers (a transport's deliver taking a request):
  // the entry would miss its batch's fate, and growing entries_ would move
  // the answers being delivered.
  assert(!settled_);
  if (used_ == entries_.size()) entries_.emplace_back();
  Entry& e = entries_[used_++];
  e.to = to;
  e.text.clear();
  e.id.clear();
  e.applied = false;
  e.has_result = false;
  e.rerun = false;
  e.formed = false;
  return e;
}

bool Committer::settle() {
  // One fate per batch: committed, or failed, once.
  assert(!settled_);
  settled_ = true;
  if (events_ == 0) return false;
  error_.clear();
  bool committed = durability_.commit_batch(error_);
  last_commit_ns_ = durability_.last_commit_ns();  // timed once, by the store
  commit_latency_.add(last_commit_ns_);
  ++commits_;
  // The reason says whether the entry may have been written ("not
  // written: ..." or "perhaps written: ..."); every event of the batch
  // shares the fate of its one entry.
  for (size_t i = 0; i < used_; ++i) {
    Entry& e = entries_[i];
    if (!e.applied) continue;
    assert(!e.formed);  // an answer is formed once
    scratch_.clear();
    if (committed) {
      append_ok(scratch_, e.id, e.has_result ? &e.text : nullptr);
    } else {
      append_error(scratch_, e.id, "unavailable", error_);
    }
    e.text.swap(scratch_);
    e.formed = true;
  }
  if (!committed) rerun_queries();
  return committed;
}

void Committer::publish(uint32_t events, bool committed) {
  if (Metrics* m = service_.metrics()) {
    m->after_batch(last_commit_ns_, events, committed, service_.state(), durability_);
  }
}

// The failed commit undid the events the batch's queries may have read:
// each runs again, in order, on the state that is left.
void Committer::rerun_queries() {
  for (size_t i = 0; i < used_; ++i) {
    Entry& e = entries_[i];
    if (!e.rerun) continue;
    e.text.clear();
    service_.prepare(e.request);
    service_.finish(e.now, e.text);
  }
}

// ---- Outbox --------------------------------------------------------------------------

Outbox::Sent Outbox::send_to(int fd) {
  if (at_ == buf_.size()) return Sent::All;
  ssize_t n = ::send(fd, buf_.data() + at_, buf_.size() - at_, MSG_NOSIGNAL);
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return Sent::Some;
    return Sent::Gone;
  }
  at_ += static_cast<size_t>(n);
  count(-static_cast<int64_t>(n));
  if (at_ == buf_.size()) {
    clear();
    return Sent::All;
  }
  if (at_ > (size_t{1} << 20)) {
    // A slow reader: drop what it took, so the buffer does not only grow.
    buf_.erase(0, at_);
    at_ = 0;
  }
  return Sent::Some;
}

}  // namespace aup::runtime

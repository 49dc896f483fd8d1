#include "bench/tpcc/aup_pipeline.h"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>
#include <utility>

#include "bench/tpcc/aup_json.h"

namespace aup::tpcc {

std::optional<uint64_t> answer_id(std::string_view line) {
  constexpr std::string_view kOpening = R"({"id":)";
  if (line.substr(0, kOpening.size()) != kOpening) return std::nullopt;
  const char* begin = line.data() + kOpening.size();
  const char* end = line.data() + line.size();
  uint64_t id = 0;
  auto [at, error] = std::from_chars(begin, end, id);
  if (error != std::errc() || at == begin || at == end || *at != ',') return std::nullopt;
  return id;
}

Waiter* InFlight::match(std::string_view line) {
  std::string_view quoted = line.substr(0, kMaxQuotedBytes);
  const char* cut = quoted.size() < line.size() ? " (cut)" : "";
  if (queue_.empty()) throw std::runtime_error(fmt::format("an answer to no request: {}{}", quoted, cut));
  Waiter* w = queue_.front();
  std::optional<uint64_t> id = answer_id(line);
  if (!id || *id != w->id) {
    throw std::runtime_error(
        fmt::format("expected the answer to request {} (answers come in request order): {}{}", w->id, quoted, cut));
  }
  queue_.pop_front();
  return w;
}

SharedConnection::SharedConnection(bench::server::Connection conn, uint32_t terminals)
    : conn_(std::move(conn)), terminals_(terminals) {}

uint64_t SharedConnection::next_id() {
  std::lock_guard<std::mutex> lock(mu_);
  return next_id_++;
}

void SharedConnection::ask(Waiter& w, uint64_t id, std::string_view request, std::string_view what) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!broken_.empty()) throw std::runtime_error(fmt::format("aup: {}: {}", what, broken_));
  w.id = id;
  w.answered = false;
  outbox_.append(request);
  in_flight_.push(&w);
  if (!sender_) send_outbox(w, lock);
  while (!w.answered && broken_.empty()) {
    if (!reading_) {
      read_until_answered(w, lock);
    } else {
      w.wake.wait(lock);
    }
  }
  if (!w.answered) throw std::runtime_error(fmt::format("aup: {}: {}", what, broken_));
}

// Called with `lock` held and nobody sending; returns with it held.
void SharedConnection::send_outbox(Waiter& w, std::unique_lock<std::mutex>& lock) {
  sender_ = &w;
  while (!outbox_.empty() && broken_.empty()) {
    sending_buf_.swap(outbox_);  // outbox_ gets the emptied buffer of the last send
    lock.unlock();
    std::string error;
    try {
      conn_.send(sending_buf_);
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    lock.lock();
    sending_buf_.clear();
    if (!error.empty()) break_with(error);
  }
  sender_ = nullptr;
}

// Called with `lock` held and nobody reading; returns with it held once
// `w` is answered or the connection broke, having passed reading on.
void SharedConnection::read_until_answered(Waiter& w, std::unique_lock<std::mutex>& lock) {
  reading_ = true;
  while (!w.answered && broken_.empty()) {
    lock.unlock();
    size_t lines = 0;
    std::string error;
    try {
      conn_.receive([&](std::string_view line) {
        if (lines == lines_.size()) lines_.emplace_back();
        lines_[lines++].assign(line);
      });
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    lock.lock();
    if (!error.empty()) {
      break_with(error);
    } else {
      hand_out(lines);
    }
  }
  reading_ = false;
  // The oldest waiter not sending reads next; a sender finds nobody reading
  // once its send is done.
  if (Waiter* next = in_flight_.oldest_other_than(sender_)) next->wake.notify_one();
}

// Gives the first `lines` of lines_ to their waiters (under mu_).
void SharedConnection::hand_out(size_t lines) {
  for (size_t i = 0; i < lines && broken_.empty(); ++i) {
    Waiter* to = nullptr;
    try {
      to = in_flight_.match(lines_[i]);
    } catch (const std::runtime_error& e) {
      break_with(fmt::format("on a connection shared by {} terminals, {}", terminals_, e.what()));
      return;
    }
    to->answer.swap(lines_[i]);  // the capacities go round between waiters and the reader
    to->answered = true;
    to->wake.notify_one();
  }
}

// Under mu_: every waiter wakes to the reason, and no request goes out again.
void SharedConnection::break_with(const std::string& why) {
  broken_ = why.empty() ? "the connection broke" : why;
  for (Waiter* w : in_flight_.take_all()) w->wake.notify_one();
}

}  // namespace aup::tpcc

#include "bench/retention/pipeline.h"

#include <cassert>
#include <cstring>
#include <optional>
#include <vector>

#include "bench/retention/bounded_queue.h"
#include "bench/retention/buffer_pool.h"
#include "bench/retention/input_reader.h"

namespace aup::retention {
namespace {

// A result waiting for the consumer. For a borrowed selection `buffer` is
// the whole source and `offset` says where the selection starts in it.
struct QueuedResult {
  Buffer buffer;
  uint32_t seq = 0;
  uint32_t offset = 0;
  uint32_t length = 0;
  int64_t started_ns = 0;
  int64_t enqueued_ns = 0;
};

// A record past its header and not yet queued: waiting for room for its
// source, or, with the source held, for room for its selection (the
// copy-in-progress). Its buffers are reclaimed if the run ends early.
struct InFlight {
  RecordHeader header;
  uint32_t seq = 0;
  int64_t started_ns = 0;
  Buffer source;
  Buffer selection;
  bool wants_copy = false;
};

class Pipeline {
 public:
  Pipeline(const RunConfig& config, InputReader& reader, int out_fd, SignalWatch& signals,
           uint32_t record_count)
      : config_(config),
        reader_(reader),
        signals_(signals),
        record_count_(record_count),
        pool_(config.budget_bytes, fixed_bytes(config), policy_reuses_buffers(config.policy)),
        queue_(config.queue_limit),
        consumer_(out_fd, config.timing, record_count),
        scratch_(policy_projects(config.policy) ? kScratchBytes : 0) {}

  Result<RunStats> run();

 private:
  Status loop();
  Result<bool> advance(InFlight& f);
  Result<bool> advance_project(InFlight& f);
  Status emit_head();
  // Sleeps until the head result is due; false if a stop signal came first.
  bool wait_for_head();
  Error no_room(const InFlight& f, size_t bytes) const;
  void push(InFlight& f, Buffer buffer, uint32_t offset);
  void reclaim();

  const RunConfig& config_;
  InputReader& reader_;
  SignalWatch& signals_;
  uint32_t record_count_;
  BufferPool pool_;
  BoundedQueue<QueuedResult> queue_;
  Consumer consumer_;
  std::vector<std::byte> scratch_;  // counted in fixed_bytes
  std::optional<InFlight> in_flight_;
  bool input_done_ = false;
  uint64_t records_ = 0;
  uint64_t copies_ = 0;
  uint64_t bytes_copied_ = 0;
  uint64_t space_waits_ = 0;
  uint64_t sleeps_ = 0;
  uint64_t peak_queue_depth_ = 0;
};

Error Pipeline::no_room(const InFlight& f, size_t bytes) const {
  const char* what = f.source ? "for its selection while its source is held" : "";
  return error(
      "budget too small: record {} needs a {}-byte buffer{}{}, but {} of the {}-byte budget are in use "
      "({} fixed, {} in live buffers) and no queued output is left to free space",
      f.seq, capacity_class(bytes), *what ? " " : "", what, pool_.managed_bytes(), pool_.budget_bytes(),
      pool_.fixed_bytes(), pool_.counters().live_bytes);
}

void Pipeline::push(InFlight& f, Buffer buffer, uint32_t offset) {
  queue_.push(QueuedResult{std::move(buffer), f.seq, offset, f.header.select_length, f.started_ns, now_ns()});
  peak_queue_depth_ = std::max<uint64_t>(peak_queue_depth_, queue_.size());
  ++records_;
}

// project: selection -> result buffer, the bytes around it -> scratch.
Result<bool> Pipeline::advance_project(InFlight& f) {
  const RecordHeader& h = f.header;
  auto buffer = pool_.try_acquire(h.select_length);
  if (!buffer) return false;
  f.selection = std::move(*buffer);
  if (Status s = reader_.discard_body(h.select_offset, scratch_); !s.ok()) return s.take_error();
  if (Status s = reader_.read_body(std::span(f.selection.data(), h.select_length)); !s.ok())
    return s.take_error();
  if (Status s = reader_.discard_body(reader_.body_left(), scratch_); !s.ok()) return s.take_error();
  push(f, std::move(f.selection), 0);
  return true;
}

// Returns true once the record is queued, false if it waits for room.
Result<bool> Pipeline::advance(InFlight& f) {
  if (policy_projects(config_.policy)) return advance_project(f);
  const RecordHeader& h = f.header;
  if (!f.source) {
    auto source = pool_.try_acquire(h.body_length);
    if (!source) return false;
    f.source = std::move(*source);
    if (Status s = reader_.read_body(std::span(f.source.data(), h.body_length)); !s.ok())
      return s.take_error();
    f.wants_copy =
        should_copy(config_.policy,
                    CopyQuestion{f.source.capacity(), capacity_class(h.select_length),
                                 pool_.counters().live_bytes, pool_.budget_bytes() - pool_.fixed_bytes()});
  }
  if (!f.wants_copy) {
    push(f, std::move(f.source), h.select_offset);
    return true;
  }
  auto selection = pool_.try_acquire(h.select_length);
  if (!selection) return false;
  std::memcpy(selection->data(), f.source.data() + h.select_offset, h.select_length);
  ++copies_;
  bytes_copied_ += h.select_length;
  pool_.release(std::move(f.source));
  f.source = Buffer{};
  push(f, std::move(*selection), 0);
  return true;
}

Status Pipeline::emit_head() {
  QueuedResult r = queue_.pop();
  Status s =
      consumer_.write(r.seq, std::span<const std::byte>(r.buffer.data() + r.offset, r.length), r.started_ns);
  pool_.release(std::move(r.buffer));
  return s;
}

// Bounded by the deadline: sigtimedwait returns early only for a watched
// signal, and every watched signal here is a stop.
bool Pipeline::wait_for_head() {
  int64_t due = consumer_.ready_at_ns(queue_.front().enqueued_ns);
  int64_t now = now_ns();
  // Counted because a sleep costs more than it asks for (timer slack and
  // wake-up latency): the pace of a slow-consumer run depends on how often
  // it sleeps, which is worth seeing next to its finish time.
  if (now < due) ++sleeps_;
  for (; now < due; now = now_ns()) {
    signals_.wait_ns(due - now);
    if (signals_.stop_signal() != 0) return false;
  }
  return true;
}

Status Pipeline::loop() {
  // Each step queues a record, writes an output, or notices the end.
  const uint64_t max_steps = 2 * uint64_t{record_count_} + 2;
  for (uint64_t step = 0;; ++step) {
    assert(step <= max_steps && "a step made no progress");
    (void)max_steps;
    signals_.poll();
    if (signals_.stop_signal() != 0) return {};
    if (!queue_.empty() && consumer_.ready_at_ns(queue_.front().enqueued_ns) <= now_ns()) {
      if (Status s = emit_head(); !s.ok()) return s;
      continue;
    }
    if (in_flight_ || (!input_done_ && !queue_.full())) {
      if (!in_flight_) {
        int64_t started = now_ns();
        auto header = reader_.next_header();
        if (!header.ok()) return header.take_error();
        if (!header.value()) {
          input_done_ = true;
          continue;
        }
        in_flight_.emplace();
        in_flight_->header = *header.value();
        in_flight_->seq = reader_.current_seq();
        in_flight_->started_ns = started;
      }
      auto queued = advance(*in_flight_);
      if (!queued.ok()) return queued.take_error();
      if (queued.value()) {
        in_flight_.reset();
        continue;
      }
      const RecordHeader& h = in_flight_->header;
      if (queue_.empty()) return no_room(*in_flight_, in_flight_->source ? h.select_length : h.body_length);
      ++space_waits_;
    } else if (queue_.empty()) {
      assert(input_done_ && !in_flight_);
      return {};
    }
    if (!wait_for_head()) return {};
    if (Status s = emit_head(); !s.ok()) return s;
  }
}

void Pipeline::reclaim() {
  while (!queue_.empty()) pool_.release(queue_.pop().buffer);
  if (in_flight_) {
    if (in_flight_->source) pool_.release(std::move(in_flight_->source));
    if (in_flight_->selection) pool_.release(std::move(in_flight_->selection));
    in_flight_.reset();
  }
  pool_.drain();
}

Result<RunStats> Pipeline::run() {
  int64_t t0 = now_ns();
  Status outcome = loop();
  reclaim();
  int64_t elapsed = now_ns() - t0;
  if (!outcome.ok()) return outcome.take_error();

  const PoolCounters& c = pool_.counters();
  RunStats st;
  st.policy = std::string(policy_name(config_.policy));
  st.records = records_;
  st.outputs = consumer_.outputs();
  st.interrupted = signals_.stop_signal() != 0;
  st.reclaimed =
      c.live_buffers == 0 && c.live_bytes == 0 && c.pooled_bytes == 0 && c.allocation_calls == c.free_calls;
  st.elapsed_ns = elapsed;
  st.latency_p50_ns = percentile(consumer_.latencies_ns(), 500);
  st.latency_p99_ns = percentile(consumer_.latencies_ns(), 990);
  st.latency_max_ns = percentile(consumer_.latencies_ns(), 1000);
  st.budget_bytes = pool_.budget_bytes();
  st.fixed_bytes = pool_.fixed_bytes();
  st.peak_managed_bytes = c.peak_managed_bytes;
  st.peak_live_bytes = c.peak_live_bytes;
  st.peak_live_buffers = c.peak_live_buffers;
  st.peak_queue_depth = peak_queue_depth_;
  st.copies = copies_;
  st.bytes_copied = bytes_copied_;
  st.allocation_calls = c.allocation_calls;
  st.free_calls = c.free_calls;
  st.reuses = c.reuses;
  st.evictions = c.evictions;
  st.space_waits = space_waits_;
  st.sleeps = sleeps_;
  st.input_bytes_read = reader_.bytes_read();
  st.output_bytes = consumer_.output_bytes();
  return st;
}

}  // namespace

uint64_t fixed_bytes(const RunConfig& config) {
  return BoundedQueue<QueuedResult>::storage_bytes(config.queue_limit) + kRecordHeaderBytes +
         (policy_projects(config.policy) ? kScratchBytes : 0);
}

Result<RunStats> run_pipeline(const RunConfig& config, int in_fd, int out_fd, SignalWatch& signals) {
  if (config.queue_limit < 1 || config.queue_limit > kMaxQueueLimit) {
    return error("queue limit {} is outside 1..{}", config.queue_limit, kMaxQueueLimit);
  }
  uint64_t fixed = fixed_bytes(config);
  if (fixed > config.budget_bytes) {
    return error(
        "budget too small: the fixed space ({} bytes for {} queue slots, the header{}) exceeds the "
        "{}-byte budget",
        fixed, config.queue_limit, policy_projects(config.policy) ? " and the scratch buffer" : "",
        config.budget_bytes);
  }
  InputReader reader(in_fd);
  auto header = reader.read_file_header();
  if (!header.ok()) return header.take_error();
  Pipeline pipeline(config, reader, out_fd, signals, header.value().record_count);
  return pipeline.run();
}

}  // namespace aup::retention

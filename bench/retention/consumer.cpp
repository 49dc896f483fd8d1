#include "bench/retention/consumer.h"

#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <limits>

#include "bench/retention/instrumentation.h"
#include "bench/retention/io.h"
#include "bench/retention/record_format.h"

namespace aup::retention {

Consumer::Consumer(int out_fd, ConsumerTiming timing, uint32_t max_outputs)
    : out_fd_(out_fd),
      timing_(timing),
      max_outputs_(max_outputs),
      // No previous output: the gap does not delay the first one.
      last_output_ns_(std::numeric_limits<int64_t>::min() / 2) {
  assert(timing.hold_ns >= 0 && timing.gap_ns >= 0);
  latencies_ns_.reserve(max_outputs);
}

int64_t Consumer::ready_at_ns(int64_t enqueued_ns) const {
  return std::max(enqueued_ns + timing_.hold_ns, last_output_ns_ + timing_.gap_ns);
}

Status Consumer::write(uint32_t seq, std::span<const std::byte> selection, int64_t started_ns) {
  assert(seq == outputs() && "outputs leave in input order");
  assert(outputs() < max_outputs_);
  std::array<std::byte, kFrameHeaderBytes> frame{};
  encode_frame_header(seq, static_cast<uint32_t>(selection.size()), frame.data());
  std::array<iovec, 2> pieces{iovec{frame.data(), frame.size()},
                              iovec{const_cast<std::byte*>(selection.data()), selection.size()}};
  if (Status s = write_all(out_fd_, pieces); !s.ok()) {
    return error("cannot write output (record {}): {}", seq, s.message());
  }
  last_output_ns_ = now_ns();
  output_bytes_ += frame.size() + selection.size();
  latencies_ns_.push_back(last_output_ns_ - started_ns);
  return {};
}

}  // namespace aup::retention

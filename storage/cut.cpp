#include "storage/cut.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "storage/file_io.h"
#include "storage/log.h"
#include "vm/bytes.h"

namespace aup::storage {

namespace {

constexpr const char* kMarker = "cut";
constexpr uint8_t kMagic[8] = {'a', 'u', 'p', 'c', 'u', 't', '1', 0};
constexpr size_t kSideHeaderBytes = 32;
constexpr DurablePoints kSidePoints{"", "", "", "cut.side_written"};
constexpr DurablePoints kMarkerPoints{"", "", "", "cut.marked"};
constexpr size_t kZeroChunk = size_t{1} << 20;

struct Range {
  uint64_t from = 0, to = 0;
};

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Entry `e` as the side file holds it.
void append_side_entry(std::vector<uint8_t>& out, const LogEntry& e) {
  size_t at = out.size();
  out.resize(at + log_format::entry_bytes(e.payload.size()) - log_format::kEntryHeaderBytes + kSideHeaderBytes, 0);
  uint8_t* p = out.data() + at;
  bytes::put_u32(p, static_cast<uint32_t>(e.payload.size()));
  bytes::put_u32(p + 4, e.term);
  bytes::put_u64(p + 8, e.seq);
  bytes::put_u64(p + 16, e.prev_seq);
  bytes::put_u64(p + 24, XXH3_64bits(e.payload.data(), e.payload.size()));
  if (!e.payload.empty()) std::memcpy(p + kSideHeaderBytes, e.payload.data(), e.payload.size());
}

std::string marker_text(uint64_t after, const std::map<uint64_t, Range>& ranges) {
  std::string text = fmt::format("after {}\n", after);
  for (const auto& [segment, r] : ranges) text += fmt::format("log-{} {} {}\n", segment, r.from, r.to);
  return text;
}

bool take_number(std::string_view& s, uint64_t& v) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(end - s.data()));
  return true;
}

bool take_word(std::string_view& s, std::string_view word) {
  if (s.substr(0, word.size()) != word) return false;
  s.remove_prefix(word.size());
  return true;
}

// The marker's text: the save kept and the ranges, or why it is damaged.
Status parse_marker(std::string_view text, const std::string& path, uint64_t& after,
                    std::vector<std::pair<uint64_t, Range>>& ranges) {
  size_t nl = text.find('\n');
  std::string_view line = text.substr(0, nl);
  bool ok = nl != std::string_view::npos && take_word(line, "after ") && take_number(line, after) && line.empty();
  for (text.remove_prefix(ok ? nl + 1 : text.size()); ok && !text.empty();) {
    nl = text.find('\n');
    line = text.substr(0, nl);
    std::pair<uint64_t, Range> r;
    ok = nl != std::string_view::npos && take_word(line, "log-") && take_number(line, r.first) &&
         take_word(line, " ") && take_number(line, r.second.from) && take_word(line, " ") &&
         take_number(line, r.second.to) && line.empty() && r.second.from >= log_format::kHeaderBytes &&
         r.second.from <= r.second.to;
    if (ok) ranges.push_back(r);
    text.remove_prefix(ok ? nl + 1 : text.size());
  }
  if (ok) return Status::good();
  return Status::error(fmt::format("{} is damaged: a cut in progress is `after SAVE` and lines `log-N FROM TO`; "
                                   "refusing to open",
                                   path));
}

// Zeros over bytes [r.from, r.to) of log-N, synced. A segment that is not
// there any more holds nothing to zero.
Status zero_range(Io& io, const std::string& dir, uint64_t segment, Range r) {
  std::string path = fmt::format("{}/log-{}", dir, segment);
  int fd = io.open(path, O_WRONLY, 0);
  if (fd == -ENOENT) return Status::good();
  if (fd < 0) return Status::error(fmt::format("cannot open {}: {}", path, std::strerror(-fd)), -fd);
  static const std::vector<uint8_t> zeros(kZeroChunk, 0);
  Status st;
  for (uint64_t at = r.from; at < r.to && st.ok(); at += kZeroChunk) {
    st = write_all(io, fd, zeros.data(), static_cast<size_t>(std::min<uint64_t>(kZeroChunk, r.to - at)), at, path);
  }
  if (int rc = st.ok() ? io.fdatasync(fd) : 0; rc < 0) {
    st = Status::error(fmt::format("cannot sync {}: {}", path, std::strerror(-rc)), -rc);
  }
  io.close(fd);
  return st;
}

}  // namespace

Status prepare_cut(Io& io, const std::string& dir, uint64_t after, CutPrepared& out) {
  out = CutPrepared();
  std::vector<uint8_t> side(kMagic, kMagic + sizeof kMagic);
  std::map<uint64_t, Range> ranges;
  Log::Options lo;
  lo.read_only = true;
  std::unique_ptr<Log> log;
  LogOpenReport report;
  Status st = Log::open(
      io, dir, lo,
      [&](const LogEntry& e) {
        if (e.seq <= after) return Status::good();
        if (out.first == 0) out.first = e.seq;
        out.last = e.seq;
        append_side_entry(side, e);
        uint64_t end = e.offset + log_format::entry_bytes(e.payload.size());
        auto [it, fresh] = ranges.try_emplace(e.segment, Range{e.offset, end});
        if (!fresh) it->second.to = end;
        return Status::good();
      },
      log, report);
  if (!st.ok() || out.first == 0) return st;
  std::string name = fmt::format("cut-{}-{}", out.first, out.last);
  st = write_file_durably(io, dir, name, side, DurableWrite{kSidePoints, {}});
  if (!st.ok()) return st;
  out.side_file = fmt::format("{}/{}", dir, name);
  return write_file_durably(io, dir, kMarker, as_bytes(marker_text(after, ranges)), DurableWrite{kMarkerPoints, {}});
}

Status finish_cut(Io& io, const std::string& dir, uint64_t& after) {
  after = UINT64_MAX;
  std::string path = fmt::format("{}/{}", dir, kMarker);
  std::vector<uint8_t> bytes;
  Status st = read_file(io, path, bytes);
  if (!st.ok()) return st.err == ENOENT ? Status::good() : st;
  std::vector<std::pair<uint64_t, Range>> ranges;
  st = parse_marker(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path, after, ranges);
  for (size_t i = 0; i < ranges.size() && st.ok(); ++i) {
    st = zero_range(io, dir, ranges[i].first, ranges[i].second);
    io.point("cut.zeroed");
  }
  if (!st.ok()) return st;
  if (int rc = io.unlink(path); rc < 0) {
    return Status::error(fmt::format("cannot remove {}: {}", path, std::strerror(-rc)), -rc);
  }
  return sync_directory(io, dir);
}

}  // namespace aup::storage

#include "runtime/replication_stream.h"

#include <fmt/format.h>
#include <xxhash.h>

#include "storage/log_format.h"
#include "vm/bytes.h"

namespace aup::runtime::stream {

using bytes::get_u32;
using bytes::get_u64;
using bytes::put_u32;
using bytes::put_u64;

void put_frame(std::vector<uint8_t>& out, const Frame& f) {
  size_t at = out.size();
  out.resize(at + kFrameHeaderBytes + f.payload.size(), 0);
  uint8_t* h = out.data() + at;
  h[0] = static_cast<uint8_t>(f.kind);
  put_u32(h + 4, f.term);
  put_u32(h + 8, static_cast<uint32_t>(f.payload.size()));
  put_u64(h + 16, f.save);
  put_u64(h + 24, f.prev);
  if (f.kind == Kind::Entry) put_u64(h + 32, XXH3_64bits(f.payload.data(), f.payload.size()));
  if (!f.payload.empty()) std::copy(f.payload.begin(), f.payload.end(), h + kFrameHeaderBytes);
}

bool take_frame(const std::vector<uint8_t>& in, size_t& at, Frame& f, std::string& why) {
  why.clear();
  if (in.size() - at < kFrameHeaderBytes) return false;
  const uint8_t* h = in.data() + at;
  uint8_t kind = h[0];
  if (kind != 'E' && kind != 'B' && kind != 'A') {
    why = fmt::format("a frame of unknown kind {}", kind);
    return false;
  }
  uint32_t len = get_u32(h + 8);
  if (len > storage::log_format::kMaxPayloadBytes || (kind != 'E' && len != 0)) {
    why = fmt::format("a frame whose payload length {} cannot be", len);
    return false;
  }
  if (in.size() - at - kFrameHeaderBytes < len) return false;
  f.kind = static_cast<Kind>(kind);
  f.term = get_u32(h + 4);
  f.save = get_u64(h + 16);
  f.prev = get_u64(h + 24);
  f.digest = get_u64(h + 32);
  f.payload = std::span<const uint8_t>(h + kFrameHeaderBytes, len);
  if (f.kind == Kind::Entry && XXH3_64bits(f.payload.data(), len) != f.digest) {
    why = fmt::format("entry {}'s payload does not match its digest", f.save);
    return false;
  }
  at += kFrameHeaderBytes + len;
  return true;
}

std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

bool from_hex(std::string_view hex, std::vector<uint8_t>& out) {
  if (hex.size() % 2) return false;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  out.clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = digit(hex[i]), lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return true;
}

std::string handshake_line(uint64_t save, uint32_t term, std::span<const uint8_t> schema_body) {
  return fmt::format(R"({{"replicate":{{"save":{},"term":{},"schema":"{}"}}}})", save, term, to_hex(schema_body));
}

}  // namespace aup::runtime::stream

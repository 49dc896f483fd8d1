// The one byte codec of every file aup writes: the log, the images, the
// schema file (storage/) and the module file (vm/module_file.cpp).
//
//   fixed16/32/64  little-endian, whatever the host
//   varint         unsigned LEB128: 7 bits a byte, low first, the high bit
//                  set on every byte but the last; at most kMaxVarintBytes,
//                  and a tenth byte may hold only the top bit of 64
//   bytes          varint length, then that many bytes
//
// Writing appends to a vector; reading is bounds-checked and keeps the
// first problem (what, and the byte where it was found), after which every
// read returns zeros, so a decoder reads straight through and checks once.
// Header-only and allocation-free on the success paths: log records are
// encoded on the owner thread for every committed batch.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace aup::bytes {

inline constexpr size_t kMaxVarintBytes = 10;

inline void put_u16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint16_t get_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
inline uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{p[i]} << (8 * i);
  return v;
}
inline uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

// memcpy of n bytes, with a copy of up to 32 (most texts and keys) inline:
// two moves of 1, 4, 8 or 16 bytes, the second ending where the bytes
// end, so they overlap rather than loop. The call into libc's memcpy cost
// more than the copy for the 20 million short texts of a W=10 TPC-C open.
inline void copy(void* to, const void* from, size_t n) {
  auto* d = static_cast<uint8_t*>(to);
  const auto* s = static_cast<const uint8_t*>(from);
  auto move = [&](size_t at, size_t width) {
    uint64_t w[2];
    std::memcpy(w, s + at, width);  // a constant width: no call
    std::memcpy(d + at, w, width);
  };
  if (n > 32) {
    std::memcpy(d, s, n);
  } else if (n >= 16) {
    move(0, 16);
    move(n - 16, 16);
  } else if (n >= 8) {
    move(0, 8);
    move(n - 8, 8);
  } else if (n >= 4) {
    move(0, 4);
    move(n - 4, 4);
  } else if (n > 0) {
    d[0] = s[0];
    d[n / 2] = s[n / 2];
    d[n - 1] = s[n - 1];
  }
}

// Appends to a vector the caller owns (and may reuse between writes).
class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(v); }
  void fixed16(uint16_t v) { append_le(v, 2); }
  void fixed32(uint32_t v) { append_le(v, 4); }
  void fixed64(uint64_t v) { append_le(v, 8); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<uint8_t>(v));
  }
  void bytes(std::string_view s) {
    varint(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void raw(const uint8_t* p, size_t n) { out_.insert(out_.end(), p, p + n); }
  size_t size() const { return out_.size(); }
  std::vector<uint8_t>& out() { return out_; }

 private:
  void append_le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t>& out_;
};

// Reads a span. `base` is the span's offset in its file, so problems name
// the file's byte.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n, size_t base = 0) : begin_(p), p_(p), end_(p + n), base_(base) {}

  bool ok() const { return what_ == nullptr; }  // every failure sets it (fail_at too)
  bool done() const { return p_ == end_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  // The offset of the next byte to read (in the file, with `base`).
  size_t offset() const { return offset_of(p_); }
  const uint8_t* position() const { return p_; }
  // The file offset of a position in the span (an earlier position()).
  size_t offset_of(const uint8_t* p) const { return base_ + static_cast<size_t>(p - begin_); }
  // The first problem: "malformed varint at byte 17".
  std::string error() const {
    if (ok()) return {};
    return problem() + " at byte " + std::to_string(error_at_);
  }
  // Its two parts: what ("malformed varint") and the byte (17).
  std::string problem() const {
    if (ok()) return {};
    return detail_.empty() ? std::string(what_) : detail_;
  }
  size_t error_offset() const { return error_at_; }
  // Records the first problem (a literal, so failing allocates nothing)
  // and stops reading.
  void fail(const char* what) {
    if (ok()) {
      what_ = what;
      error_at_ = offset();
    }
    p_ = end_;
  }
  // The same with words made at run time (counts, tags).
  void fail(std::string what) { fail_at(offset(), std::move(what)); }
  // A problem with a value already read, named at its first byte `at` (an
  // offset in the file, as offset() gives).
  void fail_at(size_t at, std::string what) {
    if (ok()) {
      what_ = "malformed value";  // what problem() says if `what` is empty
      detail_ = std::move(what);
      error_at_ = at;
    }
    p_ = end_;
  }
  // Takes on a sub-reader's first problem (sub() gave it), if this reader
  // has none yet.
  void adopt(const Reader& inner) {
    if (!inner.ok() && ok()) {
      what_ = inner.what_;
      detail_ = inner.detail_;
      error_at_ = inner.error_at_;
      p_ = end_;
    }
  }
  // The next n bytes as a reader of their own, whose offsets are still the
  // file's (a section, a record).
  Reader sub(size_t n) {
    if (n > left()) {
      fail("a length longer than the bytes left");
      return Reader(p_, 0, offset());
    }
    Reader r(p_, n, offset());
    p_ += n;
    return r;
  }

  uint8_t u8() {
    if (p_ >= end_) {
      fail("truncated");
      return 0;
    }
    return *p_++;
  }
  uint16_t fixed16() { return static_cast<uint16_t>(take_le(2)); }
  uint32_t fixed32() { return static_cast<uint32_t>(take_le(4)); }
  uint64_t fixed64() { return take_le(8); }
  // A problem inside a varint, a length or a count is named at its first
  // byte.
  //
  // Small enough to inline where values are decoded (a row of an image,
  // a record of the log: a store's open decodes every field of every row):
  // one byte here; with room for the longest, one of up to eight bytes
  // from one 8-byte load, without a branch on its length (the lengths of
  // a row's fields vary, so a loop a byte mispredicts its exit), a longer
  // one without a bounds check a byte; the rest (the span's last bytes,
  // problems) out of line.
  uint64_t varint() {
    if (p_ < end_ && *p_ < 0x80) return *p_++;  // most varints: one byte
    if (left() >= kMaxVarintBytes) {
      if constexpr (std::endian::native == std::endian::little) {
        uint64_t word;
        std::memcpy(&word, p_, sizeof word);
        if (uint64_t ends = ~word & 0x8080808080808080u) {  // a byte with its top bit clear is the last
          auto bits = static_cast<unsigned>(std::countr_zero(ends)) + 1;  // 8 x its bytes
          p_ += bits / 8;
          return gather7(bits == 64 ? word : word & ((uint64_t{1} << bits) - 1));
        }
      }
      uint64_t v = 0;
      for (size_t i = 0; i < kMaxVarintBytes - 1; ++i) {
        uint8_t b = p_[i];
        v |= uint64_t{b & 0x7Fu} << (7 * i);
        if (b < 0x80) {
          p_ += i + 1;
          return v;
        }
      }
      if (p_[kMaxVarintBytes - 1] <= 1) {  // the tenth byte: the top bit of 64 at most
        v |= uint64_t{p_[kMaxVarintBytes - 1]} << 63;
        p_ += kMaxVarintBytes;
        return v;
      }
    }
    return varint_near_end();
  }
  // The low 7 bits of each byte of `w`, packed: byte pairs into 14-bit
  // lanes, those into 28, those into 56.
  static uint64_t gather7(uint64_t w) {
    w = (w & 0x007F007F007F007Fu) | ((w & 0x7F007F007F007F00u) >> 1);
    w = (w & 0x00003FFF00003FFFu) | ((w & 0x3FFF00003FFF0000u) >> 2);
    return (w & 0x000000000FFFFFFFu) | ((w & 0x0FFFFFFF00000000u) >> 4);
  }
  // varint() byte by byte, bounds checked: fewer than kMaxVarintBytes
  // left, or a malformed varint (reported at its first byte).
  [[gnu::noinline]] uint64_t varint_near_end() {
    const uint8_t* start = p_;
    uint64_t v = 0;
    for (size_t i = 0; i < kMaxVarintBytes; ++i) {
      if (p_ >= end_) {
        fail("truncated");
        return 0;
      }
      uint8_t b = *p_++;
      if (i == kMaxVarintBytes - 1 && b > 1) break;  // past 64 bits
      v |= uint64_t{b & 0x7Fu} << (7 * i);
      if (!(b & 0x80)) return v;
    }
    fail_at(offset_of(start), "malformed varint");
    return 0;
  }
  // A varint length, then that many bytes (a view into the span).
  std::string_view bytes() {
    const uint8_t* start = p_;
    uint64_t n = varint();
    if (n > left()) {
      fail_at(offset_of(start), "a length of " + std::to_string(n) + ", longer than the bytes left");
      return {};
    }
    std::string_view s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  // A count of items each at least `min_bytes` long: bounded by the bytes
  // left, so a damaged count cannot make a reader reserve gigabytes.
  uint64_t count(size_t min_bytes) {
    const uint8_t* start = p_;
    uint64_t n = varint();
    if (n > left() / (min_bytes ? min_bytes : 1)) {
      fail_at(offset_of(start), "a count of " + std::to_string(n) + ", more than the bytes left hold");
      return 0;
    }
    return n;
  }
  void skip(size_t n) {
    if (n > left()) {
      fail("truncated");
      return;
    }
    p_ += n;
  }

 private:
  uint64_t take_le(int n) {
    if (left() < static_cast<size_t>(n)) {
      fail("truncated");
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t{p_[i]} << (8 * i);
    p_ += n;
    return v;
  }

  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
  size_t base_;
  const char* what_ = nullptr;
  std::string detail_;
  size_t error_at_ = 0;
};

}  // namespace aup::bytes

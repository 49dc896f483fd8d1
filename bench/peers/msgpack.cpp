#include "bench/peers/msgpack.h"

#include <bit>
#include <cstring>
#include <stdexcept>

namespace aup::bench::peers::msgpack {

namespace {

constexpr int kMaxDepth = 32;

void put_big_endian(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// A count with its three forms: fix (`fix` | n below `fix_limit`), 16-bit
// (`b16`) and 32-bit (`b32`) — the layout strings, arrays and maps share.
void put_count(std::string& out, uint64_t n, uint8_t fix, uint64_t fix_limit, uint8_t b16, uint8_t b32) {
  if (n < fix_limit) {
    out += static_cast<char>(fix | n);
  } else if (n <= 0xffff) {
    out += static_cast<char>(b16);
    put_big_endian(out, n, 2);
  } else {
    out += static_cast<char>(b32);
    put_big_endian(out, n, 4);
  }
}

}  // namespace

void put_uint(std::string& out, uint64_t v) {
  if (v < 0x80) {
    out += static_cast<char>(v);
  } else if (v <= 0xff) {
    out += static_cast<char>(0xcc);
    put_big_endian(out, v, 1);
  } else if (v <= 0xffff) {
    out += static_cast<char>(0xcd);
    put_big_endian(out, v, 2);
  } else if (v <= 0xffffffff) {
    out += static_cast<char>(0xce);
    put_big_endian(out, v, 4);
  } else {
    out += static_cast<char>(0xcf);
    put_big_endian(out, v, 8);
  }
}

void put_str(std::string& out, std::string_view s) {
  if (s.size() < 32) {
    out += static_cast<char>(0xa0 | s.size());
  } else if (s.size() <= 0xff) {
    out += static_cast<char>(0xd9);
    put_big_endian(out, s.size(), 1);
  } else {
    put_count(out, s.size(), 0xa0, 0, 0xda, 0xdb);
  }
  out += s;
}

void put_array(std::string& out, uint32_t n) { put_count(out, n, 0x90, 16, 0xdc, 0xdd); }
void put_map(std::string& out, uint32_t n) { put_count(out, n, 0x80, 16, 0xde, 0xdf); }

void patch_uint32(std::string& out, size_t at, uint32_t v) {
  std::string word;
  word += static_cast<char>(0xce);
  put_big_endian(word, v, 4);
  out.replace(at, word.size(), word);
}

uint8_t Reader::byte() {
  if (at_ >= in_.size()) throw std::runtime_error("a MessagePack value is cut off");
  return static_cast<uint8_t>(in_[at_++]);
}

uint64_t Reader::big_endian(size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | byte();
  return v;
}

std::string_view Reader::take(size_t n) {
  if (in_.size() - at_ < n) throw std::runtime_error("a MessagePack value is cut off");
  std::string_view s = in_.substr(at_, n);
  at_ += n;
  return s;
}

void Reader::mismatch(const char* wanted) const {
  throw std::runtime_error(std::string("MessagePack: expected ") + wanted + " at byte " + std::to_string(at_));
}

bool Reader::is_nil() const { return at_ < in_.size() && static_cast<uint8_t>(in_[at_]) == 0xc0; }

int64_t Reader::integer() {
  uint8_t b = byte();
  if (b < 0x80) return b;
  if (b >= 0xe0) return static_cast<int8_t>(b);
  switch (b) {
    case 0xcc: return static_cast<int64_t>(big_endian(1));
    case 0xcd: return static_cast<int64_t>(big_endian(2));
    case 0xce: return static_cast<int64_t>(big_endian(4));
    case 0xcf: return static_cast<int64_t>(big_endian(8));
    case 0xd0: return static_cast<int8_t>(big_endian(1));
    case 0xd1: return static_cast<int16_t>(big_endian(2));
    case 0xd2: return static_cast<int32_t>(big_endian(4));
    case 0xd3: return static_cast<int64_t>(big_endian(8));
    default: --at_; mismatch("an integer");
  }
}

double Reader::number() {
  uint8_t b = static_cast<uint8_t>(at_ < in_.size() ? in_[at_] : 0);
  if (b == 0xca) {
    ++at_;
    return std::bit_cast<float>(static_cast<uint32_t>(big_endian(4)));
  }
  if (b == 0xcb) {
    ++at_;
    return std::bit_cast<double>(big_endian(8));
  }
  return static_cast<double>(integer());
}

bool Reader::boolean() {
  uint8_t b = byte();
  if (b == 0xc2 || b == 0xc3) return b == 0xc3;
  --at_;
  mismatch("a boolean");
}

std::string_view Reader::str() {
  uint8_t b = byte();
  if ((b & 0xe0) == 0xa0) return take(b & 0x1f);
  switch (b) {
    case 0xd9: case 0xc4: return take(big_endian(1));
    case 0xda: case 0xc5: return take(big_endian(2));
    case 0xdb: case 0xc6: return take(big_endian(4));
    default: --at_; mismatch("a string");
  }
}

uint32_t Reader::array() {
  uint8_t b = byte();
  if ((b & 0xf0) == 0x90) return b & 0x0f;
  if (b == 0xdc) return static_cast<uint32_t>(big_endian(2));
  if (b == 0xdd) return static_cast<uint32_t>(big_endian(4));
  --at_;
  mismatch("an array");
}

uint32_t Reader::map() {
  uint8_t b = byte();
  if ((b & 0xf0) == 0x80) return b & 0x0f;
  if (b == 0xde) return static_cast<uint32_t>(big_endian(2));
  if (b == 0xdf) return static_cast<uint32_t>(big_endian(4));
  --at_;
  mismatch("a map");
}

void Reader::skip(int depth) {
  if (depth > kMaxDepth) throw std::runtime_error("a MessagePack value nested too deep");
  uint8_t b = static_cast<uint8_t>(at_ < in_.size() ? in_[at_] : 0);
  if (at_ >= in_.size()) throw std::runtime_error("a MessagePack value is cut off");
  if ((b & 0xf0) == 0x90 || b == 0xdc || b == 0xdd) {
    for (uint32_t n = array(); n > 0; --n) skip(depth + 1);
  } else if ((b & 0xf0) == 0x80 || b == 0xde || b == 0xdf) {
    for (uint32_t n = map(); n > 0; --n) {
      skip(depth + 1);
      skip(depth + 1);
    }
  } else if ((b & 0xe0) == 0xa0 || (b >= 0xd9 && b <= 0xdb) || (b >= 0xc4 && b <= 0xc6)) {
    str();
  } else if (b < 0x80 || b >= 0xe0 || (b >= 0xcc && b <= 0xcf) || (b >= 0xd0 && b <= 0xd3)) {
    integer();
  } else if (b == 0xca || b == 0xcb) {
    number();
  } else if (b == 0xc0 || b == 0xc2 || b == 0xc3) {
    ++at_;
  } else if (b >= 0xd4 && b <= 0xd8) {  // fixext 1, 2, 4, 8, 16: a type byte and the data
    ++at_;
    take(1 + (size_t{1} << (b - 0xd4)));
  } else if (b >= 0xc7 && b <= 0xc9) {  // ext 8, 16, 32: a length, a type byte, the data
    ++at_;
    size_t n = big_endian(size_t{1} << (b - 0xc7));
    take(1 + n);
  } else {
    mismatch("a value");
  }
}

}  // namespace aup::bench::peers::msgpack

// MessagePack, as much as IPROTO needs: unsigned integers, strings,
// arrays and maps written; every type read or skipped (Tarantool answers
// with integers of either sign, doubles, strings, booleans, nil, arrays,
// maps, and MP_EXT for decimals and errors).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace aup::bench::peers::msgpack {

void put_uint(std::string& out, uint64_t v);
void put_str(std::string& out, std::string_view s);
void put_array(std::string& out, uint32_t n);
void put_map(std::string& out, uint32_t n);
// A uint always as 0xce and four bytes: IPROTO's length prefix, written
// before its length is known and patched at `at` afterwards.
void patch_uint32(std::string& out, size_t at, uint32_t v);

// Reads values one after another from `in`. Every read throws
// std::runtime_error when the next value is of another type or is cut off.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool at_end() const { return at_ == in_.size(); }
  size_t offset() const { return at_; }

  bool is_nil() const;
  // A positive or negative integer.
  int64_t integer();
  // An integer, a float or a double, as a double.
  double number();
  bool boolean();
  // A str or a bin.
  std::string_view str();
  // Their element counts (a map's is its pairs).
  uint32_t array();
  uint32_t map();
  // Passes over one whole value (nested ones too); depth bounded at 32.
  void skip(int depth = 0);

 private:
  uint8_t byte();
  // `n` bytes, big-endian, as an unsigned number.
  uint64_t big_endian(size_t n);
  std::string_view take(size_t n);
  [[noreturn]] void mismatch(const char* wanted) const;

  std::string_view in_;
  size_t at_ = 0;
};

}  // namespace aup::bench::peers::msgpack

// The JIT's object cache: machine code of a module kept on disk between
// runs, so `aup run` does not pay LLVM's 0.1-0.3 s per start for a module
// it has compiled before.
//
// A file per key, DIR/KEY.o (KEY: 16 hex digits):
//
//   offset size  field
//   0      8     magic "AUPJITO1"
//   8      8     key (little-endian u64), again: a renamed file is a miss
//   16     8     object length N (little-endian u64)
//   24     8     XXH3-64 of the N object bytes (little-endian u64)
//   32     N     an ELF relocatable object, as LLVM emitted it
//
// The key (vm/jit/jit.cpp) hashes everything the machine code depends on:
// the module's encoded bytes, the JIT module's own file (its identity: so a
// rebuilt translator never reads an old object), the LLVM version, and the host's
// target triple, CPU and features. The object holds no address of this
// process (text constants come through NativeCtx::constants; runtime calls
// are relocations resolved when it is linked).
//
// Size: after each write, if the directory's objects pass kMaxCacheBytes,
// the least recently written are removed until they are under three
// quarters of it (an object of a typical module is 10-100 KB).
//
// Recovery: any file that is short, has another magic or key, another
// length or a checksum that does not match is ignored and rewritten (a
// miss). Writes go to a temporary name and are renamed into place, so two
// processes filling the same key never leave a torn file. A cache that
// cannot be written is not an error: the run goes on with the code it
// compiled.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace aup::vm::jit {

inline constexpr size_t kCacheHeaderBytes = 32;
inline constexpr uint64_t kMaxCachedObjectBytes = uint64_t{1} << 30;  // a bound on what is read back
inline constexpr uint64_t kMaxCacheBytes = uint64_t{256} << 20;       // the directory's objects, in all
inline constexpr size_t kMaxCacheScan = 100'000;                     // entries looked at when trimming

// The object for `key`, or false (absent, unreadable or failing a check).
bool cache_read(const std::string& dir, uint64_t key, std::vector<char>& object);
// Stores `object` under `key`, creating `dir` (and its parents) if needed,
// then trims the directory to `max_bytes`. False if it could not be written.
bool cache_write(const std::string& dir, uint64_t key, std::string_view object,
                 uint64_t max_bytes = kMaxCacheBytes);

// A file's identity: XXH3-64 of its device, inode, size and modification
// time, or 0 if it cannot be read. (Its bytes would be surer but cost 10 ms
// to hash for the JIT module, at every start; a rebuild changes these.)
uint64_t file_identity(const std::string& path);

}  // namespace aup::vm::jit

// Texts: immutable UTF-8 strings.
//
// A text lives either in a table or var (heap: reference-counted, shared by
// rows, leaf copies and the undo journal) or in an event's arena (a
// temporary built while an event or query runs, freed with the arena). A
// temporary stored into a table or var is copied to the heap first
// (`heap_text`), so a table never points into an arena, and a text taken
// from a request is always copied out of the read buffer (docs/architecture.md).
//
// Reference counts are not atomic: only the owner thread retains and
// releases heap texts (snapshot readers only read them).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace aup::vm {

class Arena;

struct TextObj {
  uint32_t refs;   // heap texts: holders; arena texts: unused
  uint32_t len;    // bytes
  bool in_arena;
  char bytes[1];   // `len` bytes follow, then a 0 byte that is always there
                   // (text_key in vm/key.h reads up to 8 bytes of a 7-byte text)

  std::string_view view() const { return {bytes, len}; }
};

// Largest text (bytes); bounds every concatenation and stored value.
inline constexpr uint32_t kMaxTextBytes = 16u << 20;

// A heap text's `len` never changes once it is made: releasing it finds
// its text pool block, or that it has none, by its length (vm/text_pool.h).
TextObj* heap_text(std::string_view s);  // refs = 1
// A heap text of `len` bytes for the caller to fill (refs = 1).
TextObj* heap_text_sized(uint32_t len);
TextObj* arena_text(Arena& arena, std::string_view s);
// An arena text of `len` bytes for the caller to fill.
TextObj* arena_text_sized(Arena& arena, uint32_t len);

inline void retain(TextObj* t) {
  if (t && !t->in_arena) ++t->refs;
}
void release_slow(TextObj* t);
inline void release(TextObj* t) {
  if (t && !t->in_arena && --t->refs == 0) release_slow(t);
}
// The bytes heap text `t` takes: its text pool block, or for a text too
// long for one, its malloc chunk (what it can use, and the size word glibc
// keeps before it; vm/text_pool.h). What a row's text costs in memory, for
// stats (vm/btree.h, BTree::Memory).
size_t text_heap_bytes(const TextObj* t);
// A heap text with the same bytes: `t` itself (retained) if it is on the
// heap already, else a copy.
TextObj* to_heap(const TextObj* t);

inline int compare(const TextObj* a, const TextObj* b) {
  uint32_t n = a->len < b->len ? a->len : b->len;
  int c = std::memcmp(a->bytes, b->bytes, n);
  if (c != 0) return c;
  return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}
inline bool equal(const TextObj* a, const TextObj* b) {
  return a == b || (a->len == b->len && std::memcmp(a->bytes, b->bytes, a->len) == 0);
}

}  // namespace aup::vm

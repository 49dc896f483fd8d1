#include "vm/text.h"

#include <cassert>
#include <cstdlib>
#include <malloc.h>
#include <new>

#include "vm/arena.h"
#include "vm/bytes.h"
#include "vm/text_pool.h"

namespace aup::vm {

namespace {
size_t text_bytes(size_t len) { return offsetof(TextObj, bytes) + len + 1; }

// A heap text's bytes come from the pool when they fit a block, else from
// malloc (vm/text_pool.h); its length, fixed at birth, says which.
bool pooled(size_t len) { return text_bytes(len) <= TextPool::kMaxBlock; }

TextObj* heap_alloc(size_t len) {
  if (pooled(len)) return static_cast<TextObj*>(TextPool::heap_take(text_bytes(len)));
  auto* t = static_cast<TextObj*>(std::malloc(text_bytes(len)));
  if (!t) throw std::bad_alloc();
  return t;
}

void fill(TextObj* t, std::string_view s, bool in_arena) {
  t->refs = 1;
  t->len = static_cast<uint32_t>(s.size());
  t->in_arena = in_arena;
  bytes::copy(t->bytes, s.data(), s.size());
  t->bytes[s.size()] = '\0';
}
}  // namespace

TextObj* heap_text(std::string_view s) {
  assert(s.size() <= kMaxTextBytes);
  TextObj* t = heap_alloc(s.size());
  fill(t, s, false);
  return t;
}

TextObj* heap_text_sized(uint32_t len) {
  assert(len <= kMaxTextBytes);
  TextObj* t = heap_alloc(len);
  t->refs = 1;
  t->len = len;
  t->in_arena = false;
  t->bytes[len] = '\0';
  return t;
}

TextObj* arena_text(Arena& arena, std::string_view s) {
  assert(s.size() <= kMaxTextBytes);
  auto* t = static_cast<TextObj*>(arena.alloc(text_bytes(s.size())));
  fill(t, s, true);
  return t;
}

TextObj* arena_text_sized(Arena& arena, uint32_t len) {
  assert(len <= kMaxTextBytes);
  auto* t = static_cast<TextObj*>(arena.alloc(text_bytes(len)));
  t->refs = 1;
  t->len = len;
  t->in_arena = true;
  t->bytes[len] = '\0';
  return t;
}

void release_slow(TextObj* t) {
  if (pooled(t->len)) {
    TextPool::heap_give(t, text_bytes(t->len));
  } else {
    std::free(t);
  }
}

size_t text_heap_bytes(const TextObj* t) {
  if (pooled(t->len)) return TextPool::block_bytes(text_bytes(t->len));
  // malloc_usable_size reads the chunk's own header, which is there while
  // any holder keeps the text: safe beside the owner on a snapshot's text.
  return malloc_usable_size(const_cast<TextObj*>(t)) + sizeof(size_t);
}

TextObj* to_heap(const TextObj* t) {
  if (!t->in_arena) {
    TextObj* same = const_cast<TextObj*>(t);
    retain(same);
    return same;
  }
  return heap_text(t->view());
}

}  // namespace aup::vm

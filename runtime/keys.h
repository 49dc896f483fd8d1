// Idempotency keys (docs/protocol.md, "Retries that never apply twice").
//
// An event request may carry `"key": "..."`, a text its client chose. The
// first request with a key applies as usual and keeps, with the key, a
// digest of its event and args and the result it answered; a later
// request with the same key and the same event and args is answered that
// result again, applying nothing; one with the same key and anything else
// is refused `duplicate`. So a client that lost its connection, or was
// answered `unavailable: perhaps written`, sends the request again, key
// and all, and its event takes effect at most once.
//
// The keys live in the store's own two tables, `$keys` (the key, the
// digest, the answer, a number and a time) and `$key_order` (the number and
// the key), which storage/key_tables.h defines and every vm::State holds
// after the module's tables; a store keeps them when asked (`aup run
// --keys N`, storage::StoreOptions::keep_keys) and from then on.
//
// An event's key rows are written in the event's own transaction, so
// they are rolled back with it, logged with it in its batch's entry, and
// kept in the images like any table's rows: after a restart or a crash a
// key is known exactly when its event is. `n` numbers keys in the order
// they were kept; `$key_order` finds the oldest, which leaves once more
// than the window's count are kept or it is older than the window's age.
// A failed event keeps no key: it changed nothing, so running it again
// is safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/json.h"
#include "vm/state.h"
#include "vm/text.h"

namespace aup::runtime {

// A key's bytes, at most (a named limit: tests/runtime/keys_test.cpp).
inline constexpr size_t kMaxIdempotencyKeyBytes = 128;
// A keyed event's answer (its result's JSON) is kept in a text of the
// state, so it is bounded as every text is; a keyed event whose answer is
// longer fails with `budget` and is undone (tests/runtime/keys_test.cpp).
inline constexpr size_t kMaxKeptAnswerBytes = vm::kMaxTextBytes;
// Keys dropped for the window by one event, at most: the window shrinks
// (after a restart with a smaller one, or after an idle hour past --keys-age)
// over the next events instead of in one long pause.
inline constexpr uint32_t kMaxKeysDroppedPerEvent = 8;

// The window of a store that kept keys before, when `aup run` is not told.
inline constexpr uint64_t kDefaultKeyWindow = 100000;

struct KeyWindow {
  uint64_t count = 0;       // keys kept, at most; 0: the store keeps none
  double age_seconds = 0;   // and none older than this; 0: no age limit
};

// The keys of one State. Owner thread only, like the state it changes.
class KeyTable {
 public:
  // In `s`'s system tables; with a store, one that keeps keys
  // (storage::StoreOpenReport::keeps_keys). `w.count` > 0.
  KeyTable(vm::State& s, KeyWindow w);

  // A digest of an event and its args, read from the parsed request node
  // by node (`args`: JsonToValue::kNoNode when it has none): spacing and
  // escapes aside, the same args written in the same order, numbers by
  // value (1 and 1.0 are one).
  static std::string digest(std::string_view event, const JsonDoc& doc, uint32_t args);

  enum class Seen : uint8_t { New, Same, Other };
  // Whether `key` is kept: Same (with the digest given) puts its answer in
  // `answer` ("" when the event returned nothing), Other when it was kept
  // for another event or other args.
  Seen find(std::string_view key, std::string_view digest, std::string& answer) const;
  // Keeps `key` for the event just applied (in its transaction, after the
  // journal mark its rollback returns to), dropping the oldest keys past
  // the window. `now`: milliseconds since the Unix epoch.
  void keep(std::string_view key, std::string_view digest, std::string_view answer, double now);
  size_t size() const;

 private:
  void drop_oldest(double now);

  vm::State& state_;
  KeyWindow window_;
  uint32_t keys_ = 0, order_ = 0;  // table numbers
};

}  // namespace aup::runtime

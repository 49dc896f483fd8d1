// Operating errors of the store, as values (a broken invariant asserts instead).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace aup::storage {

struct Status {
  std::string message;  // empty when ok; else what failed, with the file and offset
  int err = 0;          // the errno behind it, when there is one

  bool ok() const { return message.empty(); }
  static Status good() { return {}; }
  static Status error(std::string m, int e = 0) { return Status{std::move(m), e}; }
};

// What became of a batch whose commit failed: its entry is certainly not in
// the log (withdrawn, or never written), or it may be (a failed sync whose
// entry could not be withdrawn either: it may or may not survive a restart).
enum class Fate : uint8_t { NotWritten, PerhapsWritten };
// As answers say it: "not written", "perhaps written".
inline std::string_view fate_text(Fate f) { return f == Fate::NotWritten ? "not written" : "perhaps written"; }

}  // namespace aup::storage

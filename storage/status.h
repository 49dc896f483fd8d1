// Operating errors of the store, as values (a broken invariant asserts instead).
#pragma once

#include <string>

namespace aup::storage {

struct Status {
  std::string message;  // empty when ok; else what failed, with the file and offset
  int err = 0;          // the errno behind it, when there is one

  bool ok() const { return message.empty(); }
  static Status good() { return {}; }
  static Status error(std::string m, int e = 0) { return Status{std::move(m), e}; }
};

}  // namespace aup::storage

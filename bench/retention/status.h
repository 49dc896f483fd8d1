// Operating errors as values: a truncated input, a full
// disk or a budget that cannot be kept comes back as an Error the caller must
// look at; a broken invariant inside the program is an assertion instead.
#pragma once

#include <fmt/format.h>

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace aup::retention {

struct Error {
  std::string message;
};

template <class... Args>
Error error(fmt::format_string<Args...> format, Args&&... args) {
  return Error{fmt::format(format, std::forward<Args>(args)...)};
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : message_(std::move(e.message)), ok_(false) {}  // NOLINT: implicit by design

  bool ok() const { return ok_; }
  const std::string& message() const {
    assert(!ok_);
    return message_;
  }
  Error take_error() const { return Error{message()}; }

 private:
  std::string message_;
  bool ok_ = true;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error e) : v_(std::move(e)) {}      // NOLINT

  bool ok() const { return v_.index() == 0; }
  T& value() {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const {
    assert(ok());
    return std::get<0>(v_);
  }
  const std::string& message() const {
    assert(!ok());
    return std::get<1>(v_).message;
  }
  Error take_error() const { return Error{message()}; }

 private:
  std::variant<T, Error> v_;
};

}  // namespace aup::retention

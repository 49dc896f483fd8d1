// JSON to aup values and back, guided by the module's types.
//
// Reading (event arguments, query parameters): a record is an object with
// exactly its fields (a field with a default may be left out); an array is
// an array; numbers must be finite binary64 (1e400 is refused), and an
// integer written out that the binary64 does not hold (9007199254740993)
// is refused too, code bad_number (stdlib::integer_rounded, stdlib/numbers.h);
// texts are copied out of the request line into the event's arena. Errors
// name the path: `lines[3].item: expected number, got string`.
//
// Writing (results): records and objects as objects in field order, rows
// as the record they hold, views as arrays of rows; a number that is not
// finite cannot be returned (code not_finite).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/code.h"
#include "runtime/json.h"
#include "vm/interp.h"

namespace aup::runtime {

// The wording of an argument's refusal, in one place: the server's reading
// below and the short form of `aup call` and `aup shell` (cli/short_form.h),
// which checks a typed request before sending it, say the same thing.
// `what`: number, string, bool, object or array; `got`: json_kind_name's word.
std::string expected_message(std::string_view what, std::string_view got);
// An unknown field or argument says the closest known one when one is
// close (compiler/suggest.h): `unknown field `idd`; did you mean `id`?`.
std::string unknown_field_message(std::string_view name, const std::vector<std::string_view>& known = {});
std::string missing_field_message(std::string_view name);
std::string twice_field_message(std::string_view name);
// A JSON value's kind as the messages name it: number, string, bool,
// null, array, object.
std::string_view json_kind_name(const JsonNode& n);

// GET /queries/NAME?id=3&owner=Ann+Lee (runtime/http.h): query `f`'s
// arguments from a query string, as the JSON object a body would hold
// (`{"id":3,"owner":"Ann Lee"}`), each value read as its parameter's type
// says: a num a JSON number, a text the text itself, a bool `true` or
// `false`, any other type its JSON. Names and values are percent-decoded
// (`+` is a space, as HTML forms send it). False with the refusal
// (bad_args): an unknown argument (with the closest known name), a name
// given twice, bad percent-encoding, a value not of its type. Whether every
// argument is there is left to the reading of the object, as for a body.
bool query_string_args(std::string_view query, const vm::Module& m, const vm::Function& f, std::string& json,
                       std::string& error);

class JsonToValue {
 public:
  JsonToValue(const JsonDoc& doc, vm::Vm& vm) : doc_(doc), vm_(vm) {}
  // A value of type `type` from node `n`; `name`, when given, is the
  // value's name, where a failure's path starts (a query parameter's:
  // `xs[1]: expected number, got string`).
  bool value(uint32_t n, uint32_t type, vm::Value* out, std::string_view name = {});
  // The fields of record `record` from object node `n` (or from nothing,
  // when n is kNoNode: every field must have a default).
  bool record(uint32_t n, uint32_t record, vm::Value* out);
  static constexpr uint32_t kNoNode = UINT32_MAX;
  // Why the last call failed, with the path to the part (`lines[3].item:
  // expected number, got string`), and its code: bad_args, or bad_number
  // for an integer no num holds exactly.
  const std::string& error() const { return error_; }
  Code code() const { return code_; }

 private:
  // The same, without the path in the message: a failure's path is
  // collected while the recursion unwinds (in path_, innermost first), so
  // reading what succeeds builds no text.
  bool value_at(uint32_t n, uint32_t type, vm::Value* out);
  bool record_at(uint32_t n, uint32_t record, vm::Value* out);
  template <class Field>
  bool fields_at(uint32_t n, size_t count, Field field, vm::RecObj* out);
  bool fail(std::string what, Code code = Code::BadArgs);
  bool finish(bool ok, std::string_view name = {});
  bool number(const JsonNode& node, vm::Value* out);

  const JsonDoc& doc_;
  vm::Vm& vm_;
  std::vector<std::string> path_;
  std::string error_;
  Code code_ = Code::BadArgs;
};

class ValueToJson {
 public:
  explicit ValueToJson(vm::Vm& vm) : vm_(vm) {}
  // Appends `v` (of type `type`) to out; false with failure() set when the
  // value cannot be sent (a number that is not finite, a removed row).
  bool write(vm::Value v, uint32_t type, std::string& out);
  // Appends a stored row (table `table`'s slots) as a query returning it
  // writes it: its record's fields in order. A stored row holds only
  // finite numbers, texts and bools, so this cannot fail.
  void row(const vm::Value* slots, uint32_t table, std::string& out) {
    bool written = record(slots, vm_.module().tables[table].record, out, 0);
    (void)written;
  }
  vm::ErrorCode code() const { return code_; }
  const std::string& error() const { return error_; }

 private:
  template <class Name, class Type>
  bool fields(const vm::Value* values, size_t count, Name name, Type type, std::string& out,
              uint32_t depth);
  bool record(const vm::Value* values, uint32_t record, std::string& out, uint32_t depth);
  bool write_at(vm::Value v, uint32_t type, std::string& out, uint32_t depth);
  bool fail(vm::ErrorCode code, std::string what);

  vm::Vm& vm_;
  std::vector<std::string> path_;
  vm::ErrorCode code_ = vm::ErrorCode::NotFinite;
  std::string error_;
  std::vector<const vm::Value*> rows_;
};

// Results nest no deeper than this (a record may hold an array of itself,
// so values can be deep; writing them is bounded like reading).
inline constexpr uint32_t kMaxResultDepth = 64;

}  // namespace aup::runtime

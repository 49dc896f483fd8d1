// Requests in the short form people type (`aup call`, `aup shell`):
//
//   transfer from=1 to=2 amount=30     arguments by name
//   balance 1                          or in declared order
//   open id=3 owner="Ann \"A\" Lee"    a text as a JSON string, or bare
//   put_all items=[1,2,3]              a structured value as JSON
//
// turned into the protocol's JSON line (docs/protocol.md) with the module's
// schema (runtime/schema.h), which says whether a name is an event or a
// query and each argument's type. A bare word for a `text` argument is the
// text itself; for `num` and `bool` it must be a JSON number or
// true/false; anything else must be JSON. Checked before sending, so a
// typo is told at once, with the request's usage, and in the server's
// words (runtime/convert.h: `amount: expected number, got string`,
// `missing field \`id\``, `unknown field \`amont\``); the server still
// checks everything (deep types, bad_number), as for any client.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace aup::cli {

struct ArgSpec {
  std::string name;
  std::string type;  // as the language spells it: num, text, bool, [num], Account, ...
  bool has_default = false;
};

struct RequestSpec {
  std::string name;
  bool event = false;  // else a query
  std::vector<ArgSpec> args;
  std::string result;  // the result's type; empty when there is none
};

struct IndexSpec {
  std::string name;
  std::vector<std::string> fields;  // in index order
  bool unique = false;
};

struct TableSpec {
  std::string name;
  std::vector<std::string> key;  // the key's fields, in key order
  std::vector<IndexSpec> indexes;  // in declaration order
};

struct Schema {
  std::vector<RequestSpec> requests;  // events, then queries
  std::vector<std::string> tables;    // the names of table_specs, for lookups by name
  std::vector<TableSpec> table_specs;
  const RequestSpec* find(std::string_view name) const;
};

// Reads a schema answer's `result` (the JSON of runtime::schema_json);
// false with a message when it is not one.
bool parse_schema(std::string_view result_json, Schema& out, std::string& error);

// "transfer from=num to=num amount=num": how a request is written.
std::string usage(const RequestSpec& r);

// A typed line split into words at spaces, the way `aup shell` reads it: a
// double-quoted string ("Ann Lee", with its JSON escapes) and a bracketed
// JSON value ([1, 2], {"a": 1}) are one word each, quotes and brackets
// kept, so the short form reads them as JSON. False with a message when a
// quote or bracket is left open.
bool split_words(std::string_view line, std::vector<std::string>& words, std::string& error);

// `word` as the JSON of a value of argument `a`'s type (appended to
// `out`), or false with why not, in the server's words where the server
// would see the same value: a bare word is a text for `text`, anything
// else must be JSON of the type's kind.
bool value_json(const ArgSpec& a, std::string_view word, std::string& out, std::string& error);

// The request line (no newline) for `words` (the name, then its
// arguments); false with a message saying what is wrong and how the
// request is written.
bool build_request(const Schema& s, const std::vector<std::string>& words, std::string& line, std::string& error);

}  // namespace aup::cli

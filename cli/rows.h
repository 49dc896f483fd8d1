// Rows by hand, without writing a query (docs/operations.md, "Reading
// rows"; the request: docs/protocol.md, "The read request"):
//
//   aup get ADDRESS TABLE KEY...        the row with that key, if any
//   aup scan ADDRESS TABLE [--from V]... [--to V]... [--index NAME] [--limit N] [--all]
//   aup dump ADDRESS | --data DIR [--table NAME]...   rows as NDJSON
//   aup load MODULE --data DIR [FILE]   those rows into a store
//
// get and scan print each row as one JSON line, its fields in order. Key
// values are typed by the table's fields as `aup call` types arguments
// (cli/short_form.h): a bare word is a text for a text field, a number
// for a num one; a value that starts with `[` is a JSON array of several.
// Exit status as `aup call`'s: 0 answered, 1 the server refused the read,
// 2 usage or connection problems.
//
// A dump line is {"table":NAME,"row":{...}}. load reads them into a store
// opened with MODULE (created if it is not there), each row checked
// against MODULE's record of that table: its fields by name and type, a
// field left out taking its default, the key and unique indexes
// unique. The first row that does not fit stops the load with its line,
// table and field, and nothing is loaded; otherwise every row is one log
// entry, committed at once. Exit status: 0 loaded, 1 a row that does not
// fit (or a store that is damaged or does not match), 2 usage or
// environment.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace aup::cli {

struct GetOptions {
  std::string address;
  std::string table;
  std::vector<std::string> key;
  double timeout_seconds = 30;
};
int get(const GetOptions& o, std::FILE* out, std::FILE* err);

struct ScanOptions {
  std::string address;
  std::string table;
  std::vector<std::string> from, to;  // values, in the order's field order
  std::string index;
  std::optional<uint32_t> limit;
  bool all = false;  // page on with `next` until the range ends
  double timeout_seconds = 30;
};
int scan(const ScanOptions& o, std::FILE* out, std::FILE* err);

// `aup shell`'s `.get TABLE KEY...` and `.scan TABLE [from=V] [to=V]
// [index=NAME] [limit=N]` (`words` without the command): the read
// request line, typed by the schema answer `schema_json`; false with why.
bool shell_read_line(const std::string& schema_json, bool scan, const std::vector<std::string>& words,
                     std::string& line, std::string& error);

struct DumpOptions {
  std::string address;  // a served store, read page by page
  std::string data;     // or a store directory, read as of its newest durable save
  std::vector<std::string> tables;  // none: every table of the module
  double timeout_seconds = 30;
};
int dump(const DumpOptions& o, std::FILE* out, std::FILE* err);

struct LoadOptions {
  std::string module;
  std::string data = "aup-data";
  std::string input = "-";  // a file of dump lines; "-": standard input
};
int load(const LoadOptions& o, std::FILE* err);

}  // namespace aup::cli

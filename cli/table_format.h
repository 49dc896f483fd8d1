// Rows for people: how `aup shell` prints an answer's result on a terminal.
// A result that is rows (a row or record, an array of them, or an object
// with a `rows` array such as a read request's answer: docs/protocol.md)
// prints in the chosen mode:
//
//   table  an aligned table, sqlite3's `.mode table`: a header of the
//          fields, in the order the server gave them, numbers right-aligned
//   line   one `field = value` a line, a blank line between rows (sqlite3's
//          `.mode line`), for rows too wide for a table
//   json   the result laid out as JSON (cli/pretty_json.h)
//
// Anything else (a number, a list of numbers, a text) prints as JSON in
// every mode. A text prints as its characters unless it holds a control
// character (a newline, a tab, ...): then as the JSON string, so a row
// stays one line; a structured field prints as one line of JSON.
#pragma once

#include <string>
#include <string_view>

namespace aup::cli {

enum class RowsMode { Table, Line, Json };

// `table`, `line`, `json`: false for anything else.
bool parse_rows_mode(std::string_view word, RowsMode& out);
std::string_view rows_mode_name(RowsMode mode);

// `result_json` (one JSON text, an answer's `result`) as `mode` prints it,
// without a final newline; the text unchanged if it does not parse.
std::string format_result(std::string_view result_json, RowsMode mode);

}  // namespace aup::cli

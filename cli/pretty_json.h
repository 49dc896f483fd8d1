// JSON for people: an answer as `aup shell` shows it on a terminal. A value
// that fits in the width stays on one line (`{"balance": 100}`); a longer
// one is broken, one member or item a line, indented by two.
#pragma once

#include <string>
#include <string_view>

namespace aup::cli {

// `json` (one valid JSON text, as a server answers) laid out within
// `width` columns; the text unchanged if it does not parse.
std::string pretty_json(std::string_view json, size_t width = 80);

}  // namespace aup::cli

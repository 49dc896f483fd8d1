// The answer envelope, written in one place (docs/protocol.md):
//
//   {"id":17,"ok":true,"result":{...}}
//   {"id":18,"ok":false,"error":{"code":"not_found","message":"..."}}
//
// `id` is the request's id as it was written (raw JSON), left out when the
// request had none; an event or query that returns nothing has no
// "result". Compact JSON, one line, the newline included.
#pragma once

#include <string>
#include <string_view>

namespace aup::runtime {

// `result`: the result's JSON, or null for none.
void append_ok(std::string& out, std::string_view id, const std::string* result);
void append_error(std::string& out, std::string_view id, std::string_view code, std::string_view message);

}  // namespace aup::runtime

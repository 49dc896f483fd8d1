// `aup call ADDRESS NAME [ARG ...]`: one request to a running server, in
// the short form (cli/short_form.h) or as a raw JSON line, for scripts.
// The answer line goes to stdout as the server wrote it. Exit status: 0 the
// answer is ok, 1 the request failed (its code and message also on
// stderr), 2 usage or connection problems (nothing answered).
//
// Also what `aup shell` shares with it: asking for the schema, reading an
// answer.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "cli/short_form.h"

namespace aup::cli {

class Client;

struct CallOptions {
  std::string address;
  std::vector<std::string> words;  // NAME then its arguments, or one JSON request
  double timeout_seconds = 30;
  std::string key;  // --key: the event's idempotency key; empty: none
};

int call(const CallOptions& o, std::FILE* out, std::FILE* err);

// `aup stats ADDRESS`: one `{"stats":{}}` request (docs/protocol.md); its
// result printed for people, a metric a line in its unit
// (runtime::stats_text), or with --json the answer line as the server
// wrote it. Exit status as `aup call`'s.
struct StatsOptions {
  std::string address;
  bool json = false;
  bool memory = false;  // ask for the memory breakdown (a walk of every row)
  double timeout_seconds = 30;
};

int stats(const StatsOptions& o, std::FILE* out, std::FILE* err);

// An answer line, read: whether it is JSON and ok, the JSON of its result
// (empty when it has none), and a failure's "code: message".
struct Answer {
  bool parsed = false;
  bool ok = false;
  std::string result;
  std::string error;  // "code: message"
  std::string code;   // the failure's code alone ("unavailable"), or ""
};
Answer read_answer(std::string_view line);

// Asks the server behind `client` for its schema (docs/protocol.md): the
// schema read, and its JSON as sent. False with a message.
bool fetch_schema(Client& client, double timeout_seconds, Schema& schema, std::string& json, std::string& error);

}  // namespace aup::cli

// `aup replay`: a store read without module code and without writing.
//
//   (no flag)      a summary: tables and their images, the log's segments
//   --entries      one JSON line per log entry: save number, place, size,
//                  digest, and per table how many rows it puts, sets, removes
//   --verify       reads everything, checks every digest and the chain;
//                  exit 1 on damage (a torn tail is reported, not damage)
//   --dump TABLE   the table's rows as JSON lines, in key order
//   --vars         the vars as one JSON object
//   --at SEQ       with --dump or --vars: as of save number SEQ (if the
//                  image is not newer than that)
//
// Exit status: 0 fine, 1 damage, 2 usage or a store that cannot be read
// (missing, or in use by a running aup).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "storage/io.h"

namespace aup::runtime {

struct ReplayOptions {
  std::string data = "aup-data";
  bool verify = false;
  bool entries = false;
  bool vars = false;
  std::string dump;
  std::optional<uint64_t> at;
};

// Every file operation goes through `io` (the CLI's comes from AUP_FAULTS,
// storage/io.h), so the fault suites reach replay too.
int replay(storage::Io& io, const ReplayOptions& o, std::FILE* out, std::FILE* err);

// `aup dump --data DIR` (cli/rows.h): the rows of `tables` (none: every
// table of the module, not the store's own) as dump lines,
// {"table":NAME,"row":{...}}, each table in key order, as of the store's
// newest durable save (read as replay reads it, also while it is served).
// Exit status as replay's; an unknown table is 2.
int dump_store(storage::Io& io, const std::string& dir, const std::vector<std::string>& tables, std::FILE* out,
               std::FILE* err);

}  // namespace aup::runtime

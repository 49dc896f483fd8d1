// make_backend: the one place that maps a kind's name to its backend.
#include <stdexcept>

#include "bench/tpcc/aup_backend.h"
#include "bench/tpcc/backend.h"
#include "bench/tpcc/sqlite_backend.h"

namespace aup::tpcc {

const std::vector<std::string>& backend_kinds() {
  static const std::vector<std::string> kinds{"aup", "sqlite", "sqlite-tuned", "sqlite-grouped"};
  return kinds;
}

std::unique_ptr<Backend> make_backend(const BackendConfig& config) {
  if (config.kind == "aup") return make_aup_backend(config);
  if (config.kind == "sqlite" || config.kind == "sqlite-tuned" || config.kind == "sqlite-grouped") {
    return make_sqlite_backend(config);
  }
  throw std::runtime_error("unknown backend `" + config.kind + "` (aup, sqlite, sqlite-tuned, sqlite-grouped)");
}

}  // namespace aup::tpcc

// make_backend: the one place that maps a kind's name to its backend.
#include <fmt/format.h>

#include <stdexcept>

#include "bench/tpcc/aup_backend.h"
#include "bench/tpcc/backend.h"
#include "bench/tpcc/sqlite_backend.h"

namespace aup::tpcc {

const std::vector<std::string>& backend_kinds() {
  static const std::vector<std::string> kinds{"aup", "sqlite", "sqlite-tuned", "sqlite-grouped"};
  return kinds;
}

void check_connections(const BackendConfig& c) {
  if (c.connections == 0) return;
  if (c.kind != "aup") {
    throw std::invalid_argument(fmt::format(
        "{} takes no --connections: SQLite runs in this process, each terminal with its own database "
        "connection, so there is no connection to the server to share",
        c.kind));
  }
  if (c.connections > c.terminals) {
    throw std::invalid_argument(fmt::format("{} connections for {} terminal{}: --connections takes 1 to the terminals",
                                            c.connections, c.terminals, c.terminals == 1 ? "" : "s"));
  }
}

uint32_t server_connections(const std::string& kind, uint32_t terminals, uint32_t connections) {
  if (kind != "aup") return 0;
  return connections == 0 ? terminals : connections;
}

std::unique_ptr<Backend> make_backend(const BackendConfig& config) {
  check_connections(config);
  if (config.kind == "aup") return make_aup_backend(config);
  if (config.kind == "sqlite" || config.kind == "sqlite-tuned" || config.kind == "sqlite-grouped") {
    return make_sqlite_backend(config);
  }
  throw std::runtime_error("unknown backend `" + config.kind + "` (aup, sqlite, sqlite-tuned, sqlite-grouped)");
}

}  // namespace aup::tpcc

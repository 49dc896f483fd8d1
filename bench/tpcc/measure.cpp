#include "bench/tpcc/measure.h"

#include <fmt/format.h>

namespace aup::tpcc {

namespace {

bool runs_in_this_process(const BackendConfig& c) { return c.kind != "aup"; }

void append_kinds_json(std::string& out, const RunResult& r) {
  out += ",\"per_type\":{";
  for (int k = 0; k < kTxKinds; ++k) {
    const KindFigures& f = r.kinds[k];
    out += fmt::format("{}\"{}\":{{\"completed\":{},\"rolled_back\":{},\"p50_us\":{:.1f},\"p90_us\":{:.1f},"
                       "\"p99_us\":{:.1f},\"max_us\":{:.1f}}}",
                       k ? "," : "", name_of(static_cast<TxKind>(k)), f.completed, f.rolled_back,
                       f.percentile_us(0.5), f.percentile_us(0.9), f.percentile_us(0.99), f.percentile_us(1.0));
  }
  out += "}";
}

std::string problems_json(const std::vector<std::string>& problems) {
  std::string out = "[";
  for (size_t i = 0; i < problems.size(); ++i) {
    if (i) out += ",";
    out += "\"";
    for (char c : problems[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += "\"";
  }
  return out + "]";
}

}  // namespace

Measured measure(BackendConfig config, const RunSpec& spec, const std::optional<bench::CpuPlan>& cpus,
                 const std::function<void(const std::string&)>& progress) {
  if (cpus) {
    if (runs_in_this_process(config)) {
      bench::pin_this_thread(cpus->server);
    } else {
      bench::pin_this_thread(cpus->client);
      config.server_cpus = cpus->server;
    }
  }
  std::unique_ptr<Backend> backend = make_backend(config);
  Measured m;
  m.result = run_terminals(*backend, spec, progress);
  m.resident_bytes = backend->figures().resident_bytes;
  m.problems = backend->consistency(spec.warehouses);
  m.counts = backend->counts();
  m.state_bytes = state_bytes(m.counts);
  backend->close();
  return m;
}

namespace {
// A per-transaction figure that may be unknown (-1): null in JSON.
std::string device_json(double v) { return v < 0 ? std::string("null") : fmt::format("{:.1f}", v); }
}  // namespace

std::string measured_json(const Measured& m, const std::string& labels) {
  const RunResult& r = m.result;
  std::string out = "{" + labels;
  if (!labels.empty()) out += ",";
  out += fmt::format(
      "\"seconds\":{:.3f},\"transactions\":{},\"transactions_per_s\":{:.1f},\"new_orders_per_min\":{:.0f},"
      "\"cpu_us_per_transaction\":{:.2f},\"user_us_per_transaction\":{:.2f},\"system_us_per_transaction\":{:.2f},"
      "\"write_bytes_per_transaction\":{:.1f},\"device_bytes_per_transaction\":{},"
      "\"driver_cpu_us_per_transaction\":{:.2f},"
      "\"resident_bytes\":{},\"state_bytes\":{},\"rows\":{},\"consistent\":{},\"problems\":{}",
      r.seconds, r.transactions(), r.transactions_per_s(), r.new_orders_per_min(), r.cpu_us_per_transaction(),
      r.user_us_per_transaction(), r.system_us_per_transaction(), r.write_bytes_per_transaction(),
      device_json(r.device_bytes_per_transaction()),
      r.transactions() ? r.driver_cpu_ns / 1e3 / static_cast<double>(r.transactions()) : 0.0, m.resident_bytes,
      m.state_bytes, m.counts.total(), m.problems.empty() ? "true" : "false", problems_json(m.problems));
  append_kinds_json(out, r);
  out += ",\"input\":" + r.input.json();
  return out + "}";
}

std::string measured_text(const Measured& m) {
  const RunResult& r = m.result;
  std::string out = fmt::format(
      "{:.0f} transactions/s, {:.0f} New-Orders/min over {:.1f} s ({} transactions)\n"
      "server CPU {:.1f} us/transaction, user {:.1f} + system {:.1f}, {:.0f} bytes written/transaction{}, resident "
      "{:.1f} MB for {:.1f} MB of state ({:.2f}x)\n",
      r.transactions_per_s(), r.new_orders_per_min(), r.seconds, r.transactions(), r.cpu_us_per_transaction(),
      r.user_us_per_transaction(), r.system_us_per_transaction(), r.write_bytes_per_transaction(),
      r.device_bytes_per_transaction() < 0
          ? std::string()
          : fmt::format(" ({:.0f} by the device)", r.device_bytes_per_transaction()), static_cast<double>(m.resident_bytes) / 1e6,
      static_cast<double>(m.state_bytes) / 1e6,
      m.state_bytes ? static_cast<double>(m.resident_bytes) / static_cast<double>(m.state_bytes) : 0.0);
  for (int k = 0; k < kTxKinds; ++k) {
    const KindFigures& f = r.kinds[k];
    out += fmt::format("  {:<13} {:>8} done, {:>5} rolled back, p50 {:>8.0f} us, p99 {:>8.0f} us\n",
                       name_of(static_cast<TxKind>(k)), f.completed, f.rolled_back, f.percentile_us(0.5),
                       f.percentile_us(0.99));
  }
  if (m.problems.empty()) {
    out += "consistency (3.3.2.1-3.3.2.4): holds\n";
  } else {
    out += fmt::format("consistency (3.3.2.1-3.3.2.4): {} problems\n", m.problems.size());
    for (const std::string& p : m.problems) out += "  " + p + "\n";
  }
  return out;
}

}  // namespace aup::tpcc

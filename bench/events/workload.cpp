#include "bench/events/workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

namespace aup::bench::events {

namespace {

// Appends to a file through a large buffer.
class LineWriter {
 public:
  explicit LineWriter(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    if (!f_) throw std::runtime_error("cannot create " + path);
  }
  ~LineWriter() {
    if (f_) std::fclose(f_);
  }
  LineWriter(const LineWriter&) = delete;
  LineWriter& operator=(const LineWriter&) = delete;

  void line(const std::string& s) {
    buf_ += s;
    buf_ += '\n';
    ++lines_;
    if (buf_.size() >= (size_t{1} << 20)) flush();
  }
  // Closes the file; returns its size in bytes.
  uint64_t close() {
    flush();
    bool ok = std::fclose(f_) == 0;
    f_ = nullptr;
    if (!ok) throw std::runtime_error("cannot write " + path_);
    return bytes_;
  }
  uint64_t lines() const { return lines_; }

 private:
  void flush() {
    if (std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) throw std::runtime_error("cannot write " + path_);
    bytes_ += buf_.size();
    buf_.clear();
  }
  std::string path_;
  std::FILE* f_;
  std::string buf_;
  uint64_t lines_ = 0;
  uint64_t bytes_ = 0;
};

// What bank.aup's `on transfer` decides, in the same terms: check_amount,
// same account, unknown accounts, insufficient funds. (No account is ever
// closed here.) Returns true and moves the money when it succeeds.
bool transfer(std::vector<double>& balance, uint64_t from, uint64_t to, double amount) {
  if (amount <= 0 || std::floor(amount) != amount) return false;
  if (from == to) return false;
  if (from >= balance.size() || to >= balance.size() || from == 0 || to == 0) return false;
  if (balance[from] < amount) return false;
  balance[from] -= amount;
  balance[to] += amount;
  return true;
}

}  // namespace

Workload make_bank(const std::string& dir, const std::string& module, const BankShape& shape, uint64_t seed) {
  Workload w;
  w.name = "bank";
  w.module = module;
  w.input = dir + "/bank.ndjson";
  std::mt19937_64 rng(seed);
  LineWriter out(w.input);
  uint64_t id = 0;
  std::vector<double> balance(shape.accounts + 1, 0.0);  // index 0 unused: ids start at 1
  for (uint64_t a = 1; a <= shape.accounts; ++a) {
    out.line(fmt::format(R"({{"event":"open","args":{{"id":{},"owner":"owner-{}"}},"id":{}}})", a, a, ++id));
  }
  for (uint64_t a = 1; a <= shape.accounts; ++a) {
    out.line(fmt::format(R"({{"event":"deposit","args":{{"id":{},"amount":50000}},"id":{}}})", a, ++id));
    balance[a] = 50000;
  }
  w.expect_ok = 2 * shape.accounts;
  std::uniform_int_distribution<uint64_t> account(1, shape.accounts);
  std::uniform_int_distribution<uint64_t> unknown(shape.accounts + 1, shape.accounts + 100);
  std::uniform_int_distribution<int> amount(1, 20000);
  std::uniform_int_distribution<int> percent(0, 999);  // per mille
  for (uint64_t t = 0; t < shape.transfers; ++t) {
    uint64_t from = account(rng);
    uint64_t to = account(rng);
    int roll = percent(rng);
    if (roll < 10) from = unknown(rng);   // 1%: no such account
    else if (roll < 15) to = from;        // 0.5%: to itself
    std::string amount_text;
    double value;
    if (roll >= 15 && roll < 20) {        // 0.5%: not whole cents
      value = amount(rng) + 0.5;
      amount_text = fmt::format("{}", value);
    } else {
      value = amount(rng);
      amount_text = fmt::format("{}", static_cast<int>(value));
    }
    out.line(fmt::format(R"({{"event":"transfer","args":{{"from":{},"to":{},"amount":{}}},"id":{}}})", from, to,
                         amount_text, ++id));
    bool ok = from < balance.size() && to < balance.size() && transfer(balance, from, to, value);
    (ok ? w.expect_ok : w.expect_failed) += 1;
  }
  w.requests = out.lines();
  w.events = w.requests;
  w.bytes = out.close();
  return w;
}

std::pair<Workload, Workload> make_ledger(const std::string& dir, const std::string& module,
                                          const LedgerShape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> keys(shape.adds);
  std::iota(keys.begin(), keys.end(), uint64_t{1});
  std::shuffle(keys.begin(), keys.end(), rng);
  std::uniform_int_distribution<int> account(1, 1000);
  std::uniform_int_distribution<int> amount(1, 100000);

  Workload adds;
  adds.name = "ledger_adds";
  adds.module = module;
  adds.input = dir + "/ledger_adds.ndjson";
  Workload views = adds;
  views.name = "ledger_views";
  views.input = dir + "/ledger_views.ndjson";
  LineWriter out_adds(adds.input);
  LineWriter out_views(views.input);
  uint64_t id = 0;
  for (uint64_t k : keys) {
    std::string line = fmt::format(R"({{"event":"add","args":{{"id":{},"account":{},"amount":{}}},"id":{}}})", k,
                                   account(rng), amount(rng), ++id);
    out_adds.line(line);
    out_views.line(line);
  }
  adds.expect_ok = views.expect_ok = shape.adds;
  std::uniform_int_distribution<uint64_t> start(1, shape.adds);
  std::uniform_int_distribution<uint64_t> width(1, shape.max_width);
  for (uint64_t v = 0; v < shape.views; ++v) {
    uint64_t a = start(rng);
    uint64_t b = a + width(rng);
    out_views.line(fmt::format(R"({{"query":"window","args":{{"a":{},"b":{}}},"id":{}}})", a, b, ++id));
    views.expect_count_sum += std::min(b, shape.adds + 1) - a;  // keys are exactly 1..adds
    ++views.expect_ok;
  }
  adds.requests = adds.events = out_adds.lines();
  adds.bytes = out_adds.close();
  views.requests = out_views.lines();
  views.events = shape.adds;
  views.bytes = out_views.close();
  return {adds, views};
}

}  // namespace aup::bench::events

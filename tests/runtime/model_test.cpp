// Model-based tests: thousands of random events against a module running in
// the VM, and against a plain C++ model of the same rules; every response
// (ok or the failure code, and the values returned) must agree, and the
// state read back must be the model's.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "tests/runtime/harness.h"

namespace aup::testing {
namespace {

// ---- the bank of examples/bank/bank.aup ----------------------------------------

struct BankModel {
  struct Account {
    double balance = 0;
    bool closed = false;
  };
  std::map<double, Account> accounts;
  double next_transfer = 1;

  // The code a response must carry ("" for ok).
  static std::string amount_problem(double amount) {
    if (amount <= 0 || std::floor(amount) != amount) return "failed";
    return "";
  }
};

std::string num(double d) {
  std::string out;
  runtime::json_append_number(out, d);
  return out;
}

TEST_SUITE("model") {
  TEST_CASE("bank: random events agree with a model") {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      CAPTURE(seed);
      Running run(source(AUP_SOURCE_DIR "/examples/bank/bank.aup"));
      BankModel model;
      std::mt19937_64 rng(seed);
      auto pick_id = [&] { return static_cast<double>(1 + rng() % 12); };
      auto pick_amount = [&] {
        switch (rng() % 8) {
          case 0: return -5.0;
          case 1: return 0.0;
          case 2: return 0.5;
          default: return static_cast<double>(1 + rng() % 150);
        }
      };
      for (int step = 0; step < 3000; ++step) {
        std::string line, want_code, want_result;
        switch (rng() % 5) {
          case 0: {  // open
            double id = pick_id();
            line = fmt::format(R"({{"event":"open","args":{{"id":{},"owner":"o{}"}}}})", num(id), step);
            if (model.accounts.count(id)) {
              want_code = "duplicate";
            } else {
              model.accounts[id] = {};
            }
            break;
          }
          case 1: {  // deposit
            double id = pick_id(), amount = pick_amount();
            line = fmt::format(R"({{"event":"deposit","args":{{"id":{},"amount":{}}}}})", num(id), num(amount));
            auto it = model.accounts.find(id);
            if (!(want_code = BankModel::amount_problem(amount)).empty()) break;
            if (it == model.accounts.end()) { want_code = "not_found"; break; }
            if (it->second.closed) { want_code = "failed"; break; }
            it->second.balance += amount;
            want_result = fmt::format(R"({{"balance":{}}})", num(it->second.balance));
            break;
          }
          case 2:
          case 3: {  // transfer
            double from = pick_id(), to = pick_id(), amount = pick_amount();
            line = fmt::format(R"({{"event":"transfer","args":{{"from":{},"to":{},"amount":{}}}}})",
                               num(from), num(to), num(amount));
            if (!(want_code = BankModel::amount_problem(amount)).empty()) break;
            if (from == to) { want_code = "failed"; break; }
            auto a = model.accounts.find(from);
            auto b = model.accounts.find(to);
            if (a == model.accounts.end() || b == model.accounts.end()) { want_code = "not_found"; break; }
            if (a->second.closed || b->second.closed) { want_code = "failed"; break; }
            if (a->second.balance < amount) { want_code = "failed"; break; }
            a->second.balance -= amount;
            b->second.balance += amount;
            want_result = fmt::format(R"({{"transfer":{},"balance":{}}})", num(model.next_transfer++),
                                      num(a->second.balance));
            break;
          }
          default: {  // close
            double id = pick_id();
            line = fmt::format(R"({{"event":"close","args":{{"id":{}}}}})", num(id));
            auto it = model.accounts.find(id);
            if (it == model.accounts.end()) { want_code = "not_found"; break; }
            if (it->second.closed || it->second.balance != 0) { want_code = "failed"; break; }
            it->second.closed = true;
            break;
          }
        }
        std::string got = run.call(line);
        CAPTURE(line);
        CAPTURE(got);
        if (want_code.empty()) {
          REQUIRE(got.find("\"ok\":true") != std::string::npos);
          if (!want_result.empty()) REQUIRE(got == R"({"ok":true,"result":)" + want_result + "}");
        } else {
          REQUIRE(got.find(fmt::format("\"code\":\"{}\"", want_code)) != std::string::npos);
        }
        if (step % 250 == 0) {
          double sum = 0;
          for (auto& [id, a] : model.accounts) sum += a.balance;
          REQUIRE(run.call(R"({"query":"total"})") ==
                  fmt::format(R"({{"ok":true,"result":{{"accounts":{},"total":{}}}}})",
                              model.accounts.size(), num(sum)));
          for (auto& [id, a] : model.accounts) {
            REQUIRE(run.call(fmt::format(R"({{"query":"balance","args":{{"id":{}}}}})", num(id))) ==
                    fmt::format(R"({{"ok":true,"result":{}}})", num(a.balance)));
          }
        }
      }
    }
  }

  // ---- a table-heavy module ----------------------------------------------------------

  TEST_CASE("tables: adds, puts, removes, range updates and views agree with std::map") {
    const char* module = R"(
record Item { id: num, qty: num, tag: text }
record Name { name: text, id: num }
table items: Item key id
table names: Name key name
event add_item { id: num, qty: num }
on add_item {
  items.add(Item { id: add_item.id, qty: add_item.qty, tag: "t" + text(add_item.id) })
  names.add(Name { name: "t" + text(add_item.id), id: add_item.id })
}
event put_item { id: num, qty: num }
on put_item {
  items.put(Item { id: put_item.id, qty: put_item.qty, tag: "t" + text(put_item.id) })
  names.put(Name { name: "t" + text(put_item.id), id: put_item.id })
}
event del_item { id: num }
on del_item {
  let it = items[del_item.id]
  names.remove(it.tag)
  items.remove(del_item.id)
}
event bump { from: num, to: num, by: num, limit: num }
on bump {
  for it in items[bump.from .. bump.to] {
    it.qty = it.qty + bump.by
    if it.qty > bump.limit { fail "over the limit" }
  }
}
event bulk { ids: [num], qty: num }
on bulk {
  for id in bulk.ids {
    items.put(Item { id: id, qty: bulk.qty, tag: "t" + text(id) })
    names.put(Name { name: "t" + text(id), id: id })
  }
  if bulk.ids.count > 4 { fail "too many" }
}
query range(from: num, to: num) {
  let v = items[from .. to]
  let sum = 0
  for it in v { sum = sum + it.qty }
  if v.empty { return { count: 0, first: -1, last: -1, sum: 0 } }
  return { count: v.count, first: v.first.id, last: v.last.id, sum: sum }
}
query at(i: num) { return items.at(i).id }
query names_count(a: text, b: text) { return names[a .. b].count }
)";
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      CAPTURE(seed);
      Running run(module);
      std::map<double, double> items;  // id -> qty
      std::mt19937_64 rng(seed * 7919);
      const int kKeys = 400;
      auto key = [&] { return static_cast<double>(rng() % kKeys); };
      auto names_in = [&](const std::string& a, const std::string& b) {
        size_t n = 0;
        for (auto& [id, q] : items) {
          std::string name = "t" + num(id);
          if (a <= name && name < b) ++n;
        }
        return n;
      };
      for (int step = 0; step < 4000; ++step) {
        std::string line, code;
        uint64_t what = rng() % 10;
        if (what < 3) {
          double id = key(), qty = static_cast<double>(rng() % 100);
          line = fmt::format(R"({{"event":"add_item","args":{{"id":{},"qty":{}}}}})", num(id), num(qty));
          if (items.count(id)) code = "duplicate"; else items[id] = qty;
        } else if (what < 5) {
          double id = key(), qty = static_cast<double>(rng() % 100);
          line = fmt::format(R"({{"event":"put_item","args":{{"id":{},"qty":{}}}}})", num(id), num(qty));
          items[id] = qty;
        } else if (what < 7) {
          double id = key();
          line = fmt::format(R"({{"event":"del_item","args":{{"id":{}}}}})", num(id));
          if (!items.erase(id)) code = "not_found";
        } else if (what < 9) {
          double a = key(), b = a + static_cast<double>(rng() % 60), by = static_cast<double>(rng() % 5);
          double limit = static_cast<double>(60 + rng() % 80);
          line = fmt::format(R"({{"event":"bump","args":{{"from":{},"to":{},"by":{},"limit":{}}}}})",
                             num(a), num(b), num(by), num(limit));
          bool over = false;
          for (auto it = items.lower_bound(a); it != items.end() && it->first < b; ++it) {
            if (it->second + by > limit) over = true;
          }
          if (over) {
            code = "failed";
          } else {
            for (auto it = items.lower_bound(a); it != items.end() && it->first < b; ++it) it->second += by;
          }
        } else {
          size_t n = 1 + rng() % 6;
          std::string ids;
          std::vector<double> list;
          for (size_t i = 0; i < n; ++i) {
            double id = key();
            list.push_back(id);
            ids += (i ? "," : "") + num(id);
          }
          double qty = static_cast<double>(rng() % 100);
          line = fmt::format(R"({{"event":"bulk","args":{{"ids":[{}],"qty":{}}}}})", ids, num(qty));
          if (n > 4) {
            code = "failed";
          } else {
            for (double id : list) items[id] = qty;
          }
        }
        std::string got = run.call(line);
        CAPTURE(line);
        CAPTURE(got);
        if (code.empty()) {
          REQUIRE(got == R"({"ok":true})");
        } else {
          REQUIRE(got.find(fmt::format("\"code\":\"{}\"", code)) != std::string::npos);
        }
        if (step % 97 == 0) {
          double a = key(), b = a + static_cast<double>(rng() % 120);
          auto lo = items.lower_bound(a), hi = items.lower_bound(b);
          size_t count = static_cast<size_t>(std::distance(lo, hi));
          double sum = 0;
          for (auto it = lo; it != hi; ++it) sum += it->second;
          std::string want = count == 0
                                 ? R"({"ok":true,"result":{"count":0,"first":-1,"last":-1,"sum":0}})"
                                 : fmt::format(R"({{"ok":true,"result":{{"count":{},"first":{},"last":{},"sum":{}}}}})",
                                               count, num(lo->first), num(std::prev(hi)->first), num(sum));
          REQUIRE(run.call(fmt::format(R"({{"query":"range","args":{{"from":{},"to":{}}}}})", num(a), num(b))) == want);
          if (!items.empty()) {
            size_t pos = rng() % items.size();
            REQUIRE(run.call(fmt::format(R"({{"query":"at","args":{{"i":{}}}}})", pos)) ==
                    fmt::format(R"({{"ok":true,"result":{}}})", num(std::next(items.begin(), static_cast<long>(pos))->first)));
          }
          REQUIRE(run.call(R"({"query":"names_count","args":{"a":"t1","b":"t3"}})") ==
                  fmt::format(R"({{"ok":true,"result":{}}})", names_in("t1", "t3")));
        }
      }
      REQUIRE(run.state().table(0).size() == items.size());
      REQUIRE(run.state().table(1).size() == items.size());
    }
  }
}

}  // namespace
}  // namespace aup::testing

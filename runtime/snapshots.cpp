#include "runtime/snapshots.h"

#include <cassert>

namespace aup::runtime {

Snapshots::Snapshots(vm::State& live) : live_(live) { current_ = take(); }

Snapshots::~Snapshots() {
  reclaim();
  assert(retired_.empty());  // a lease outlived the server
  if (current_) {
    assert(current_->leases.load() == 0);
    give_back_to_tables(*current_);
  }
}

std::unique_ptr<Snapshot> Snapshots::take() {
  auto s = std::make_unique<Snapshot>();
  s->number = ++published_;
  const vm::Module& m = live_.module();
  // The indexes' roots with the tables': a reader sees a table and its
  // indexes as of one commit.
  for (size_t t = 0; t < live_.tree_count(); ++t) s->roots.push_back(live_.tree(t).share());
  for (uint32_t v = 0; v < m.vars.size(); ++v) {
    vm::Value x = live_.var(v);
    if (live_.text_var(v)) vm::retain(vm::as_ptr<vm::TextObj>(x));
    s->vars.push_back(x);
  }
  s->view = std::make_unique<vm::State>(live_, s->roots, s->vars);
  return s;
}

void Snapshots::give_back_to_tables(Snapshot& s) {
  assert(on_owner());
  assert(!s.dropped);                // dropped once: its roots are released once
  assert(s.leases.load() == 0);      // no reader holds it
  assert(s.roots.size() == live_.tree_count());
  s.dropped = true;
  s.view.reset();
  for (size_t t = 0; t < s.roots.size(); ++t) live_.tree(t).drop_root(s.roots[t]);
  for (uint32_t v = 0; v < s.vars.size(); ++v) {
    if (live_.text_var(v)) vm::release(vm::as_ptr<vm::TextObj>(s.vars[v]));
  }
  s.roots.clear();
  s.vars.clear();
}

void Snapshots::publish() {
  assert(on_owner());
  std::unique_ptr<Snapshot> fresh = take();
  std::unique_ptr<Snapshot> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old = std::move(current_);
    current_ = std::move(fresh);
  }
  // No new lease can reach `old` now; the ones it has are given back with
  // a decrement that reclaim() sees.
  retired_.push_back(std::move(old));
  reclaim();
}

void Snapshots::reclaim() {
  assert(on_owner());
  size_t kept = 0;
  for (auto& s : retired_) {
    if (s->leases.load(std::memory_order_acquire) == 0) {
      give_back_to_tables(*s);
      s.reset();
    } else {
      retired_[kept++] = std::move(s);
    }
  }
  retired_.resize(kept);
}

Snapshot* Snapshots::lease() {
  std::lock_guard<std::mutex> lock(mu_);
  // The current snapshot is dropped only once replaced (under this mutex)
  // and then no lease holds it, so what a reader gets here is whole.
  assert(!current_->dropped);
  current_->leases.fetch_add(1, std::memory_order_relaxed);
  return current_.get();
}

}  // namespace aup::runtime

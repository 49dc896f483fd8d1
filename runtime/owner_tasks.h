// Work another thread hands to the owner thread, which alone changes the
// state: a replica's follower (runtime/follower.h) hands it the entries it
// received, to write and apply. Run between batches, in the order posted.
#pragma once

#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace aup::runtime {

class OwnerTasks {
 public:
  // The serving shape's: how to wake the owner when a task is posted.
  // Tasks posted before it was set (a follower starts before the server)
  // are woken for now.
  void set_wake(std::function<void()> wake) {
    std::function<void()> now;
    {
      std::lock_guard<std::mutex> lock(mu_);
      wake_ = std::move(wake);
      if (!posted_.empty()) now = wake_;
    }
    if (now) now();
  }
  // Any thread.
  void post(std::function<void()> task) {
    std::function<void()> wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      posted_.push_back(std::move(task));
      wake = wake_;
    }
    if (wake) wake();
  }
  bool pending() {
    std::lock_guard<std::mutex> lock(mu_);
    return !posted_.empty();
  }
  // The owner thread: runs what was posted; whether anything ran.
  bool run() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_.swap(posted_);
    }
    for (auto& task : running_) task();
    bool ran = !running_.empty();
    running_.clear();
    return ran;
  }

 private:
  std::mutex mu_;
  std::function<void()> wake_;               // under mu_
  std::vector<std::function<void()>> posted_;  // under mu_
  std::vector<std::function<void()>> running_;
};

}  // namespace aup::runtime

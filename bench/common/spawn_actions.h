// posix_spawn file actions as an owned object: the benches start aup (and
// cat, wc) as children with posix_spawnp, redirecting their standard files.
#pragma once

#include <spawn.h>

namespace aup::bench {

class SpawnActions {
 public:
  SpawnActions() { posix_spawn_file_actions_init(&a_); }
  ~SpawnActions() { posix_spawn_file_actions_destroy(&a_); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;

  void open(int fd, const char* path, int flags, mode_t mode = 0) {
    posix_spawn_file_actions_addopen(&a_, fd, path, flags, mode);
  }
  void dup2(int from, int to) { posix_spawn_file_actions_adddup2(&a_, from, to); }
  void close(int fd) { posix_spawn_file_actions_addclose(&a_, fd); }
  const posix_spawn_file_actions_t* get() const { return &a_; }

 private:
  posix_spawn_file_actions_t a_;
};

}  // namespace aup::bench

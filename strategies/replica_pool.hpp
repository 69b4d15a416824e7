// One worker thread per replica (a virtual device): run(fn) calls fn(r) for
// every replica r at once and returns when all are done. Each worker gives
// oneDNN's OpenMP an equal share of the cores, so replicas do not
// oversubscribe the machine.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/base/status.hpp"

namespace dtrain {

class ReplicaPool {
 public:
  // replicas >= 1. With one replica, run() calls fn(0) on the caller's thread.
  explicit ReplicaPool(int replicas);
  ~ReplicaPool();
  ReplicaPool(const ReplicaPool&) = delete;
  ReplicaPool& operator=(const ReplicaPool&) = delete;

  int size() const { return replicas_; }
  // Thread-compatible: one run() at a time. When fn throws on any replica,
  // run() waits for every replica, then throws ErrorException with the first
  // failure (engine/thread_errors.hpp): nothing reaches std::terminate.
  // on_failure (optional) runs on the failing replica's thread right after
  // its failure is recorded: it must release the other replicas from
  // whatever they wait on for it (an all-reduce, a batch-norm sum), which
  // then fail too (their errors are not the one reported).
  void run(const std::function<void(int)>& fn, const std::function<void()>& on_failure = {});

 private:
  void worker(int r, int omp_threads);

  const int replicas_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int)>* job_ = nullptr;  // GUARDED_BY(mu_)
  const std::function<void()>* on_failure_ = nullptr;  // GUARDED_BY(mu_)
  uint64_t generation_ = 0;                        // GUARDED_BY(mu_)
  int pending_ = 0;                                // GUARDED_BY(mu_)
  bool stop_ = false;                              // GUARDED_BY(mu_)
  std::optional<Error> error_;                     // GUARDED_BY(mu_): the run's first failure
  std::vector<std::thread> threads_;
};

}  // namespace dtrain

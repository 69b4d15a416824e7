// A small pool of threads that runs the tasks of one call in parallel: the
// gathering and map of one batch split by rows (data.*.num_parallel_calls).
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

class MapPool {
 public:
  // Starts threads - 1 threads; the caller of run() is the last one.
  // REQUIRES: threads >= 1.
  explicit MapPool(int threads);
  // Joins the threads. REQUIRES: no run() in progress.
  ~MapPool();
  MapPool(const MapPool&) = delete;
  MapPool& operator=(const MapPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls task(0) .. task(tasks - 1), each once, on the pool's threads and
  // the calling thread; returns when all have returned. When a task throws,
  // the others still run and run() then throws ErrorException with the first
  // failure. One run() at a time (the pipeline calls it from one thread).
  void run(int tasks, const std::function<void(int)>& task);

  // num_parallel_calls: 0 (auto) is the process's thread count, at most 8 (engine/threads.hpp).
  static int resolve_threads(int64_t num_parallel_calls);

 private:
  void work();
  // Runs tasks of the current call until none is left. REQUIRES: mu_ held
  // by `lock`; returns with it held.
  void drain(std::unique_lock<std::mutex>& lock);

  std::mutex mu_;
  std::condition_variable wake_;  // a call started, or stop_
  std::condition_variable done_;  // a task of the call finished
  const std::function<void(int)>* task_ = nullptr;  // GUARDED_BY(mu_): the current call's
  int tasks_ = 0;                                   // GUARDED_BY(mu_)
  int next_ = 0;                                    // GUARDED_BY(mu_): next task to start
  int running_ = 0;                                 // GUARDED_BY(mu_): started, not finished
  bool stop_ = false;                               // GUARDED_BY(mu_)
  std::optional<Error> error_;                      // GUARDED_BY(mu_): the run's first failure
  std::vector<std::thread> workers_;
};

}  // namespace dtrain

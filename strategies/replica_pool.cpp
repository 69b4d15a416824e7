// Persistent replica threads with a generation counter per run().
#include "strategies/replica_pool.hpp"

#include <omp.h>

#include <algorithm>
#include <string>
#include <utility>

#include "engine/thread_errors.hpp"

namespace dtrain {

ReplicaPool::ReplicaPool(int replicas) : replicas_(replicas) {
  if (replicas_ <= 1) return;
  const int omp_threads = std::max(1, omp_get_max_threads() / replicas_);
  for (int r = 0; r < replicas_; ++r) threads_.emplace_back(&ReplicaPool::worker, this, r, omp_threads);
}

ReplicaPool::~ReplicaPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ReplicaPool::run(const std::function<void(int)>& fn, const std::function<void()>& on_failure) {
  if (replicas_ <= 1) {
    try {
      maybe_throw_for_test("replica");
      fn(0);
    } catch (...) {
      throw ErrorException{current_exception_error("replica 0")};
    }
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  job_ = &fn;
  on_failure_ = on_failure ? &on_failure : nullptr;
  pending_ = replicas_;
  error_.reset();
  ++generation_;
  start_cv_.notify_all();
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  on_failure_ = nullptr;
  if (error_) throw ErrorException{*std::exchange(error_, std::nullopt)};
}

void ReplicaPool::worker(int r, int omp_threads) {
  omp_set_num_threads(omp_threads);  // this thread's OpenMP teams (oneDNN)
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job = nullptr;
    const std::function<void()>* on_failure = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      on_failure = on_failure_;
    }
    bool failed = false;
    try {
      maybe_throw_for_test("replica");
      if (r == 1) maybe_throw_for_test("replica1");
      (*job)(r);
    } catch (...) {
      failed = true;
      Error e = current_exception_error("replica " + std::to_string(r));
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::move(e);  // first: the cause, not a replica released by on_failure
    }
    if (failed && on_failure) {
      try {
        (*on_failure)();
      } catch (...) {  // releasing the others must not end the process
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace dtrain

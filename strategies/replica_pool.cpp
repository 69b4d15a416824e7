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

void ReplicaPool::run(const std::function<void(int)>& fn) {
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
  pending_ = replicas_;
  error_.reset();
  ++generation_;
  start_cv_.notify_all();
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  if (error_) throw ErrorException{*std::exchange(error_, std::nullopt)};
}

void ReplicaPool::worker(int r, int omp_threads) {
  omp_set_num_threads(omp_threads);  // this thread's OpenMP teams (oneDNN)
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    std::optional<Error> failed;
    try {
      maybe_throw_for_test("replica");
      (*job)(r);
    } catch (...) {
      failed = current_exception_error("replica " + std::to_string(r));
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (failed && !error_) error_ = std::move(failed);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace dtrain

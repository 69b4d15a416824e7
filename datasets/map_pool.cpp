// The pool that gathers and maps one batch's rows in parallel (see map_pool.hpp).
#include "datasets/map_pool.hpp"

#include <algorithm>
#include <cassert>
#include <utility>

#include "engine/thread_errors.hpp"
#include "engine/threads.hpp"

namespace dtrain {

MapPool::MapPool(int threads) {
  assert(threads >= 1);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

MapPool::~MapPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

int MapPool::resolve_threads(int64_t num_parallel_calls) {
  if (num_parallel_calls > 0) return static_cast<int>(num_parallel_calls);
  return auto_input_threads();
}

void MapPool::drain(std::unique_lock<std::mutex>& lock) {
  while (task_ != nullptr && next_ < tasks_) {
    const int i = next_++;
    ++running_;
    const std::function<void(int)>* task = task_;
    lock.unlock();
    std::optional<Error> failed;
    try {
      (*task)(i);
    } catch (...) {
      failed = current_exception_error("input pipeline");
    }
    lock.lock();
    if (failed && !error_) error_ = std::move(failed);
    --running_;
    done_.notify_all();
  }
}

void MapPool::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || (task_ != nullptr && next_ < tasks_); });
    if (stop_) return;
    drain(lock);
  }
}

void MapPool::run(int tasks, const std::function<void(int)>& task) {
  std::unique_lock<std::mutex> lock(mu_);
  task_ = &task;
  tasks_ = tasks;
  next_ = 0;
  wake_.notify_all();
  drain(lock);
  done_.wait(lock, [this] { return next_ == tasks_ && running_ == 0; });
  task_ = nullptr;
  if (error_) throw ErrorException{*std::exchange(error_, std::nullopt)};
}

}  // namespace dtrain

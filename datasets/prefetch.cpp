// The prefetch thread and its bounded queue (see prefetch.hpp).
#include "datasets/prefetch.hpp"

#include <cassert>
#include <exception>
#include <string>
#include <utility>

#include "engine/thread_errors.hpp"

namespace dtrain {

Prefetcher::Prefetcher(Producer producer, int64_t capacity)
    : producer_(std::move(producer)), capacity_(static_cast<size_t>(capacity)) {
  assert(capacity >= 1);
  thread_ = std::thread([this] { run(); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void Prefetcher::run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] { return stop_ || queue_.size() < capacity_; });
      if (stop_) return;
    }
    // The producer runs without the lock: the consumer keeps taking batches.
    std::optional<Result<std::optional<Batch>>> item;
    try {
      maybe_throw_for_test("input");
      item.emplace(producer_());
    } catch (...) {
      item.emplace(current_exception_error("input pipeline"));
    }
    const bool done = !item->ok() || !item->value().has_value();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (done) {
        final_ = std::move(item);
      } else {
        queue_.push_back(std::move(*item->value()));
      }
    }
    changed_.notify_all();
    if (done) return;
  }
}

Result<std::optional<Batch>> Prefetcher::next() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return !queue_.empty() || final_.has_value(); });
  if (queue_.empty()) return *final_;
  Batch b = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  changed_.notify_all();
  return std::optional<Batch>(std::move(b));
}

}  // namespace dtrain

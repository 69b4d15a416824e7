// Prefetching: one background thread that calls a producer ahead of the
// consumer and keeps up to `capacity` results in a bounded queue.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "datasets/dataset.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

class Prefetcher {
 public:
  // Returns the next batch, std::nullopt at the end, or an error.
  using Producer = std::function<Result<std::optional<Batch>>()>;

  // Starts the thread. `producer` is called only on that thread, in order,
  // until it returns the end or an error (or the Prefetcher is destroyed);
  // whatever it touches must not be used elsewhere meanwhile.
  // REQUIRES: capacity >= 1.
  Prefetcher(Producer producer, int64_t capacity);
  // Stops the thread and discards what it prepared. Never blocks for longer
  // than one producer call, wherever the consumer stopped.
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Blocks until the next result is ready. Batches come in producer order;
  // the end or an error (including an exception thrown by the producer,
  // reported as a kRuntime error) comes after the batches before it and is
  // then returned by every further call. Consumer thread only.
  Result<std::optional<Batch>> next();

 private:
  void run();

  const Producer producer_;
  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable changed_;                     // any state below changed
  std::deque<Batch> queue_;                             // GUARDED_BY(mu_)
  std::optional<Result<std::optional<Batch>>> final_;   // GUARDED_BY(mu_): the end or an error, once produced
  bool stop_ = false;                                   // GUARDED_BY(mu_): the destructor asks the thread to stop
  std::thread thread_;                                  // started last, joined by the destructor
};

}  // namespace dtrain

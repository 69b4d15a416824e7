// Bucketing and the in-process all-reduce.
#include "strategies/all_reduce.hpp"

#include <fmt/format.h>

#include "engine/ops/core.hpp"
#include "engine/thread_errors.hpp"
#include "strategies/tree_sum.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace dtrain {

GradBuckets make_buckets(const Model& model, double bucket_bytes) {
  const auto& vars = model.variables();
  std::vector<int64_t> owner(vars.size(), 0);
  for (size_t l = 0; l < model.num_layers(); ++l) {
    const auto [first, count] = model.layer_variables(l);
    for (size_t v = first; v < first + count; ++v) owner[v] = static_cast<int64_t>(l);
  }
  GradBuckets b;
  b.after_layer.resize(model.num_layers());
  double bytes = 0;
  bool open = false;
  for (size_t v = vars.size(); v-- > 0;) {
    if (!vars[v].trainable) continue;
    if (!open) {
      b.vars.emplace_back();
      bytes = 0;
      open = true;
    }
    b.vars.back().push_back(v);
    bytes += static_cast<double>(num_elements(vars[v].shape)) * sizeof(float);
    const double cap = b.vars.size() == 1 ? std::min(kFirstBucketBytes, bucket_bytes) : bucket_bytes;
    if (bytes >= cap) open = false;
  }
  // Backward runs last layer first: a bucket is complete after the layer that
  // owns its lowest-numbered variable (the last one added).
  for (size_t i = 0; i < b.vars.size(); ++i) {
    b.after_layer[static_cast<size_t>(owner[b.vars[i].back()])].push_back(i);
  }
  return b;
}

void sum_into_first(std::span<ReplicaState* const> states, const std::vector<size_t>& vars) {
  tree_sum(states.size(), [&](size_t into, size_t from) {
    for (size_t v : vars) ops::add_into(states[into]->ctx, states[into]->grads[v], states[from]->grads[v]);
  });
}

InProcessAllReduce::InProcessAllReduce(const GradBuckets& buckets, CrossReduce cross)
    : buckets_(buckets),
      cross_(std::move(cross)),
      arrived_(buckets.vars.size(), 0),
      ready_(buckets.vars.size(), false),
      done_(buckets.vars.size(), false) {
  if (cross_) comm_ = std::thread([this] { comm_loop(); });
}

InProcessAllReduce::~InProcessAllReduce() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  ready_cv_.notify_all();
  if (comm_.joinable()) comm_.join();
}

std::string InProcessAllReduce::bucket_label(size_t bucket) const {
  int64_t bytes = 0;
  for (size_t v : buckets_.vars[bucket]) bytes += states_[0]->grads[v].bytes();
  return fmt::format("bucket {} ({:.2f} MiB)", bucket, static_cast<double>(bytes) / (1024.0 * 1024.0));
}

void InProcessAllReduce::begin_step(std::span<ReplicaState* const> states, Profiler* profiler) {
  std::lock_guard<std::mutex> lock(mu_);
  states_ = states;
  profiler_ = profiler;
  std::fill(arrived_.begin(), arrived_.end(), 0);
  std::fill(ready_.begin(), ready_.end(), false);
  std::fill(done_.begin(), done_.end(), false);
  reduced_ = 0;
  next_cross_ = 0;
  abandoned_ = false;
  error_.reset();
  cross_seconds_ = exposed_seconds_ = 0;
}

void InProcessAllReduce::arrive(size_t bucket) {
  Profiler* profiler = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (++arrived_[bucket] < static_cast<int>(states_.size())) return;
    profiler = profiler_;
  }
  if (!cross_ && states_.size() == 1) {
    publish(bucket);  // one replica, one worker: nothing to reduce
    return;
  }
  {
    // Every replica's gradients for this bucket are final and no one writes
    // them until the next step: reduce outside the lock.
    const ProfileScope profile(profiler, "all-reduce", profiler ? bucket_label(bucket) + " in process" : "");
    sum_into_first(states_, buckets_.vars[bucket]);
    if (!cross_) {
      publish(bucket);
      return;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_[bucket] = true;
  }
  ready_cv_.notify_all();
}

void InProcessAllReduce::publish(size_t bucket) {
  for (size_t r = 1; r < states_.size(); ++r) {
    for (size_t v : buckets_.vars[bucket]) states_[r]->grads[v].copy_from(states_[0]->grads[v]);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++reduced_;
    done_[bucket] = true;
  }
  done_cv_.notify_all();
}

// Buckets are reduced across workers strictly in index order, the order in
// which backward completes them on every worker, so every worker issues the
// same sequence of collectives.
void InProcessAllReduce::comm_loop() {
  using Clock = std::chrono::steady_clock;
  for (;;) {
    size_t bucket = 0;
    bool failed = false;
    Profiler* profiler = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_cv_.wait(lock, [&] { return stop_ || (next_cross_ < ready_.size() && ready_[next_cross_]); });
      if (stop_) return;
      bucket = next_cross_++;
      failed = error_.has_value();
      profiler = profiler_;
    }
    if (profiler) profiler->name_thread("all-reduce");
    const auto t0 = Clock::now();
    // After a failure the communicator is unusable: the remaining buckets
    // are only released so that wait_all() returns.
    Status s = Status::Ok();
    {
      // The trace event closes before publish(): once the bucket is
      // published the step may end and the profile window with it.
      const ProfileScope profile(profiler, "all-reduce", profiler ? bucket_label(bucket) + " across workers" : "");
      if (!failed) {
        try {
          maybe_throw_for_test("all_reduce");
          s = cross_(bucket);
        } catch (...) {
          s = current_exception_error("all-reduce across workers");
        }
      }
    }
    const auto t1 = Clock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!s && !error_) error_ = s.error();
      cross_seconds_ += std::chrono::duration<double>(t1 - t0).count();
    }
    publish(bucket);
  }
}

template <class Done>
void InProcessAllReduce::wait_until(std::unique_lock<std::mutex>& lock, int replica, Done done) {
  if (!done() && !abandoned_) {
    const auto t0 = std::chrono::steady_clock::now();
    done_cv_.wait(lock, [&] { return done() || abandoned_; });
    if (replica == 0) exposed_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  if (!done()) throw ErrorException{runtime_error("the gradient all-reduce was abandoned: another replica failed")};
}

void InProcessAllReduce::wait_all(int replica) {
  std::unique_lock<std::mutex> lock(mu_);
  wait_until(lock, replica, [&] { return reduced_ == arrived_.size(); });
}

void InProcessAllReduce::wait_bucket(size_t bucket, int replica) {
  std::unique_lock<std::mutex> lock(mu_);
  wait_until(lock, replica, [&] { return static_cast<bool>(done_[bucket]); });
}

void InProcessAllReduce::abandon() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    abandoned_ = true;
  }
  done_cv_.notify_all();
}

std::optional<Error> InProcessAllReduce::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

double InProcessAllReduce::cross_seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cross_seconds_;
}

double InProcessAllReduce::exposed_seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exposed_seconds_;
}

}  // namespace dtrain

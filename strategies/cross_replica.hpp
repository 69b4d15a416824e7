// CrossReplicaSum for the replicas of one process (towers, mirrored,
// collective and parameter_server workers): each replica's vector is kept,
// the last to arrive sums them in replica order (so every run and every
// replica count with the same data gives the same bits), hands the sum to
// `across_workers` when there are other processes, and releases everyone.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/layer.hpp"

namespace dtrain {

class ReplicaGroupSum {
 public:
  // Sums `values` over the worker processes in place (null: one process).
  using AcrossWorkers = std::function<void(std::vector<double>& values)>;
  ReplicaGroupSum(int replicas, AcrossWorkers across_workers = {});
  ~ReplicaGroupSum();

  // Before a step: which replicas take part (those with a non-empty shard).
  void begin_step(const std::vector<bool>& participating);
  // Replica r's handle, for ForwardContext::cross_replica.
  CrossReplicaSum* replica(int r);
  // A replica failed this step: every replica waiting in a sum, or arriving
  // at one, throws instead of waiting for it (until the next begin_step).
  void abandon();

 private:
  class Handle;
  void all_reduce(int r, std::span<double> values);

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> participating_;         // GUARDED_BY(mu_)
  std::vector<std::vector<double>> parts_;  // GUARDED_BY(mu_): per replica, this round
  std::vector<double> result_;              // GUARDED_BY(mu_)
  int arrived_ = 0;                         // GUARDED_BY(mu_)
  uint64_t round_ = 0;                      // GUARDED_BY(mu_)
  bool abandoned_ = false;                  // GUARDED_BY(mu_)
  AcrossWorkers across_workers_;
  std::vector<std::unique_ptr<Handle>> handles_;
};

}  // namespace dtrain

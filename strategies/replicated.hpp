// Shared machinery of the strategies that run one replica per device of this
// process (towers, mirrored): replica threads, replica states, batch split,
// and evaluation/prediction, which reduce the same way for both.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "strategies/cross_replica.hpp"
#include "strategies/gloo_comm.hpp"
#include "strategies/replica_pool.hpp"
#include "strategies/strategy.hpp"

namespace dtrain {

class ReplicatedStrategy : public Strategy {
 public:
  // REQUIRES: program outlives the strategy; devices non-empty.
  ReplicatedStrategy(Program& program, std::vector<Device> devices);
  std::vector<Device> devices() const override { return devices_; }
  // Synchronised batch norm across worker processes: its sums go over
  // `comm` (a communicator of its own: the gradient all-reduce runs on
  // another thread); a failure ends the process through `cluster`.
  void sum_statistics_over(std::unique_ptr<GlooComm> comm, ClusterRuntime* cluster);
  // Loss and metric sums over all shards, reduced in replica order.
  StepOutput eval_step(const Batch& batch) override;
  // Each replica predicts its shard; concatenated in input order.
  std::vector<Tensor> predict_outputs(const Batch& batch) override;

 protected:
  // Runs fn(r, begin, end) on replica r's thread for its shard [begin, end)
  // of a batch of `rows`, and returns the per-replica outputs in order.
  std::vector<StepOutput> on_shards(int64_t rows, const std::function<StepOutput(int, int64_t, int64_t)>& fn);
  // When a replica fails mid-step: releases the others from what they wait
  // on for it (synchronised batch norm's sums; mirrored adds its all-reduce).
  virtual void abandon_step();
  static StepOutput sum_outputs(const std::vector<StepOutput>& outs);
  // One shared copy (towers semantics): every replica's trainable variables
  // are views of `values`; non-trainable ones (batch_norm's moving
  // statistics, written in forward) are private copies for replicas after
  // the first, so towers never race on them.
  void share_one_copy(std::vector<Tensor>& values);
  // Replicas on a device that does not share memory with `values` get a
  // private copy of every variable.
  // Refreshes those private copies from `values` (before each step).
  void refresh_private_copies(const std::vector<Tensor>& values);
  // Sums the replicas' gradients of `trainable` into replica 0's and returns
  // them on the variable device (copied there when replica 0 is elsewhere).
  std::span<Tensor> reduce_to_variables(const std::vector<size_t>& trainable);

  Program& program_;
  std::vector<Device> devices_;
  ReplicaPool pool_;
  std::unique_ptr<GlooComm> stats_comm_;
  std::unique_ptr<ReplicaGroupSum> group_sum_;  // synchronised batch norm's sums over the replicas
  std::vector<ReplicaState> replicas_;
  std::vector<ReplicaState*> replica_ptrs_;  // &replicas_[r]
  // Where one shared copy of the variables lives (towers, parameter_server's
  // local cache) and where the optimizer runs on it.
  ops::Context variable_ctx_;
  std::vector<Tensor> variable_grads_;  // reduce_to_variables' copies on the variable device
};

}  // namespace dtrain

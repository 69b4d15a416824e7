// Shared machinery of the strategies that run one replica per device of this
// process (towers, mirrored): replica threads, replica states, batch split,
// and evaluation/prediction, which reduce the same way for both.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "strategies/replica_pool.hpp"
#include "strategies/strategy.hpp"

namespace dtrain {

class ReplicatedStrategy : public Strategy {
 public:
  // REQUIRES: program outlives the strategy; devices non-empty.
  ReplicatedStrategy(Program& program, std::vector<std::string> devices);
  std::vector<std::string> devices() const override { return devices_; }
  // Loss and metric sums over all shards, reduced in replica order.
  StepOutput eval_step(const Batch& batch) override;
  // Each replica predicts its shard; concatenated in input order.
  Tensor predict_step(const Batch& batch) override;

 protected:
  // Runs fn(r, begin, end) on replica r's thread for its shard [begin, end)
  // of a batch of `rows`, and returns the per-replica outputs in order.
  std::vector<StepOutput> on_shards(int64_t rows, const std::function<StepOutput(int, int64_t, int64_t)>& fn);
  static StepOutput sum_outputs(const std::vector<StepOutput>& outs);
  // One shared copy (towers semantics): every replica's trainable variables
  // are views of `values`; non-trainable ones (batch_norm's moving
  // statistics, written in forward) are private copies for replicas after
  // the first, so towers never race on them.
  void share_one_copy(std::vector<Tensor>& values);
  // Refreshes those private copies from `values` (before each step).
  void refresh_private_copies(const std::vector<Tensor>& values);

  Program& program_;
  std::vector<std::string> devices_;
  ReplicaPool pool_;
  std::vector<ReplicaState> replicas_;
  std::vector<ReplicaState*> replica_ptrs_;  // &replicas_[r]
};

}  // namespace dtrain

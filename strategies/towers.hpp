// towers (TensorFlow's replicate_model_fn + TowerOptimizer): ONE copy of the
// variables and optimizer slots; every replica runs forward/backward on its
// shard with those variables; gradients are summed over towers (replica
// order) and applied once.
#pragma once

#include "strategies/replicated.hpp"

namespace dtrain {

class TowersStrategy final : public ReplicatedStrategy {
 public:
  using ReplicatedStrategy::ReplicatedStrategy;
  std::string name() const override { return "towers"; }
  Status create_variables() override;
  std::vector<std::pair<std::string, Tensor>> logical_state() override;
  Status restore(const CheckpointData& ckpt) override;
  StepOutput train_step(const Batch& batch, int64_t step, float lr) override;
  std::vector<std::pair<std::string, Tensor>> applied_gradients() override {
    return trainable_on_host(program_, applied_grads_);
  }

 private:
  std::vector<Tensor> values_;              // the one copy
  std::span<Tensor> applied_grads_;         // what the last step applied (replica 0's or variable_grads_)
  std::vector<std::vector<Tensor>> slots_;  // per variable
};

}  // namespace dtrain

// one_device: every variable, slot and computation on a single device.
#pragma once

#include <string>
#include <vector>

#include "strategies/strategy.hpp"

namespace dtrain {

class OneDeviceStrategy final : public Strategy {
 public:
  // REQUIRES: program outlives the strategy.
  OneDeviceStrategy(Program& program, Device device) : program_(program), device_(device) {}
  std::string name() const override { return "one_device"; }
  std::vector<Device> devices() const override { return {device_}; }
  Status create_variables() override;
  std::vector<std::pair<std::string, Tensor>> logical_state() override;
  Status restore(const CheckpointData& ckpt) override;
  StepOutput train_step(const Batch& batch, int64_t step, float lr) override;
  std::vector<std::pair<std::string, Tensor>> applied_gradients() override {
    return trainable_on_host(program_, replica_.grads);
  }
  StepOutput eval_step(const Batch& batch) override;
  std::vector<Tensor> predict_outputs(const Batch& batch) override;

 private:
  Program& program_;
  Device device_;
  ReplicaState replica_;
  std::vector<std::vector<Tensor>> slots_;  // per variable, optimizer slot order
};

}  // namespace dtrain

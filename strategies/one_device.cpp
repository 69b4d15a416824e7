// one_device strategy: the reference every other strategy must match.
#include "strategies/one_device.hpp"

#include "strategies/replica_step.hpp"

namespace dtrain {

Status OneDeviceStrategy::create_variables() {
  replica_ = program_.model->make_replica_state(program_.context_on(device_));
  return initialize_variables(program_, replica_.ctx.device, replica_.values, slots_);
}

std::vector<std::pair<std::string, Tensor>> OneDeviceStrategy::logical_state() {
  return state_list(program_, replica_.values, slots_);
}

Status OneDeviceStrategy::restore(const CheckpointData& ckpt) {
  return assign_state(program_, ckpt, replica_.values, slots_);
}

StepOutput OneDeviceStrategy::train_step(const Batch& batch, int64_t step, float lr) {
  StepOutput out =
      run_replica_accumulated(program_, replica_, batch, 0, batch.size(), step, program_.grad_scale(batch.size()));
  const bool applied = apply_gradients(program_, replica_.ctx, replica_.values, replica_.grads, slots_, step, lr);
  program_.loss_scale.update(applied);
  return out;
}

StepOutput OneDeviceStrategy::eval_step(const Batch& batch) {
  return run_replica(program_, replica_, batch, 0, batch.size(), 0, false, 1.0f);
}

std::vector<Tensor> OneDeviceStrategy::predict_outputs(const Batch& batch) {
  return predict_replica(program_, replica_, batch, 0, batch.size());
}

}  // namespace dtrain

// towers strategy: shared variables, per-tower gradients summed and applied once.
#include "strategies/towers.hpp"

#include "strategies/all_reduce.hpp"
#include "strategies/replica_step.hpp"

namespace dtrain {

Status TowersStrategy::create_variables() {
  if (Status s = initialize_variables(program_, variable_ctx_.device, values_, slots_); !s) return s;
  share_one_copy(values_);
  return Status::Ok();
}

std::vector<std::pair<std::string, Tensor>> TowersStrategy::logical_state() {
  return state_list(program_, values_, slots_);
}

Status TowersStrategy::restore(const CheckpointData& ckpt) {
  if (Status s = assign_state(program_, ckpt, values_, slots_); !s) return s;
  refresh_private_copies(values_);
  return Status::Ok();
}

StepOutput TowersStrategy::train_step(const Batch& batch, int64_t step, float lr) {
  refresh_private_copies(values_);
  const float scale = program_.grad_scale(batch.size());
  const auto outs = on_shards(batch.size(), [&](int r, int64_t begin, int64_t end) {
    ReplicaState& rs = replicas_[static_cast<size_t>(r)];
    if (end <= begin) {
      for (Tensor& g : rs.grads) {
        if (!g.empty()) g.zero();
      }
      return run_replica(program_, rs, batch, begin, end, step, true, scale);
    }
    return run_replica_accumulated(program_, rs, batch, begin, end, step, scale);
  });
  // Sum the towers' gradients into the first tower's, then apply once.
  std::vector<size_t> trainable;
  const auto& vars = program_.model->variables();
  for (size_t i = 0; i < vars.size(); ++i) {
    if (vars[i].trainable) {
      trainable.push_back(i);
    } else if (!replicas_[0].ctx.device.same_memory(variable_ctx_.device)) {
      // The first tower's non-trainable variables (batch norm's moving
      // statistics, written in forward) are the ones kept; on a device of
      // its own they are a private copy, so bring them back.
      values_[i].copy_from(replicas_[0].values[i]);
    }
  }
  applied_grads_ = reduce_to_variables(trainable);
  const bool applied = apply_gradients(program_, variable_ctx_, values_, applied_grads_, slots_, step, lr);
  program_.loss_scale.update(applied);
  // Towers on devices that do not share the variables' memory compute on
  // private copies: bring them up to date for evaluation and prediction.
  refresh_private_copies(values_);
  return sum_outputs(outs);
}

}  // namespace dtrain

// Optimizers, learning-rate schedules and gradient clipping. An optimizer
// updates one variable from its gradient and its slots (named per-variable
// state tensors of the variable's shape, saved in checkpoints as
// "<variable>/<slot>"). apply() is pure in (step, lr, var, grad, slots), so a
// strategy can apply it once (towers) or identically on every copy (mirrored).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/ops/context.hpp"
#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;
  // e.g. {} for plain sgd, {"momentum"} for sgd with momentum, {"m", "v"} for adam.
  virtual std::vector<std::string> slot_names() const = 0;
  // Initial value of slot i (adagrad's accumulator starts at initial_accumulator_value).
  virtual float slot_initial_value(size_t /*slot*/) const { return 0.0f; }
  // step: 1-based index of this update (adam's bias correction uses it).
  // REQUIRES: grad and every slot have var's shape; slots.size() == slot_names().size().
  // Every tensor lives on ctx.device.
  virtual void apply(int64_t step, float lr, Tensor& var, const Tensor& grad, std::span<Tensor> slots,
                     const ops::Context& ctx = ops::host_context()) const = 0;
};

Result<std::unique_ptr<Optimizer>> make_optimizer(const OptimizerSpec& spec);

// The learning rate for the update made at global step `step` (0-based: the
// first update uses step 0): linear warmup from 0 over schedule.warmup_steps,
// then the schedule evaluated at (step - warmup_steps). Exactly, with W =
// warmup_steps and sched(s) the schedule below:
//   step < W:  sched(0) * (step + 1) / W   (the first update is not 0; step W-1 reaches sched(0))
//   otherwise: sched(step - W)
// sched(s), TensorFlow's formulas with lr = learning_rate:
//   constant:           lr
//   exponential_decay:  lr * decay_rate^(s / decay_steps), exponent floored when staircase
//   piecewise_constant: values[0] for s <= boundaries[0], values[i] for
//                       boundaries[i-1] < s <= boundaries[i], values.back() after
//                       (absolute rates: learning_rate is not used)
//   cosine_decay:       lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(s, decay_steps) / decay_steps)) + alpha)
// REQUIRES: make_optimizer(spec) succeeded (it checks the schedule's options).
double learning_rate_at(const OptimizerSpec& spec, int64_t step);

// Scales every gradient by clip_norm / max(global_norm, clip_norm) (TensorFlow's
// tf.clip_by_global_norm). Returns the global norm before clipping.
// The gradients live on ctx.device.
double clip_by_global_norm(std::span<Tensor*> grads, double clip_norm, const ops::Context& ctx = ops::host_context());
double global_norm(std::span<Tensor* const> grads, const ops::Context& ctx = ops::host_context());

}  // namespace dtrain

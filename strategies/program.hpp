// What a strategy runs: the model, the loss, the metrics and the optimizer of
// one job, built once and shared (read-only) by every replica.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config_schema/job_spec.hpp"
#include "engine/losses/loss.hpp"
#include "engine/metrics/metric.hpp"
#include "engine/model/model.hpp"
#include "engine/ops/context.hpp"
#include "engine/optim/loss_scale.hpp"
#include "engine/optim/optimizer.hpp"

namespace dtrain {

struct Program {
  std::unique_ptr<Model> model;
  std::unique_ptr<Loss> loss;
  std::vector<std::unique_ptr<Metric>> metrics;
  std::vector<size_t> metric_offsets;  // metric i's state starts here; back() = total size
  OptimizerSpec optimizer_spec;
  std::unique_ptr<Optimizer> optimizer;
  uint64_t seed = 0;
  bool loss_sum = false;  // strategy.loss_reduction: sum (else mean over the global batch)
  DType compute = DType::f32;  // precision.compute: the dense/conv compute type
  // run.accumulation_steps: a replica's shard runs as this many micro-batches
  // (run_replica_accumulated), their gradients summed into one update.
  int64_t accumulation_steps = 1;

  // The compute context of a replica on `device` ("cpu:0", "debug:1", ...).
  // REQUIRES: the device name was checked (make_strategy does).
  ops::Context context_on(const std::string& device) const;

  // Mixed precision's step guard (precision.compute other than float32):
  // the loss scale (dynamic for float16) and the skip of non-finite steps.
  // Written by the strategy between steps only; read by replicas in a step.
  LossScale loss_scale{false};
  bool mixed() const { return compute != DType::f32; }

  // Factor on d(sum of per-example losses): 1 / global batch for mean, 1 for
  // sum, times the loss scale. The same for every strategy, so a split batch
  // weighs every example exactly as one_device does.
  float grad_scale(int64_t global_batch) const {
    const double s = loss_scale.scale();
    return static_cast<float>(loss_sum ? s : s / static_cast<double>(global_batch));
  }

  // run.profile's window: where the replicas record their phases (forward,
  // loss, backward, all-reduce, optimizer). Set by the estimator around a
  // train_step inside the window, null otherwise.
  Profiler* profiler = nullptr;

  size_t metric_state_size() const { return metric_offsets.empty() ? 0 : metric_offsets.back(); }
  std::span<double> metric_state(std::vector<double>& all, size_t i) const {
    return {all.data() + metric_offsets[i], metric_offsets[i + 1] - metric_offsets[i]};
  }
};

// Builds the program of a job: errors name the job file place (kConfig).
Result<Program> make_program(const JobSpec& job);

}  // namespace dtrain

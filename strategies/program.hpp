// What a strategy runs: the model, the loss, the metrics and the optimizer of
// one job, built once and shared (read-only) by every replica.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/device.hpp"
#include "engine/base/job_spec.hpp"
#include "engine/losses/loss.hpp"
#include "engine/metrics/metric.hpp"
#include "engine/model/model.hpp"
#include "engine/ops/context.hpp"
#include "engine/optim/loss_scale.hpp"
#include "engine/optim/optimizer.hpp"
#include "strategies/class_weights.hpp"

namespace dtrain {

// One output of the model with its loss and metrics (model.outputs' entries,
// in the order of Model::outputs(); one for the model.loss shorthand).
struct ProgramOutput {
  std::string name;  // the summary prefix (loss/NAME, NAME_accuracy); "" for the shorthand
  std::unique_ptr<Loss> loss;
  float weight = 1.0f;   // the total loss is the sum of weight x loss
  std::string labels;    // the data's name of its labels ("" for the shorthand: the source's labels)
  std::string where;     // "job.yaml:9:5" of its key ("" for the shorthand)
  // Its metrics: Program::metrics[first_metric, first_metric + num_metrics).
  // With model.outputs the first is a mean_loss tagged loss/NAME.
  size_t first_metric = 0, num_metrics = 0;
  // model.class_weight (or the output's): training only. Balanced weights
  // are filled from the training labels before the first step.
  ClassWeights class_weights{};
};

struct Program {
  std::unique_ptr<Model> model;
  // At least one; outputs[0].loss is the loss of a one-output model.
  std::vector<ProgramOutput> outputs;
  std::vector<std::unique_ptr<Metric>> metrics;  // every output's, in output order
  std::vector<std::string> metric_tags;          // metrics[i]'s summary tag ("accuracy", "class_accuracy")
  std::vector<size_t> metric_offsets;  // metric i's state starts here; back() = total size
  OptimizerSpec optimizer_spec;
  std::unique_ptr<Optimizer> optimizer;
  uint64_t seed = 0;
  bool loss_sum = false;  // strategy.loss_reduction: sum (else mean over the global batch)
  DType compute = DType::f32;  // precision.compute: the dense/conv compute type
  bool tf32 = false;           // precision.matmul: tf32 (GPU float32 matmuls on TF32 tensor cores)
  bool deterministic = false;  // run.deterministic (GPU convolutions take deterministic cuDNN algorithms)
  // run.accumulation_steps: a replica's shard runs as this many micro-batches
  // (run_replica_accumulated), their gradients summed into one update.
  int64_t accumulation_steps = 1;
  // run.micro_batch_rows (0: off): a replica's shard runs as micro-batches of
  // this many rows, their gradients added in tree_sum's order, and the
  // strategies add shards and workers in that order too.
  int64_t micro_batch_rows = 0;

  // The compute context of a replica on `device` (cpu:0, debug:1, ...).
  ops::Context context_on(const Device& device) const;

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

// ("name", host tensor) of each trainable variable's entry of `per_variable`
// (one tensor per variable, Model::variables() order: values or gradients);
// a host tensor is shared, not copied.
std::vector<std::pair<std::string, Tensor>> trainable_on_host(const Program& program,
                                                              std::span<const Tensor> per_variable);

// Builds the program of a job: errors name the job file place (kConfig).
Result<Program> make_program(const JobSpec& job);

}  // namespace dtrain

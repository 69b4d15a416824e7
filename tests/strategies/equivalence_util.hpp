// Helpers for the strategy-equivalence tests: job text for a small model on
// synthetic 8x8x1 images, a fixed list of batches fed to every strategy, a
// training run through the public Strategy interface, and relative
// differences between logical states.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "datasets/dataset.hpp"
#include "strategies/strategy.hpp"

namespace dtrain::testing {

// model.layers of the two models under test (input [8, 8, 1], 10 classes).
extern const char* const kMlpLayers;  // flatten, dense 32 relu, dropout 0.25, dense 10
extern const char* const kCnnLayers;  // conv2d 8 3x3 same relu, max_pool2d 2, dropout 0.25, flatten, dense 10
// A graph: two convolutions joined by a residual add, pooled, flattened and
// concatenated with the flattened input, dropout 0.25, dense 10.
extern const char* const kResidualLayers;
// A residual graph with two synchronised batch norms (sync: true).
extern const char* const kSyncBnLayers;
// optimizer sections.
extern const char* const kSgdMomentum;  // sgd, lr 0.05, momentum 0.9
extern const char* const kAdam;         // adam, lr 0.01
extern const char* const kPlainSgd;     // sgd, lr 0.05, no momentum

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// A job: `layers` (YAML flow list items, one per line), the optimizer
// section, strategy `type` on <kind>:0 .. <kind>:<devices-1> (kind cpu or
// debug) with `reduction`, precision.compute `compute`, metrics [accuracy, mean_loss], synthetic train
// data. REQUIREs it loads.
JobSpec equivalence_job(const char* layers, const char* optimizer, const std::string& type, int devices,
                        const std::string& reduction, const std::string& device_kind = "cpu",
                        const std::string& compute = "float32");

// `count` batches of `global_batch` examples from the job's data.train
// (features (B, 8, 8, 1), labels (B)), deep copies. REQUIREs success.
std::vector<Batch> take_batches(const JobSpec& job, int64_t global_batch, int count);

// A program and its strategy built from `job`, variables created. The
// strategy refers to the program, so both live here (REQUIREs success).
struct StrategyUnderTest {
  Program program;
  std::unique_ptr<Strategy> strategy;
};
std::unique_ptr<StrategyUnderTest> build_strategy(const JobSpec& job);

// Trains on each batch in turn (step i uses learning_rate_at(optimizer, i)
// times lr_factor). `initial` and `state` are deep copies of logical_state()
// before and after; outputs are the StepOutputs, one per batch; predictions
// are predict_step(probe) after training, which runs every replica's own copy
// of the variables (logical_state() shows only one).
struct TrainRun {
  NamedTensors initial, state;
  std::vector<StepOutput> outputs;
  Tensor predictions;
};
TrainRun train_run(const JobSpec& job, const std::vector<Batch>& batches, const Batch& probe, double lr_factor = 1.0);

// ||a - b|| / max(||b||, 1e-12) in double; a and b have the same numel.
double rel_diff(const std::vector<double>& a, const std::vector<double>& b);
double rel_diff(const Tensor& a, const Tensor& b);

// The tensor of `a` farthest (relative) from its namesake in `ref`.
// names_match is false when the two lists differ in names, order or shapes.
struct StateDiff {
  bool names_match = true;
  std::string worst_name;
  double worst = 0;
};
StateDiff compare_states(const NamedTensors& a, const NamedTensors& ref);

// Worst relative differences of two runs' StepOutputs (loss sums, metric
// states) and whether every step's example count matches exactly.
struct OutputDiff {
  double loss = 0, metrics = 0;
  bool examples_match = true;
};
OutputDiff compare_outputs(const std::vector<StepOutput>& a, const std::vector<StepOutput>& ref);

}  // namespace dtrain::testing

// The model's outputs as the estimator sees them: which labels the data must
// give for each, checks of their shapes and values, and the summary scalars
// of each output's loss and metrics (model.outputs, or the one-output shorthand).
#pragma once

#include <functional>

#include <string>
#include <utility>
#include <vector>

#include "datasets/dataset.hpp"
#include "datasets/pipeline.hpp"
#include "engine/base/status.hpp"
#include "strategies/program.hpp"
#include "strategies/strategy.hpp"

namespace dtrain {

// The options' output_names and label_names for `program` (left empty for a
// model of one output, whose labels are the source's usual labels).
void set_model_outputs(InputOptions& options, const Program& program);

// Each output's labels (input.label_shape(), then extra_label_shapes()) fit
// its output and loss; else a kConfig error naming both shapes:
// "job.yaml:14:5: model.outputs.box: mean_squared_error: labels [3] do not fit
// model output [4]: ..." (the one-output form: "<job>: model.loss: ...").
Status check_label_shapes(const Input& input, const Program& program, const std::string& job_path);

// Class ids in range for every sparse_softmax_cross_entropy output of a
// batch (engine/losses/label_check.hpp); the error names the output, and
// the label by `label_place` (of the output's index and the row in the
// batch) when given.
Status check_batch_labels(const Batch& batch, const Program& program,
                          const std::function<std::string(size_t output, int64_t row)>& label_place = nullptr);

// The scalars of a summed StepOutput: "loss" (the total: the sum of weight x
// each output's mean loss), then every metric by its tag ("accuracy";
// with model.outputs "loss/NAME", "NAME_accuracy", ...).
std::vector<std::pair<std::string, double>> output_scalars(const Program& program, const StepOutput& sums);

}  // namespace dtrain

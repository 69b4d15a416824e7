// Example weights of a training step: model.class_weight (Keras'
// class_weight, training only) times data.*.weight (Keras' sample_weight,
// training and evaluation). The loss multiplies each example's loss and
// gradient by its weight (engine/losses/loss.hpp), the metrics each
// example's count (engine/metrics/metric.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/base/status.hpp"
#include "engine/losses/loss_kind.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

// One output's class weights, resolved against its loss and shape.
struct ClassWeights {
  LossKind loss = LossKind::kSparseSoftmaxCrossEntropy;
  int64_t classes = 0;             // of the output (2 for one sigmoid unit)
  bool balanced = false;           // per_class comes from the training labels (balanced_class_weights)
  std::vector<float> per_class;    // one per class; empty: no class weights
  std::string where;               // "job.yaml:12:3" of class_weight
  bool active() const { return !per_class.empty(); }
};

// Checks that `spec` fits an output of loss `loss` and shape `output`
// (without batch) and fills its explicit weights; `at` starts errors
// ("job.yaml:12:3: model.class_weight"). Balanced weights stay empty until
// set_balanced(). A kConfig error for a loss or output that has no class per
// example (mean_squared_error, sequences, multi-label sigmoid) or a class id
// outside the output.
Result<ClassWeights> make_class_weights(const ClassWeightSpec& spec, LossKind loss, const Shape& output,
                                        const std::string& at);

// The class of each of the B examples of `labels` (B, label shape...), as
// the weights read it: the label (sparse), the target's first largest entry
// (softmax), target > 0.5 (one sigmoid unit). -1 for a label outside
// [0, classes) (the label check reports it; such an example weighs 1).
std::vector<int64_t> example_classes(const ClassWeights& w, const Tensor& labels);

// scikit-learn's compute_class_weight("balanced", classes=np.unique(y), y):
// n / (k x count_c) for the k classes that occur; 1 for a class that does not.
std::vector<float> balanced_class_weights(const std::vector<int64_t>& counts);

// The (B) weights of a shard: class weights of its labels (when `training`
// and active) times `data_weights` ((B) or empty); an empty tensor when
// neither applies (every example weighs 1).
Tensor example_weights(const ClassWeights& w, const Tensor& labels, const Tensor& data_weights, bool training);

// "class 0: 0.37, class 1: 4.17, ..." for the log.
std::string describe_class_weights(const std::vector<float>& per_class);

}  // namespace dtrain

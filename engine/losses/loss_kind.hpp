// The four losses as an enum, shared by make_loss and make_metric (a metric
// reads logits according to the loss: class ids, sigmoid, raw values).
#pragma once

#include <memory>
#include <string>

#include "engine/losses/loss.hpp"
#include "engine/base/status.hpp"

namespace dtrain {

enum class LossKind { kSparseSoftmaxCrossEntropy, kSoftmaxCrossEntropy, kSigmoidCrossEntropy, kMeanSquaredError };

// Unknown name: kConfig error `loss "x" is not one of sparse_softmax_cross_entropy,
// softmax_cross_entropy, sigmoid_cross_entropy, mean_squared_error (did you mean "..."?)`.
Result<LossKind> parse_loss_kind(const std::string& name);
const char* loss_kind_name(LossKind kind);

// One constructor per loss file; make_loss's table lists them.
std::unique_ptr<Loss> new_sparse_softmax_cross_entropy();
std::unique_ptr<Loss> new_softmax_cross_entropy();
std::unique_ptr<Loss> new_sigmoid_cross_entropy();
std::unique_ptr<Loss> new_mean_squared_error();

}  // namespace dtrain

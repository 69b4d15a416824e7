// Internal to engine/metrics/: one constructor per metric file (make_metric's
// table lists them) and the row helpers they share.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/losses/loss_kind.hpp"
#include "engine/metrics/metric.hpp"

namespace dtrain {

// Each returns a kConfig error when the metric is not defined for the loss.
Result<std::unique_ptr<Metric>> new_accuracy(LossKind loss);
Result<std::unique_ptr<Metric>> new_mean_loss(LossKind loss);
Result<std::unique_ptr<Metric>> new_precision(LossKind loss);
Result<std::unique_ptr<Metric>> new_recall(LossKind loss);
Result<std::unique_ptr<Metric>> new_mean_absolute_error(LossKind loss);

// Index of the first largest of x[0..c) (tf.argmax breaks ties the same way).
inline int64_t argmax_row(const float* x, int64_t c) {
  int64_t best = 0;
  for (int64_t j = 1; j < c; ++j) {
    if (x[j] > x[best]) best = j;
  }
  return best;
}

// Elements per example.
inline int64_t per_example(const Tensor& logits) {
  return logits.dim(0) == 0 ? 0 : logits.numel() / logits.dim(0);
}

// Number of classes of softmax logits (B, P..., C): the last dimension.
inline int64_t classes(const Tensor& logits) { return logits.rank() < 2 ? 1 : logits.dim(-1); }

// The weight of element `k` of a batch whose examples have `per` elements
// each: weights[k / per], or 1 without weights.
inline double element_weight(const float* weights, int64_t k, int64_t per) {
  return weights != nullptr ? static_cast<double>(weights[k / per]) : 1.0;
}

// a / b, or 0 when b == 0 (Keras' div_no_nan for an empty metric).
inline double ratio_or_zero(double a, double b) { return b == 0.0 ? 0.0 : a / b; }

}  // namespace dtrain

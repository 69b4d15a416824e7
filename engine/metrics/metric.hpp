// Evaluation metrics. A metric's state is a vector of doubles (numerators and
// denominators, or per-class counts) that is reduced across replicas and
// batches by elementwise SUM; result() turns the summed state into a value.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

class Metric {
 public:
  virtual ~Metric() = default;
  virtual std::string name() const = 0;  // the summary tag, e.g. "accuracy"
  // Number of doubles of state for a model with this output shape (no batch).
  virtual size_t state_size(const Shape& output) const = 0;
  // logits: (B, out...) model output; labels as for the loss; loss_sum: the
  // loss summed over these B examples. Adds this batch into `state`.
  // `weights`, when not null, holds B example weights (host): every decision
  // or element of example i counts w[i] times (Keras' sample_weight), so a
  // ratio is sum(w * hit) / sum(w). mean_loss takes the (already weighted)
  // loss_sum over B, as the training loss is reported.
  virtual void update(const Tensor& logits, const Tensor& labels, double loss_sum, std::span<double> state,
                      const float* weights = nullptr) const = 0;
  virtual double result(std::span<const double> state) const = 0;
};

// accuracy | mean_loss | precision | recall | mean_absolute_error.
// loss_name decides how logits are read (class ids via argmax for softmax
// losses, threshold 0.5 on sigmoid for sigmoid_cross_entropy, raw values for
// mean_squared_error). Errors name the metric and, for a typo, a suggestion.
Result<std::unique_ptr<Metric>> make_metric(const std::string& name, const std::string& loss_name);

}  // namespace dtrain

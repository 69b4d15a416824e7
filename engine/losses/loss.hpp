// Losses. A loss reports the SUM over the batch of per-example losses so a
// strategy can split a batch and still weight every example exactly; the
// caller passes grad_scale (1 / global batch for a mean) into the gradient.
#pragma once

#include <memory>
#include <string>

#include "engine/ops/context.hpp"
#include "engine/base/status.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

class Loss {
 public:
  virtual ~Loss() = default;
  virtual std::string name() const = 0;
  // Shapes without the batch dimension. Returns a user-facing error such as
  // "sparse_softmax_cross_entropy: labels [3] do not fit model output [4, 5]: ...".
  virtual Status check_shapes(const Shape& output, const Shape& label) const = 0;
  // logits: (B, out...) model output; labels: (B, out... without the last
  // (classes) dimension) class ids (as floats) for the sparse loss, else
  // (B, out...) targets. Returns sum over the B examples of the per-example
  // loss (per-example = mean over non-batch elements for
  // sigmoid_cross_entropy and mean_squared_error, as Keras, and mean over
  // positions for sparse_softmax_cross_entropy on (B, T..., C)). When dlogits is
  // non-null it is (re)allocated to logits' shape and set to
  // grad_scale * d(sum)/d(logits).
  // Every tensor lives on ctx.device; dlogits is (re)allocated there. The
  // sum comes back to the host (a counted copy on a non-host device).
  // `weights`, when not null, is (B) float32 example weights on ctx.device:
  // each example's loss and gradient are multiplied by its weight (the sum
  // is then the weighted sum; grad_scale still divides by the global batch,
  // as Keras' sample_weight with its sum-over-batch-size reduction).
  virtual double forward_backward(const Tensor& logits, const Tensor& labels, Tensor* dlogits, float grad_scale,
                                  const ops::Context& ctx = ops::host_context(),
                                  const Tensor* weights = nullptr) const = 0;
  // Host tensors. Model output -> predictions: softmax probabilities (softmax losses),
  // sigmoid probabilities (sigmoid_cross_entropy), identity (mean_squared_error).
  virtual Tensor predictions(const Tensor& logits) const = 0;
};

// sparse_softmax_cross_entropy | softmax_cross_entropy | sigmoid_cross_entropy | mean_squared_error
Result<std::unique_ptr<Loss>> make_loss(const std::string& name);

// For the loss implementations: makes *dlogits (when non-null) a float32
// tensor of logits' shape on logits' device; counts the loss sum's read-back.
void prepare_dlogits(const Tensor& logits, Tensor* dlogits);
void count_loss_read(const ops::Context& ctx);

}  // namespace dtrain

// Batch normalization over every axis but the last (channels-last), Keras
// semantics.
//   x, y: (B, ..., C)   gamma, beta, moving_mean, moving_variance: (C)
// Training: y = gamma * (x - mean) / sqrt(var + eps) + beta with the batch
// mean and biased batch variance over all B*... rows, and (in place in the
// params span) moving = momentum * moving + (1 - momentum) * batch statistic.
// Inference: the moving statistics are used and nothing is updated.
// cache.saved = {mean (C), inv_std (C)} as used by forward; cache.ints[0] = training.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

class BatchNorm : public Layer {
 public:
  // sync: in training, statistics over the global batch (every replica and
  // worker, through ForwardContext::cross_replica) instead of this replica's.
  BatchNorm(float momentum, float epsilon, bool sync = false) : momentum_(momentum), epsilon_(epsilon), sync_(sync) {}

  std::string type() const override { return "batch_norm"; }
  std::vector<std::string_view> ops() const override { return {"batch_norm"}; }
  // REQUIRES: rank >= 1 input; C = its last dimension.
  Result<Shape> build(const Shape& input) override;
  float epsilon() const { return epsilon_; }
  // gamma (ones), beta (zeros) trainable; moving_mean (zeros), moving_variance
  // (ones) not trainable.
  std::vector<ParamSpec> params() const override;
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  // Writes dgamma, dbeta (grads[0], grads[1]) and dx; in training mode dx is
  // the full gradient through the batch statistics.
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  bool backward_reads_output() const override { return false; }  // x, mean and inv_std

 private:
  float momentum_, epsilon_;
  bool sync_ = false;
  int64_t channels_ = 0;
};

// A batch_norm layer's options in the job (type: batch_norm).
struct BatchNormSpec {
  float momentum = 0.99f;  // of the moving averages
  float epsilon = 1e-3f;
  bool sync = false;       // statistics over the global batch (every replica and worker)
};
std::span<const Field> batch_norm_fields();
Result<std::unique_ptr<Layer>> make_batch_norm(const LayerSpec& spec);
// True for a batch_norm layer with sync: true.
bool is_synchronised_batch_norm(const LayerSpec& spec);

}  // namespace dtrain

// Layer normalization over the last axis, Keras LayerNormalization(axis=-1)
// semantics: each row of C values is normalised by its own mean and biased
// variance, then scaled and shifted per channel.
//   x, y: (B, ..., C)   gamma (ones), beta (zeros): (C)
//   y = gamma * (x - mean) / sqrt(var + epsilon) + beta
// gamma exists only with scale, beta only with center (Keras); the params
// are ordered gamma, beta. Float32 under every compute type.
// cache.saved = {mean (rows), inv_std (rows)} with rows = B*...
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

class LayerNorm : public Layer {
 public:
  LayerNorm(float epsilon, bool center, bool scale) : epsilon_(epsilon), center_(center), scale_(scale) {}

  std::string type() const override { return "layer_norm"; }
  std::vector<std::string_view> ops() const override { return {"layer_norm"}; }
  // REQUIRES: rank >= 1 input; C = its last dimension.
  Result<Shape> build(const Shape& input) override;
  float epsilon() const { return epsilon_; }
  bool center() const { return center_; }
  bool scale() const { return scale_; }
  // gamma (C, ones) when scale; beta (C, zeros) when center; both trainable.
  std::vector<ParamSpec> params() const override;
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  // dgamma = sum over rows of dy * xhat, dbeta = sum of dy;
  // dx = inv_std * (g - mean(g) - xhat * mean(g * xhat)) per row, g = dy * gamma.
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  bool backward_reads_output() const override { return false; }

 private:
  float epsilon_;
  bool center_, scale_;
  int64_t channels_ = 0;
};

// A layer_norm layer's options in the job (type: layer_norm).
struct LayerNormSpec {
  float epsilon = 1e-3f;
  bool center = true;  // add beta
  bool scale = true;   // multiply by gamma
};
std::span<const Field> layer_norm_fields();
Result<std::unique_ptr<Layer>> make_layer_norm(const LayerSpec& spec);

}  // namespace dtrain

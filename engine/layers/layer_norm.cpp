// Layer normalization: the layer's shapes and variables; its math is the op
// ops::layer_norm_forward / _backward (engine/ops/layer_ops.hpp, CPU kernel in
// engine/kernels/layer_norm.cpp).
#include "engine/layers/layer_norm.hpp"

#include <fmt/format.h>

#include <cassert>
#include <vector>

#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/layer_ops.hpp"

namespace dtrain {

Result<Shape> LayerNorm::build(const Shape& input) {
  if (input.empty() || input.back() <= 0) {
    return config_error(
        fmt::format("layer_norm expects an input with a feature (last) dimension; got shape {}", shape_str(input)));
  }
  channels_ = input.back();
  return input;
}

std::vector<ParamSpec> LayerNorm::params() const {
  const Shape c{channels_};
  std::vector<ParamSpec> p;
  if (scale_) p.push_back({"gamma", c, {"ones", 0.0f}, true});
  if (center_) p.push_back({"beta", c, {"zeros", 0.0f}, true});
  return p;
}

void LayerNorm::forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
                        LayerCache& cache) const {
  const int64_t c = channels_;
  assert(x.rank() >= 2 && x.dim(-1) == c);
  const int64_t rows = x.numel() / c;
  const Tensor* gamma = scale_ ? &params[0] : nullptr;
  const Tensor* beta = center_ ? &params[scale_ ? 1 : 0] : nullptr;
  cache.saved.resize(2);
  Tensor& mean = cache.saved[0];
  Tensor& inv_std = cache.saved[1];
  prepare_output(mean, {rows}, {&x});
  prepare_output(inv_std, {rows}, {&x});
  prepare_output(y, x.shape(), {&x, gamma, beta});
  ops::layer_norm_forward(*ctx.ops, x, gamma, beta, epsilon_, y, mean, inv_std);
}

void LayerNorm::backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                         const Tensor& x, const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache& cache) const {
  const int64_t c = channels_;
  assert(dy.numel() == x.numel() && cache.saved.size() == 2);
  const Tensor* gamma = scale_ ? &params[0] : nullptr;
  Tensor* dgamma = scale_ ? &grads[0] : nullptr;
  Tensor* dbeta = center_ ? &grads[scale_ ? 1 : 0] : nullptr;
  if (dgamma) prepare_output(*dgamma, {c}, {&x, &dy});
  if (dbeta) prepare_output(*dbeta, {c}, {&x, &dy});
  if (dx != nullptr) prepare_output(*dx, x.shape(), {&x});
  ops::layer_norm_backward(*ctx.ops, x, dy, gamma, cache.saved[0], cache.saved[1], dgamma, dbeta, dx);
}

std::span<const Field> layer_norm_fields() {
  static const Field kFields[] = {
      field<&LayerNormSpec::epsilon>("epsilon", "Added to the variance for numerical stability.").above(0),
      field<&LayerNormSpec::center>("center", "Whether to add the learned offset beta (initialized to zeros)."),
      field<&LayerNormSpec::scale>("scale", "Whether to multiply by the learned scale gamma (initialized to ones)."),
  };
  return kFields;
}

Result<std::unique_ptr<Layer>> make_layer_norm(const LayerSpec& spec) {
  const auto& s = layer_options<LayerNormSpec>(spec);
  if (!(s.epsilon > 0.0f)) return config_error(fmt::format("layer_norm: epsilon must be > 0; got {}", s.epsilon));
  return std::unique_ptr<Layer>(std::make_unique<LayerNorm>(s.epsilon, s.center, s.scale));
}

}  // namespace dtrain

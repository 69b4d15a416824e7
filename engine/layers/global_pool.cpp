// Global pooling: the layer's shapes; its math is the op
// ops::global_pool_forward / _backward (engine/ops/layer_ops.hpp, CPU kernel in
// engine/kernels/global_pool.cpp).
#include "engine/layers/global_pool.hpp"

#include <fmt/format.h>

#include <cassert>

#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/layer_ops.hpp"

namespace dtrain {

std::string GlobalPool::type() const {
  switch (kind_) {
    case GlobalPoolKind::kAvg2d: return "global_avg_pool2d";
    case GlobalPoolKind::kMax2d: return "global_max_pool2d";
    case GlobalPoolKind::kAvg1d: return "global_avg_pool1d";
  }
  return "?";
}

Result<Shape> GlobalPool::build(const Shape& input) {
  const bool two_d = kind_ != GlobalPoolKind::kAvg1d;
  const size_t rank = two_d ? 3 : 2;
  if (input.size() != rank) {
    return config_error(two_d ? fmt::format("{} expects an image input (height, width, channels); got shape {}; "
                                            "add {{type: reshape, target_shape: [height, width, channels]}} before it",
                                            type(), shape_str(input))
                              : fmt::format("{} expects a sequence input (steps, channels); got shape {}; "
                                            "add {{type: reshape, target_shape: [steps, channels]}} before it",
                                            type(), shape_str(input)));
  }
  positions_ = two_d ? input[0] * input[1] : input[0];
  channels_ = input.back();
  return Shape{channels_};
}

void GlobalPool::forward(const ForwardContext& ctx, std::span<Tensor>, const Tensor& x, Tensor& y,
                         LayerCache&) const {
  const int64_t batch = x.dim(0);
  assert(x.numel() == batch * positions_ * channels_);
  prepare_output(y, {batch, channels_}, {&x});
  ops::global_pool_forward(*ctx.ops, x, positions_, kind_ == GlobalPoolKind::kMax2d, y);
}

void GlobalPool::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>, const Tensor& x,
                          const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache&) const {
  if (dx == nullptr) return;
  assert(dy.numel() == x.dim(0) * channels_);
  prepare_output(*dx, x.shape(), {&x, &dy});
  ops::global_pool_backward(*ctx.ops, x, dy, positions_, kind_ == GlobalPoolKind::kMax2d, *dx);
}

Result<std::unique_ptr<Layer>> make_global_avg_pool2d(const LayerSpec&) {
  return std::unique_ptr<Layer>(std::make_unique<GlobalPool>(GlobalPoolKind::kAvg2d));
}
Result<std::unique_ptr<Layer>> make_global_max_pool2d(const LayerSpec&) {
  return std::unique_ptr<Layer>(std::make_unique<GlobalPool>(GlobalPoolKind::kMax2d));
}
Result<std::unique_ptr<Layer>> make_global_avg_pool1d(const LayerSpec&) {
  return std::unique_ptr<Layer>(std::make_unique<GlobalPool>(GlobalPoolKind::kAvg1d));
}

}  // namespace dtrain

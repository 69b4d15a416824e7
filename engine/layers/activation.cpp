// Activations as ops (ops::relu_forward, softmax_forward, eltwise_forward and
// their backwards): relu and softmax plain loops, gelu/tanh/sigmoid oneDNN's
// eltwise kernels; on a GPU the cuda backend's kernels (all but gelu, which
// the support table refuses).
#include "engine/layers/activation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "engine/kernels/eltwise.hpp"
#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/layer_ops.hpp"

namespace dtrain {

namespace {

kernels::EltwiseKind eltwise_of(ActivationKind k) {
  switch (k) {
    case ActivationKind::kGelu: return kernels::EltwiseKind::kGelu;
    case ActivationKind::kTanh: return kernels::EltwiseKind::kTanh;
    default: return kernels::EltwiseKind::kSigmoid;
  }
}

}  // namespace

const std::vector<std::string>& Activation::names() {
  static const std::vector<std::string> n{"relu", "gelu", "tanh", "sigmoid", "softmax"};
  return n;
}

Result<ActivationKind> Activation::parse(const std::string& name) {
  const auto& n = names();
  const auto it = std::find(n.begin(), n.end(), name);
  if (it == n.end()) {
    return config_error(fmt::format("unknown activation \"{}\"; known: {}{}", name, join(n), did_you_mean(name, n)));
  }
  return static_cast<ActivationKind>(it - n.begin());
}

const std::string& Activation::function() const { return names()[static_cast<size_t>(kind_)]; }

Result<Shape> Activation::build(const Shape& input) {
  if (kind_ == ActivationKind::kSoftmax) {
    if (input.empty() || input.back() <= 0) {
      return config_error(fmt::format("softmax needs a non-empty last dimension; got shape {}", shape_str(input)));
    }
    last_dim_ = input.back();
  }
  return input;
}

void Activation::forward(const ForwardContext& ctx, std::span<Tensor>, const Tensor& x, Tensor& y,
                         LayerCache&) const {
  prepare_output(y, x.shape(), {&x});
  switch (kind_) {
    case ActivationKind::kRelu: return ops::relu_forward(*ctx.ops, x, y);
    case ActivationKind::kSoftmax:
      assert(x.dim(-1) == last_dim_);
      return ops::softmax_forward(*ctx.ops, x, y);
    default: return ops::eltwise_forward(*ctx.ops, eltwise_of(kind_), x, y);
  }
}

void Activation::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>, const Tensor& x,
                          const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache&) const {
  if (dx == nullptr) return;
  assert(dy.numel() == x.numel() && y.numel() == x.numel());
  // dx may share storage with dy (every kernel is elementwise or reads a row
  // of dy before writing it), but not with x or y.
  prepare_output(*dx, x.shape(), {&x, &y});
  switch (kind_) {
    case ActivationKind::kRelu: return ops::relu_backward(*ctx.ops, y, dy, *dx);
    case ActivationKind::kSoftmax: return ops::softmax_backward(*ctx.ops, y, dy, *dx);
    case ActivationKind::kGelu: return ops::eltwise_backward(*ctx.ops, kernels::EltwiseKind::kGelu, x, dy, *dx);
    default: return ops::eltwise_backward(*ctx.ops, eltwise_of(kind_), y, dy, *dx);
  }
}

std::vector<std::string_view> Activation::ops() const {
  // gelu has no GPU kernel yet: its own op name lets the support table say so.
  if (kind_ == ActivationKind::kGelu) return {"activation", "gelu"};
  return {"activation"};
}

std::span<const Field> activation_fields() {
  static const Field kFields[] = {
      activation_field("The function: relu, gelu, tanh, sigmoid or softmax (over the last dimension).", true),
  };
  return kFields;
}

Result<std::unique_ptr<Layer>> make_activation_layer(const LayerSpec& spec) {
  if (spec.activation.empty()) {
    return config_error(fmt::format("activation: the activation field is required (one of {})",
                                    join(Activation::names())));
  }
  auto kind = Activation::parse(spec.activation);
  if (!kind) return kind.error();
  return std::unique_ptr<Layer>(std::make_unique<Activation>(*kind));
}

}  // namespace dtrain

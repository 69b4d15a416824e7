// Elementwise activation layers: relu, gelu (exact erf form), tanh, sigmoid,
// and softmax over the last dimension (numerically stable). No params.
//   x, y: (B, ...); softmax needs at least one feature dimension.
// Backward reads y (relu, tanh, sigmoid, softmax) or x (gelu); no cache.
#pragma once

#include <memory>
#include <span>

#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

enum class ActivationKind { kRelu, kGelu, kTanh, kSigmoid, kSoftmax };

class Activation : public Layer {
 public:
  explicit Activation(ActivationKind kind) : kind_(kind) {}

  // Names accepted by parse(), in documentation order.
  static const std::vector<std::string>& names();
  // "relu" -> kRelu, ...; an unknown name is a config error with a suggestion.
  static Result<ActivationKind> parse(const std::string& name);

  std::string type() const override { return "activation"; }
  // "activation", plus "gelu" for gelu (no GPU kernel yet).
  std::vector<std::string_view> ops() const override;
  const std::string& function() const;  // "relu", ...
  Result<Shape> build(const Shape& input) override;
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  // relu, tanh, sigmoid and softmax differentiate through y, gelu through x.
  bool backward_reads_inputs() const override { return kind_ == ActivationKind::kGelu; }
  bool backward_reads_output() const override { return kind_ != ActivationKind::kGelu; }

 private:
  ActivationKind kind_;
  int64_t last_dim_ = 1;  // softmax: the input's last dimension
};

// The activation layer's one option: its function (LayerSpec::activation).
std::span<const Field> activation_fields();
Result<std::unique_ptr<Layer>> make_activation_layer(const LayerSpec& spec);

}  // namespace dtrain

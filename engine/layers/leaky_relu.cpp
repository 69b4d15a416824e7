// LeakyReLU: one elementwise op each way (ops::leaky_relu_forward,
// _backward); its table row's options, factory and ONNX exporter.
#include "engine/layers/leaky_relu.hpp"

#include <fmt/format.h>

#include <cassert>

#include "engine/export/onnx_layers.hpp"
#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/layer_ops.hpp"

namespace dtrain {

void LeakyReLU::forward(const ForwardContext& ctx, std::span<Tensor>, const Tensor& x, Tensor& y, LayerCache&) const {
  prepare_output(y, x.shape(), {&x});
  ops::leaky_relu_forward(*ctx.ops, x, slope_, y);
}

void LeakyReLU::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>, const Tensor& x,
                         const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache&) const {
  if (dx == nullptr) return;
  assert(dy.numel() == x.numel());
  prepare_output(*dx, x.shape(), {&x});  // dx may share dy's storage: each element reads dy[i] before writing
  ops::leaky_relu_backward(*ctx.ops, x, dy, slope_, *dx);
}

std::span<const Field> leaky_relu_fields() {
  static const Field kFields[] = {
      field<&LeakyReluSpec::negative_slope>("negative_slope",
                                            "Slope for inputs <= 0: y = negative_slope * x there (Keras' default 0.3).")
          .min(0),
  };
  return kFields;
}

Result<std::unique_ptr<Layer>> make_leaky_relu(const LayerSpec& spec) {
  const auto& s = layer_options<LeakyReluSpec>(spec);
  if (!(s.negative_slope >= 0.0f)) {
    return config_error(fmt::format("leaky_relu: negative_slope must be >= 0; got {}", s.negative_slope));
  }
  return std::unique_ptr<Layer>(std::make_unique<LeakyReLU>(s.negative_slope));
}

Result<std::string> onnx_export::export_leaky_relu(GraphBuilder& g, const LayerIO& io) {
  const auto& layer = dynamic_cast<const LeakyReLU&>(io.view.layer);
  return g.node("LeakyRelu", {io.inputs[0]}, io.view.name, {Attr::Float("alpha", layer.negative_slope())});
}

}  // namespace dtrain

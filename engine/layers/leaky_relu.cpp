// LeakyReLU: one elementwise loop each way, split over the OpenMP team; its
// table row's options, factory and ONNX exporter.
#include "engine/layers/leaky_relu.hpp"

#include <fmt/format.h>

#include <cassert>

#include "engine/export/onnx_layers.hpp"
#include "engine/kernels/parallel.hpp"
#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain {

void LeakyReLU::forward(const ForwardContext& ctx, std::span<Tensor>, const Tensor& x, Tensor& y, LayerCache&) const {
  prepare_output(y, x.shape(), {&x});
  ops::on_device(*ctx.ops, "leaky_relu", {&x, &y}, [&] {
    const auto* in = static_cast<const float*>(x.raw());
    auto* out = static_cast<float*>(y.raw());
    const int64_t n = x.numel();
    const float slope = slope_;
#pragma omp parallel for simd schedule(static) if (n >= kernels::kParallelElements)
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : slope * in[i];
  });
}

void LeakyReLU::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>, const Tensor& x,
                         const Tensor&, const Tensor& dy, Tensor* dx, const LayerCache&) const {
  if (dx == nullptr) return;
  assert(dy.numel() == x.numel());
  prepare_output(*dx, x.shape(), {&x});  // dx may share dy's storage: each element reads dy[i] before writing
  ops::on_device(*ctx.ops, "leaky_relu_backward", {&x, &dy, dx}, [&] {
    const auto* xp = static_cast<const float*>(x.raw());
    const auto* g = static_cast<const float*>(dy.raw());
    auto* out = static_cast<float*>(dx->raw());
    const int64_t n = x.numel();
    const float slope = slope_;
#pragma omp parallel for simd schedule(static) if (n >= kernels::kParallelElements)
    for (int64_t i = 0; i < n; ++i) {
      const float gi = g[i];
      out[i] = xp[i] > 0.0f ? gi : slope * gi;
    }
  });
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

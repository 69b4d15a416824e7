// Activations: relu and softmax as plain loops split over the OpenMP team,
// gelu/tanh/sigmoid through oneDNN's vectorised eltwise kernels; on a GPU
// the cuda backend's kernels (all but gelu, which the support table refuses).
#include "engine/layers/activation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/kernels/eltwise.hpp"
#include "engine/kernels/parallel.hpp"
#include "engine/kernels/softmax.hpp"
#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain {

namespace {

kernels::EltwiseKind eltwise_of(ActivationKind k) {
  switch (k) {
    case ActivationKind::kGelu: return kernels::EltwiseKind::kGelu;
    case ActivationKind::kTanh: return kernels::EltwiseKind::kTanh;
    default: return kernels::EltwiseKind::kSigmoid;
  }
}

// Row by row (kernels/softmax.hpp), the rows split over the OpenMP team.
void softmax_rows(const float* x, float* y, int64_t rows, int64_t n) {
  kernels::parallel_ranges(rows, n, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) kernels::softmax_row(x + r * n, y + r * n, n, n);
  });
}

// dx = y * (dy - sum(dy * y)) per row.
void softmax_backward_rows(const float* y, const float* dy, float* dx, int64_t rows, int64_t n) {
  kernels::parallel_ranges(rows, n, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) kernels::softmax_backward_row(y + r * n, dy + r * n, dx + r * n, n);
  });
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
  ops::on_device(*ctx.ops, "activation", {&x, &y}, [&] { forward_kernel(x, y); },
                 [&] { forward_gpu(ctx.ops->device, x, y); });
}

void Activation::forward_kernel(const Tensor& x, Tensor& y) const {
  const auto* in = static_cast<const float*>(x.raw());
  auto* out = static_cast<float*>(y.raw());
  const int64_t n = x.numel();
  switch (kind_) {
    case ActivationKind::kRelu:
      // Memory-bound: split large tensors over oneDNN's OpenMP threads.
#pragma omp parallel for simd schedule(static) if (n >= kernels::kParallelElements)
      for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
      break;
    case ActivationKind::kSoftmax:
      softmax_rows(in, out, n / last_dim_, last_dim_);
      break;
    default:
      kernels::eltwise_forward(eltwise_of(kind_), in, out, n);
  }
}

void Activation::backward(const ForwardContext& ctx, std::span<const Tensor>, std::span<Tensor>, const Tensor& x,
                          const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache&) const {
  if (dx == nullptr) return;
  assert(dy.numel() == x.numel() && y.numel() == x.numel());
  // dx may share storage with dy (every kernel below is elementwise or reads
  // a row of dy before writing it), but not with x or y.
  prepare_output(*dx, x.shape(), {&x, &y});
  ops::on_device(*ctx.ops, "activation_backward", {&x, &y, &dy, dx}, [&] { backward_kernel(x, y, dy, *dx); },
                 [&] { backward_gpu(ctx.ops->device, y, dy, *dx); });
}

void Activation::backward_kernel(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) const {
  const int64_t n = x.numel();
  const auto* g = static_cast<const float*>(dy.raw());
  auto* out = static_cast<float*>(dx.raw());
  const auto* xp = static_cast<const float*>(x.raw());
  const auto* yp = static_cast<const float*>(y.raw());
  switch (kind_) {
    case ActivationKind::kRelu: {
      // Both loads are unconditional so the select vectorises (no branch).
#pragma omp parallel for simd schedule(static) if (n >= kernels::kParallelElements)
      for (int64_t i = 0; i < n; ++i) {
        const float gi = g[i];
        out[i] = yp[i] > 0.0f ? gi : 0.0f;
      }
      break;
    }
    case ActivationKind::kSoftmax:
      softmax_backward_rows(yp, g, out, n / last_dim_, last_dim_);
      break;
    case ActivationKind::kGelu:
      kernels::eltwise_backward(kernels::EltwiseKind::kGelu, xp, g, out, n);
      break;
    default:
      kernels::eltwise_backward(eltwise_of(kind_), yp, g, out, n);
  }
}

std::vector<std::string_view> Activation::ops() const {
  // gelu has no GPU kernel yet: its own op name lets the support table say so.
  if (kind_ == ActivationKind::kGelu) return {"activation", "gelu"};
  return {"activation"};
}

void Activation::forward_gpu(const Device& d, const Tensor& x, Tensor& y) const {
  const auto* in = static_cast<const float*>(x.raw());
  auto* out = static_cast<float*>(y.raw());
  const int64_t n = x.numel();
  switch (kind_) {
    case ActivationKind::kRelu: return gpu::relu(d, in, out, n);
    case ActivationKind::kSigmoid: return gpu::sigmoid(d, in, out, n);
    case ActivationKind::kTanh: return gpu::tanh(d, in, out, n);
    case ActivationKind::kSoftmax: return gpu::softmax(d, in, out, n / last_dim_, last_dim_);
    case ActivationKind::kGelu: ops::no_backend("activation gelu", d);
  }
}

void Activation::backward_gpu(const Device& d, const Tensor& y, const Tensor& dy, Tensor& dx) const {
  const auto* yp = static_cast<const float*>(y.raw());
  const auto* g = static_cast<const float*>(dy.raw());
  auto* out = static_cast<float*>(dx.raw());
  const int64_t n = y.numel();
  switch (kind_) {
    case ActivationKind::kRelu: return gpu::relu_grad(d, yp, g, out, n);
    case ActivationKind::kSigmoid: return gpu::sigmoid_grad(d, yp, g, out, n);
    case ActivationKind::kTanh: return gpu::tanh_grad(d, yp, g, out, n);
    case ActivationKind::kSoftmax: return gpu::softmax_grad(d, yp, g, out, n / last_dim_, last_dim_);
    case ActivationKind::kGelu: ops::no_backend("activation_backward gelu", d);
  }
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

// Dense layer: forward and backward as three oneDNN matmuls (bias fused into
// the forward one) plus a column sum for the bias gradient.
#include "engine/layers/dense.hpp"

#include <fmt/format.h>

#include <cassert>
#include <utility>

#include "engine/kernels/matmul.hpp"
#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/core.hpp"
#include "engine/ops/library.hpp"

namespace dtrain {

Dense::Dense(int64_t units, bool use_bias, InitializerSpec kernel_init, InitializerSpec bias_init)
    : units_(units), use_bias_(use_bias), kernel_init_(std::move(kernel_init)), bias_init_(std::move(bias_init)) {}

Result<Shape> Dense::build(const Shape& input) {
  if (input.empty() || input.back() <= 0) {
    return config_error(fmt::format(
        "dense expects an input with a feature (last) dimension; got shape {}", shape_str(input)));
  }
  in_ = input.back();
  Shape out = input;
  out.back() = units_;
  return out;
}

std::vector<ParamSpec> Dense::params() const {
  std::vector<ParamSpec> p{{"kernel", {in_, units_}, kernel_init_, true}};
  if (use_bias_) p.push_back({"bias", {units_}, bias_init_, true});
  return p;
}

// Under a bfloat16 policy the cache keeps x and the kernel rounded to
// bfloat16 (saved[0], saved[1]) for backward, and a buffer for dy rounded
// once for both of its products (saved[2]); under float32 it stays empty.
// x, y and dy are (rows, in|units) matrices to the matmuls: every leading
// dimension (batch and any others) folds into rows. A flat input has rows = B.
void Dense::forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
                    LayerCache& cache) const {
  assert(x.rank() >= 2 && x.dim(-1) == in_);
  const int64_t rows = x.numel() / in_;
  Shape y_shape = x.shape();
  y_shape.back() = units_;
  prepare_output(y, y_shape, {&x, &params[0]});
  if (ctx.ops->compute == DType::f32) {
    ops::matmul(*ctx.ops, {rows, units_, in_}, x, params[0], use_bias_ ? &params[1] : nullptr, y);
    return;
  }
  cache.saved.resize(3);
  const Tensor& xc = ops::to_compute(*ctx.ops, x, cache.saved[0]);
  const Tensor& wc = ops::to_compute(*ctx.ops, params[0], cache.saved[1]);
  if (cache.saved[2].shape() != y_shape || cache.saved[2].device() != x.device()) {
    cache.saved[2] = Tensor::empty(y_shape, DType::bf16, x.device());
  }
  ops::matmul(*ctx.ops, {rows, units_, in_}, xc, wc, use_bias_ ? &params[1] : nullptr, y);
}

void Dense::backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                     const Tensor& x_in, const Tensor&, const Tensor& dy_in, Tensor* dx,
                     const LayerCache& cache) const {
  const int64_t rows = x_in.numel() / in_;
  assert(dy_in.dim(-1) == units_ && dy_in.numel() == rows * units_);
  const bool lowp = ctx.ops->compute != DType::f32;
  // The buffers are the cache's storage (handle copies).
  Tensor dy_buf = lowp ? cache.saved[2] : Tensor();
  const Tensor& x = lowp ? cache.saved[0] : x_in;
  const Tensor& w = lowp ? cache.saved[1] : params[0];
  const Tensor& dy = ops::to_compute(*ctx.ops, dy_in, dy_buf);
  // dW (in, units) = x^T (in, rows) . dy (rows, units)
  prepare_output(grads[0], {in_, units_}, {&x_in, &dy_in});
  kernels::MatmulShape dw{in_, units_, rows};
  dw.trans_a = true;
  ops::matmul(*ctx.ops, dw, x, dy, nullptr, grads[0]);
  if (use_bias_) {
    prepare_output(grads[1], {units_}, {&dy_in});
    ops::sum_rows(*ctx.ops, dy_in, grads[1]);
  }
  if (dx != nullptr) {
    // dx (rows, in) = dy (rows, units) . W^T (units, in)
    prepare_output(*dx, x_in.shape(), {&dy_in, &params[0]});
    kernels::MatmulShape s{rows, in_, units_};
    s.trans_b = true;
    ops::matmul(*ctx.ops, s, dy, w, nullptr, *dx);
  }
}

std::span<const Field> dense_fields() {
  static const Field kFields[] = {
      custom<&DenseSpec::units>(
          "units",
          "Number of output units. auto: the number of classes of the job's data: the size of the vocabulary for "
          "format text (its labels are next-token ids), the class folders (classes, else the sorted sub-folders of "
          "dir) for format text_folder or image_folder.",
          "auto_int")
          .shaped(R"({"oneOf": [{"enum": ["auto"]}, {"type": "integer", "minimum": 1}]})")
          .need(),
      activation_field(kOutputActivationDoc),
      field<&DenseSpec::use_bias>("use_bias", kUseBiasDoc),
      field<&DenseSpec::kernel_initializer>("kernel_initializer", kKernelInitializerDoc),
      field<&DenseSpec::bias_initializer>("bias_initializer", kBiasInitializerDoc),
  };
  return kFields;
}

Result<std::unique_ptr<Layer>> make_dense(const LayerSpec& spec) {
  const auto& s = layer_options<DenseSpec>(spec);
  if (s.units == 0) {
    return config_error("dense: units: auto takes the number of classes of the job's data (format text, text_folder "
                        "or image_folder), and this job has none; give the number of units");
  }
  if (s.units < 1) return config_error(fmt::format("dense: units must be >= 1; got {}", s.units));
  return std::unique_ptr<Layer>(std::make_unique<Dense>(s.units, s.use_bias, s.kernel_initializer, s.bias_initializer));
}

}  // namespace dtrain

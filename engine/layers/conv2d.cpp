// Conv2D layer: shape checks and TF padding at build, oneDNN (CPU) or cuDNN (GPU) kernels per call.
#include "engine/layers/conv2d.hpp"

#include <fmt/format.h>

#include <cassert>

#include "engine/kernels/padding.hpp"
#include "engine/layers/layer_util.hpp"
#include "engine/layers/registry.hpp"
#include "engine/ops/layer_ops.hpp"
#include "engine/ops/library.hpp"

namespace dtrain {

Result<Shape> Conv2D::build(const Shape& input) {
  if (input.size() != 3) {
    return config_error(fmt::format(
        "conv2d expects an image input (height, width, channels); got shape {}; "
        "add {{type: reshape, target_shape: [height, width, channels]}} before it",
        shape_str(input)));
  }
  const auto h = kernels::window_1d(input[0], o_.kernel[0], o_.strides[0], o_.dilation[0], o_.same);
  const auto w = kernels::window_1d(input[1], o_.kernel[1], o_.strides[1], o_.dilation[1], o_.same);
  if (h.out <= 0 || w.out <= 0 || input[2] <= 0) {
    return config_error(fmt::format(
        "conv2d output would be empty: a {}x{} kernel with dilation [{}, {}] and padding {} does not fit "
        "input {}; use padding: same, a smaller kernel or a larger input",
        o_.kernel[0], o_.kernel[1], o_.dilation[0], o_.dilation[1], o_.same ? "same" : "valid", shape_str(input)));
  }
  geom_ = {};
  geom_.ih = input[0];
  geom_.iw = input[1];
  geom_.ic = input[2];
  geom_.oh = h.out;
  geom_.ow = w.out;
  geom_.oc = o_.filters;
  geom_.kh = o_.kernel[0];
  geom_.kw = o_.kernel[1];
  geom_.sh = o_.strides[0];
  geom_.sw = o_.strides[1];
  geom_.dh = o_.dilation[0];
  geom_.dw = o_.dilation[1];
  geom_.pad_top = h.pad_before;
  geom_.pad_bottom = h.pad_after;
  geom_.pad_left = w.pad_before;
  geom_.pad_right = w.pad_after;
  return Shape{h.out, w.out, o_.filters};
}

bool Conv2D::fuse_activation(const std::string& activation) {
  relu_ = activation == "relu";
  return relu_;
}

std::vector<ParamSpec> Conv2D::params() const {
  std::vector<ParamSpec> p{{"kernel", {geom_.kh, geom_.kw, geom_.ic, o_.filters}, o_.kernel_init, true}};
  if (o_.use_bias) p.push_back({"bias", {o_.filters}, o_.bias_init, true});
  return p;
}

kernels::Conv2dShape Conv2D::shape_for(int64_t batch) const {
  kernels::Conv2dShape s = geom_;
  s.n = batch;
  s.relu = relu_;
  return s;
}

void Conv2D::forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
                     LayerCache& cache) const {
  assert(x.rank() == 4 && x.dim(1) == geom_.ih && x.dim(2) == geom_.iw && x.dim(3) == geom_.ic);
  const auto s = shape_for(x.dim(0));
  prepare_output(y, {s.n, s.oh, s.ow, s.oc}, {&x, &params[0]});
  if (s.n == 0) return;
  // saved[0]: scratch for backward's relu-masked float32 gradient; under a
  // bfloat16 policy saved[1], saved[2]: x and the kernel rounded once for
  // forward and backward, saved[3]: the buffer for dy rounded once for both
  // gradients (with a relu, masked and rounded in one pass: no saved[0]).
  cache.saved.resize(4);
  const Tensor& xc = ops::to_compute(*ctx.ops, x, cache.saved[1]);
  const Tensor& wc = ops::to_compute(*ctx.ops, params[0], cache.saved[2]);
  ops::conv2d_forward(*ctx.ops, s, xc, wc, o_.use_bias ? &params[1] : nullptr, y);
  if (relu_ && xc.dtype() != DType::bf16) prepare_output(cache.saved[0], y.shape(), {&y});
  if (xc.dtype() == DType::bf16 && (cache.saved[3].shape() != y.shape() || cache.saved[3].device() != y.device())) {
    cache.saved[3] = Tensor::empty(y.shape(), DType::bf16, y.device());
  }
}

void Conv2D::backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads,
                      const Tensor& x, const Tensor& y, const Tensor& dy_in, Tensor* dx,
                      const LayerCache& cache) const {
  const auto s = shape_for(x.dim(0));
  const bool lowp = ctx.ops->compute != DType::f32;
  Tensor dy = dy_in;
  if (relu_ && !lowp) {
    // d(relu)/d(pre-activation) is 1 where the output is positive. The
    // scratch tensor shares storage with the cache (a handle copy).
    dy = cache.saved[0];
    ops::relu_backward(*ctx.ops, y, dy_in, dy);
  }
  assert(dy.rank() == 4 && dy.dim(0) == s.n && dy.dim(1) == s.oh && dy.dim(2) == s.ow && dy.dim(3) == s.oc);
  prepare_output(grads[0], {s.kh, s.kw, s.ic, s.oc}, {&x, &dy});
  if (o_.use_bias) prepare_output(grads[1], {s.oc}, {&x, &dy});
  if (dx != nullptr) prepare_output(*dx, x.shape(), {&dy, &params[0]});
  if (s.n == 0) {
    grads[0].zero();
    if (o_.use_bias) grads[1].zero();
    return;
  }
  Tensor dy_buf = lowp ? cache.saved[3] : Tensor();  // the cache's storage (a handle copy)
  if (relu_ && lowp) ops::relu_grad_to_compute(*ctx.ops, dy_in, y, dy_buf);
  const Tensor& dyc = relu_ && lowp ? dy_buf : ops::to_compute(*ctx.ops, dy, dy_buf);
  ops::conv2d_backward_weights(*ctx.ops, s, lowp ? cache.saved[1] : x, dyc, grads[0],
                               o_.use_bias ? &grads[1] : nullptr);
  if (dx != nullptr) ops::conv2d_backward_data(*ctx.ops, s, dyc, lowp ? cache.saved[2] : params[0], *dx);
}

std::span<const Field> conv2d_fields() {
  static const Field kFields[] = {
      field<&Conv2dSpec::filters>("filters", "Number of output channels.").min(1).need(),
      field<&Conv2dSpec::kernel>("kernel", "Kernel size: an integer or [height, width].").size2().follows("size2").need(),
      field<&Conv2dSpec::strides>("strides", "Strides: an integer or [height, width].").size2().follows("size2"),
      field<&Conv2dSpec::padding>("padding", "Padding: valid (none) or same (output size = ceil(input / stride)).").follows("padding"),
      field<&Conv2dSpec::dilation>("dilation", "Dilation rate: an integer or [height, width].").size2().follows("size2"),
      activation_field(kOutputActivationDoc),
      field<&Conv2dSpec::use_bias>("use_bias", kUseBiasDoc),
      field<&Conv2dSpec::kernel_initializer>("kernel_initializer", kKernelInitializerDoc),
      field<&Conv2dSpec::bias_initializer>("bias_initializer", kBiasInitializerDoc),
  };
  return kFields;
}

Result<std::unique_ptr<Layer>> make_conv2d(const LayerSpec& spec) {
  const auto& s = layer_options<Conv2dSpec>(spec);
  Conv2dOptions o;
  if (s.filters < 1) return config_error(fmt::format("conv2d: filters must be >= 1; got {}", s.filters));
  if (s.kernel.empty()) return config_error("conv2d: kernel is required (e.g. kernel: 3 or kernel: [3, 5])");
  auto kernel = window_pair(s.kernel, "conv2d: kernel", {1, 1});
  if (!kernel) return kernel.error();
  auto strides = window_pair(s.strides, "conv2d: strides", {1, 1});
  if (!strides) return strides.error();
  auto dilation = window_pair(s.dilation, "conv2d: dilation", {1, 1});
  if (!dilation) return dilation.error();
  auto same = parse_padding(s.padding);
  if (!same) return config_error("conv2d: " + same.error().message);
  o.filters = s.filters;
  o.kernel = *kernel;
  o.strides = *strides;
  o.dilation = *dilation;
  o.same = *same;
  o.use_bias = s.use_bias;
  o.kernel_init = s.kernel_initializer;
  o.bias_init = s.bias_initializer;
  return std::unique_ptr<Layer>(std::make_unique<Conv2D>(std::move(o)));
}

}  // namespace dtrain

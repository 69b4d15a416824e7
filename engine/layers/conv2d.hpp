// 2-D convolution layer (TensorFlow semantics), through oneDNN.
//   x: (B, H, W, C_in) NHWC   kernel: (kh, kw, C_in, filters) HWIO   bias: (filters)
//   y: (B, OH, OW, filters); padding "valid" or "same" (TF SAME: extra pad at the bottom/right)
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <array>
#include <utility>

#include "engine/kernels/conv.hpp"
#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

struct Conv2dOptions {
  int64_t filters = 0;
  std::array<int64_t, 2> kernel{1, 1}, strides{1, 1}, dilation{1, 1};
  bool same = false;  // padding
  bool use_bias = true;
  InitializerSpec kernel_init, bias_init{"zeros", 0.0f};
};

class Conv2D : public Layer {
 public:
  explicit Conv2D(Conv2dOptions o) : o_(std::move(o)) {}

  std::string type() const override { return "conv2d"; }
  // "conv2d", or "conv2d_dilated" when a dilation is above 1 (the support
  // table keeps those off GPUs).
  std::vector<std::string_view> ops() const override {
    const bool dilated = o_.dilation[0] > 1 || o_.dilation[1] > 1;
    return {dilated ? "conv2d_dilated" : "conv2d", "activation"};
  }
  // REQUIRES: input (H, W, C); errors on other ranks and on an empty output.
  Result<Shape> build(const Shape& input) override;
  // kernel (kh, kw, C_in, filters); bias (filters) when use_bias. Both trainable.
  std::vector<ParamSpec> params() const override;
  // Takes "relu" (a oneDNN post-op; backward masks dy by y > 0).
  bool fuse_activation(const std::string& activation) override;
  const Conv2dOptions& options() const { return o_; }
  bool fused_relu() const { return relu_; }
  // Valid after build(): the padding rows/columns before and after (TF SAME puts the extra one after).
  std::array<int64_t, 4> pads() const { return {geom_.pad_top, geom_.pad_left, geom_.pad_bottom, geom_.pad_right}; }
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  bool backward_reads_output() const override { return relu_; }  // y: the fused relu's mask

 private:
  kernels::Conv2dShape shape_for(int64_t batch) const;

  Conv2dOptions o_;
  kernels::Conv2dShape geom_;  // n left 0; set per call
  bool relu_ = false;          // fused activation
};

// A conv2d layer's options in the job (type: conv2d).
struct Conv2dSpec {
  int64_t filters = 0;
  std::vector<int64_t> kernel;           // [kh, kw]
  std::vector<int64_t> strides{1, 1};    // [sh, sw]
  std::string padding = "valid";         // valid | same
  std::vector<int64_t> dilation{1, 1};   // [dh, dw]
  bool use_bias = true;
  InitializerSpec kernel_initializer;
  InitializerSpec bias_initializer{"zeros", 0.0f};
};
std::span<const Field> conv2d_fields();
Result<std::unique_ptr<Layer>> make_conv2d(const LayerSpec& spec);

}  // namespace dtrain

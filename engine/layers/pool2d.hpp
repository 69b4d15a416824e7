// 2-D max and average pooling layers (TensorFlow semantics), through oneDNN
// on the CPU and cuDNN on a GPU. One class serves both types: they differ
// only in the algorithm.
//   x: (B, H, W, C) NHWC   y: (B, OH, OW, C)
// SAME padding: max ignores padded positions; avg divides by the number of
// real (unpadded) elements in each window. Max pooling keeps oneDNN's argmax
// workspace in the LayerCache for backward.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <array>

#include "engine/kernels/pool.hpp"
#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

struct Pool2dOptions {
  kernels::PoolKind kind = kernels::PoolKind::kMax;
  std::array<int64_t, 2> size{2, 2}, strides{2, 2};
  bool same = false;  // padding
};

class Pool2D : public Layer {
 public:
  explicit Pool2D(Pool2dOptions o) : o_(o) {}

  std::string type() const override;  // "max_pool2d" | "avg_pool2d"
  // "pool2d"; after build(), "pool2d_pad_after" instead when SAME pads more
  // after the input than before (cuDNN takes one pad per dimension, so the
  // GPU cannot place those windows: the support table says so at load).
  std::vector<std::string_view> ops() const override;
  // REQUIRES: input (H, W, C); errors on other ranks and on an empty output.
  Result<Shape> build(const Shape& input) override;
  const Pool2dOptions& options() const { return o_; }
  // Valid after build(): the padding rows/columns before and after (TF SAME puts the extra one after).
  std::array<int64_t, 4> pads() const { return {geom_.pad_top, geom_.pad_left, geom_.pad_bottom, geom_.pad_right}; }
  // cache.saved[0]: the max-pool workspace (raw bytes in a float tensor).
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  // REQUIRES: forward on the same x with the same cache.
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;

 private:
  kernels::Pool2dShape shape_for(int64_t batch) const;

  Pool2dOptions o_;
  kernels::Pool2dShape geom_;
};

// A max_pool2d or avg_pool2d layer's options in the job.
struct Pool2dSpec {
  std::vector<int64_t> size{2, 2};   // [ph, pw]
  std::vector<int64_t> strides;      // [sh, sw]; empty (null): = size
  std::string padding = "valid";     // valid | same
  void resolve() {
    if (strides.empty()) strides = size;
  }
};
std::span<const Field> pool2d_fields();
Result<std::unique_ptr<Layer>> make_max_pool2d(const LayerSpec& spec);
Result<std::unique_ptr<Layer>> make_avg_pool2d(const LayerSpec& spec);

}  // namespace dtrain

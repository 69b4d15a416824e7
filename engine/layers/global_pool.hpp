// Global pooling (Keras GlobalAveragePooling2D / GlobalMaxPooling2D /
// GlobalAveragePooling1D, keepdims false): the mean or the max over every
// position of each channel. No params.
//   global_avg_pool2d, global_max_pool2d: x (B, H, W, C) NHWC -> y (B, C)
//   global_avg_pool1d:                    x (B, T, C)          -> y (B, C)
// Max backward sends each dy to the first position holding the maximum (in
// row-major order), recomputed from x: no cache. Everything computes in
// float32 under every compute type (averages accumulate in double).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

enum class GlobalPoolKind { kAvg2d, kMax2d, kAvg1d };

class GlobalPool : public Layer {
 public:
  explicit GlobalPool(GlobalPoolKind kind) : kind_(kind) {}
  GlobalPoolKind kind() const { return kind_; }

  std::string type() const override;  // "global_avg_pool2d" | "global_max_pool2d" | "global_avg_pool1d"
  std::vector<std::string_view> ops() const override { return {"global_pool"}; }
  // REQUIRES: input (H, W, C) for the 2-D types, (T, C) for the 1-D one, with
  // no empty dimension; anything else is a config error.
  Result<Shape> build(const Shape& input) override;
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  // dx: avg: dy[b, c] / positions at every position; max: dy[b, c] at the
  // argmax, 0 elsewhere.
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  bool backward_reads_inputs() const override { return kind_ == GlobalPoolKind::kMax2d; }  // the argmax
  bool backward_reads_output() const override { return false; }

 private:
  GlobalPoolKind kind_;
  int64_t positions_ = 0;  // H*W or T
  int64_t channels_ = 0;
};

Result<std::unique_ptr<Layer>> make_global_avg_pool2d(const LayerSpec& spec);
Result<std::unique_ptr<Layer>> make_global_max_pool2d(const LayerSpec& spec);
Result<std::unique_ptr<Layer>> make_global_avg_pool1d(const LayerSpec& spec);

}  // namespace dtrain

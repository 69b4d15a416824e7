// ZeroPadding2D (Keras): adds `pad_h` rows of zeros above and below and
// `pad_w` columns left and right of each NHWC image.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

class ZeroPadding2D : public Layer {
 public:
  ZeroPadding2D(int64_t pad_h, int64_t pad_w) : pad_h_(pad_h), pad_w_(pad_w) {}
  std::string type() const override { return "zero_padding2d"; }
  std::vector<std::string_view> ops() const override { return {"pad"}; }
  Result<Shape> build(const Shape& input) override;
  int64_t pad_h() const { return pad_h_; }
  int64_t pad_w() const { return pad_w_; }
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  bool backward_reads_inputs() const override { return false; }  // x's shape only
  bool backward_reads_output() const override { return false; }

 private:
  int64_t pad_h_, pad_w_;
  Shape in_, out_;
};

// A zero_padding2d layer's options in the job.
struct ZeroPadding2dSpec {
  std::vector<int64_t> padding{1, 1};  // [rows, columns] added on each side ([n] = [n, n])
};
std::span<const Field> zero_padding2d_fields();
Result<std::unique_ptr<Layer>> make_zero_padding2d(const LayerSpec& spec);

}  // namespace dtrain

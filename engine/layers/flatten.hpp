// Flatten: (B, d1, ..., dk) -> (B, d1*...*dk). No copy: y is a view of x and
// dx a view of dy (they share storage).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

class Flatten : public Layer {
 public:
  std::string type() const override { return "flatten"; }
  Result<Shape> build(const Shape& input) override;
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  bool backward_reads_inputs() const override { return false; }  // x's shape only
  bool backward_reads_output() const override { return false; }

 private:
  int64_t features_ = 0;
};

Result<std::unique_ptr<Layer>> make_flatten(const LayerSpec& spec);

}  // namespace dtrain

// Reshape: (B, input...) -> (B, target_shape...), target_shape given without
// the batch dimension; one entry may be -1 (inferred). No copy: y is a view of
// x and dx a view of dy.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include <utility>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

class Reshape : public Layer {
 public:
  explicit Reshape(Shape target) : target_(std::move(target)) {}

  std::string type() const override { return "reshape"; }
  // Errors when -1 appears more than once, an entry is 0 or < -1, or the
  // element counts differ.
  Result<Shape> build(const Shape& input) override;
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  bool backward_reads_inputs() const override { return false; }  // x's shape only
  bool backward_reads_output() const override { return false; }

 private:
  Shape target_;
  Shape out_;  // target_ with -1 resolved
};

// A reshape layer's options in the job (type: reshape).
struct ReshapeSpec {
  std::vector<int64_t> target_shape;  // without the batch dimension
};
std::span<const Field> reshape_fields();
Result<std::unique_ptr<Layer>> make_reshape(const LayerSpec& spec);

}  // namespace dtrain

// Fully connected layer: y = x W + b over the last axis (Keras Dense), through
// oneDNN matmul. A rank > 2 input is one (rows, in) matrix, rows = B*...:
//   x: (B, ..., in)   kernel W: (in, units)   bias b: (units)   y: (B, ..., units)
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

class Dense : public Layer {
 public:
  Dense(int64_t units, bool use_bias, InitializerSpec kernel_init, InitializerSpec bias_init);

  std::string type() const override { return "dense"; }
  std::vector<std::string_view> ops() const override { return {"matmul", "sum_rows"}; }
  // REQUIRES: input of rank >= 1; its last dimension is `in`. The output is
  // the input shape with the last dimension replaced by units.
  Result<Shape> build(const Shape& input) override;
  // kernel (in, units) [trainable]; bias (units) [trainable] when use_bias.
  std::vector<ParamSpec> params() const override;
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  // grads: dkernel = x^T dy, dbias = sum over rows of dy; dx = dy W^T
  // (x and dy seen as (rows, in) and (rows, units)).
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  bool backward_reads_output() const override { return false; }

 private:
  int64_t units_;
  bool use_bias_;
  InitializerSpec kernel_init_, bias_init_;
  int64_t in_ = 0;
};

// A dense layer's options in the job (type: dense).
struct DenseSpec {
  int64_t units = 0;  // 0 = auto (estimator/token_vocabulary.cpp resolves it)
  bool use_bias = true;
  InitializerSpec kernel_initializer;
  InitializerSpec bias_initializer{"zeros", 0.0f};
};
std::span<const Field> dense_fields();
Result<std::unique_ptr<Layer>> make_dense(const LayerSpec& spec);

}  // namespace dtrain

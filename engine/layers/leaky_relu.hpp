// LeakyReLU (Keras LeakyReLU): y = x for x > 0, negative_slope * x otherwise,
// elementwise; dx = dy for x > 0, negative_slope * dy otherwise (TensorFlow's
// LeakyReluGrad, so x = 0 takes the slope). No variables.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/base/job_spec.hpp"
#include "engine/layer.hpp"

namespace dtrain {

class LeakyReLU : public Layer {
 public:
  explicit LeakyReLU(float negative_slope) : slope_(negative_slope) {}
  std::string type() const override { return "leaky_relu"; }
  std::vector<std::string_view> ops() const override { return {"leaky_relu"}; }
  Result<Shape> build(const Shape& input) override { return input; }
  float negative_slope() const { return slope_; }
  void forward(const ForwardContext& ctx, std::span<Tensor> params, const Tensor& x, Tensor& y,
               LayerCache& cache) const override;
  void backward(const ForwardContext& ctx, std::span<const Tensor> params, std::span<Tensor> grads, const Tensor& x,
                const Tensor& y, const Tensor& dy, Tensor* dx, const LayerCache& cache) const override;
  bool backward_reads_output() const override { return false; }  // x's sign

 private:
  float slope_;
};

// A leaky_relu layer's options in the job.
struct LeakyReluSpec {
  float negative_slope = 0.3f;  // Keras' default
};
std::span<const Field> leaky_relu_fields();
Result<std::unique_ptr<Layer>> make_leaky_relu(const LayerSpec& spec);

namespace onnx_export {
class GraphBuilder;
struct LayerIO;
// ONNX LeakyRelu with alpha = negative_slope.
Result<std::string> export_leaky_relu(GraphBuilder& g, const LayerIO& io);
}  // namespace onnx_export

}  // namespace dtrain

// sigmoid_cross_entropy: targets in [0, 1] against sigmoid(logits), per
// element max(x, 0) - x t + log1p(exp(-|x|)), per example the mean over
// elements. The math is ops::sigmoid_cross_entropy (engine/ops/loss_ops.hpp).
#include "engine/kernels/losses.hpp"
#include "engine/losses/elementwise_shapes.hpp"
#include "engine/losses/loss_kind.hpp"
#include "engine/ops/loss_ops.hpp"

namespace dtrain {

namespace {
class SigmoidCrossEntropy final : public Loss {
 public:
  std::string name() const override { return "sigmoid_cross_entropy"; }

  Status check_shapes(const Shape& output, const Shape& label) const override {
    return check_elementwise_shapes(name(), output, label);
  }

  double forward_backward(const Tensor& logits, const Tensor& labels, Tensor* dlogits, float grad_scale,
                          const ops::Context& ctx, const Tensor* weights) const override {
    prepare_dlogits(logits, dlogits);
    const double total = ops::sigmoid_cross_entropy(ctx, logits, labels, grad_scale, dlogits, weights);
    count_loss_read(ctx);
    return total;
  }

  Tensor predictions(const Tensor& logits) const override {
    Tensor out(logits.shape());
    const float* x = logits.data();
    float* p = out.data();
    for (int64_t j = 0; j < logits.numel(); ++j) p[j] = kernels::stable_sigmoid(x[j]);
    return out;
  }
};
}  // namespace

std::unique_ptr<Loss> new_sigmoid_cross_entropy() { return std::make_unique<SigmoidCrossEntropy>(); }

}  // namespace dtrain

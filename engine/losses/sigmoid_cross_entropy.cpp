// sigmoid_cross_entropy: targets in [0, 1] against sigmoid(logits), per
// element max(x, 0) - x t + log1p(exp(-|x|)), per example the mean over elements.
#include <cassert>
#include <cmath>

#include "engine/losses/elementwise_shapes.hpp"
#include "engine/losses/loss_kind.hpp"
#include "engine/losses/stable_sigmoid.hpp"

#include "engine/ops/dispatch.hpp"

namespace dtrain {

namespace {
class SigmoidCrossEntropy final : public Loss {
 public:
  std::string name() const override { return "sigmoid_cross_entropy"; }

  Status check_shapes(const Shape& output, const Shape& label) const override {
    return check_elementwise_shapes(name(), output, label);
  }

  double forward_backward(const Tensor& logits, const Tensor& labels, Tensor* dlogits, float grad_scale,
                          const ops::Context& ctx) const override {
    const int64_t b = logits.dim(0);
    const int64_t n = b == 0 ? 0 : logits.numel() / b;
    assert(labels.numel() == logits.numel());
    prepare_dlogits(logits, dlogits);
    double total = 0.0;
    ops::on_device(ctx, "sigmoid_cross_entropy", {&logits, &labels, dlogits}, [&] {
      const auto* x = static_cast<const float*>(logits.raw());
      const auto* t = static_cast<const float*>(labels.raw());
      const float gscale = n == 0 ? 0.0f : grad_scale / static_cast<float>(n);
      for (int64_t i = 0; i < b; ++i) {
        double sum = 0.0;
        for (int64_t j = i * n; j < (i + 1) * n; ++j) {
          const float xv = x[j];
          sum += static_cast<double>(std::fmax(xv, 0.0f) - xv * t[j] + std::log1p(std::exp(-std::fabs(xv))));
        }
        total += sum / static_cast<double>(n);
      }
      if (dlogits != nullptr) {
        float* g = static_cast<float*>(dlogits->raw());
        for (int64_t j = 0; j < b * n; ++j) g[j] = gscale * (stable_sigmoid(x[j]) - t[j]);
      }
    });
    count_loss_read(ctx);
    return total;
  }

  Tensor predictions(const Tensor& logits) const override {
    Tensor out(logits.shape());
    const float* x = logits.data();
    float* p = out.data();
    for (int64_t j = 0; j < logits.numel(); ++j) p[j] = stable_sigmoid(x[j]);
    return out;
  }
};
}  // namespace

std::unique_ptr<Loss> new_sigmoid_cross_entropy() { return std::make_unique<SigmoidCrossEntropy>(); }

}  // namespace dtrain

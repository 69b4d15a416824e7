// mean_squared_error: per example the mean over elements of (x - t)^2; the
// model output is the prediction itself.
#include <cassert>

#include "engine/losses/elementwise_shapes.hpp"
#include "engine/losses/loss_kind.hpp"

#include "engine/ops/dispatch.hpp"

namespace dtrain {

namespace {
class MeanSquaredError final : public Loss {
 public:
  std::string name() const override { return "mean_squared_error"; }

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
    ops::on_device(ctx, "mean_squared_error", {&logits, &labels, dlogits}, [&] {
      const auto* x = static_cast<const float*>(logits.raw());
      const auto* t = static_cast<const float*>(labels.raw());
      for (int64_t i = 0; i < b; ++i) {
        double sum = 0.0;
        for (int64_t j = i * n; j < (i + 1) * n; ++j) {
          const double d = static_cast<double>(x[j]) - static_cast<double>(t[j]);
          sum += d * d;
        }
        total += sum / static_cast<double>(n);
      }
      if (dlogits != nullptr) {
        const float gscale = n == 0 ? 0.0f : 2.0f * grad_scale / static_cast<float>(n);
        float* g = static_cast<float*>(dlogits->raw());
        for (int64_t j = 0; j < b * n; ++j) g[j] = gscale * (x[j] - t[j]);
      }
    });
    count_loss_read(ctx);
    return total;
  }

  Tensor predictions(const Tensor& logits) const override { return logits.clone(); }
};
}  // namespace

std::unique_ptr<Loss> new_mean_squared_error() { return std::make_unique<MeanSquaredError>(); }

}  // namespace dtrain

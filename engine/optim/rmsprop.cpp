// rmsprop (tf.keras 2.x RMSprop, uncentered):
//   rms = rho rms + (1 - rho) g^2
//   without momentum: var -= lr g / (sqrt(rms) + eps)
//   with momentum:    mom = momentum mom + lr g / (sqrt(rms) + eps); var -= mom
// eps sits outside the square root in both forms (tf.keras 2.x does so without
// momentum; its momentum path and Keras 3 use sqrt(rms + eps); the two differ
// only where rms is of the order of eps). Slots "rms" (+ "momentum").
#include <cassert>
#include <cmath>

#include "engine/optim/optimizer_impls.hpp"

#include "engine/ops/dispatch.hpp"

namespace dtrain {

namespace {
class RmsProp final : public Optimizer {
 public:
  explicit RmsProp(const OptimizerSpec& spec)
      : rho_(static_cast<float>(spec.rho)), momentum_(static_cast<float>(spec.momentum)),
        eps_(static_cast<float>(spec.epsilon)) {}
  std::string name() const override { return "rmsprop"; }
  std::vector<std::string> slot_names() const override {
    if (momentum_ > 0.0f) return {"rms", "momentum"};
    return {"rms"};
  }

  void apply(int64_t, float lr, Tensor& var, const Tensor& grad, std::span<Tensor> slots,
             const ops::Context& ctx) const override {
    assert(grad.numel() == var.numel() && slots.size() == slot_names().size());
    ops::on_device(ctx, "rmsprop", {&var, &grad, slots.empty() ? nullptr : &slots[0], slots.size() > 1 ? &slots[1] : nullptr}, [&] {
      const int64_t n = var.numel();
      float* __restrict w = static_cast<float*>(var.raw());
      const float* __restrict g = static_cast<const float*>(grad.raw());
      float* __restrict ms = static_cast<float*>(slots[0].raw());
      const float rho = rho_, one_minus_rho = 1.0f - rho_, eps = eps_;
      if (momentum_ <= 0.0f) {
        for (int64_t i = 0; i < n; ++i) {
          const float gi = g[i];
          const float msi = rho * ms[i] + one_minus_rho * gi * gi;
          ms[i] = msi;
          w[i] -= lr * gi / (std::sqrt(msi) + eps);
        }
        return;
      }
      float* __restrict mom = static_cast<float*>(slots[1].raw());
      const float mu = momentum_;
      for (int64_t i = 0; i < n; ++i) {
        const float gi = g[i];
        const float msi = rho * ms[i] + one_minus_rho * gi * gi;
        ms[i] = msi;
        const float mi = mu * mom[i] + lr * gi / (std::sqrt(msi) + eps);
        mom[i] = mi;
        w[i] -= mi;
      }
    });
  }

 private:
  float rho_, momentum_, eps_;
};
}  // namespace

std::unique_ptr<Optimizer> new_rmsprop(const OptimizerSpec& spec) { return std::make_unique<RmsProp>(spec); }

}  // namespace dtrain

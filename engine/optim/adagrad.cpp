// adagrad (tf.keras 2.x Adagrad): acc += g^2; var -= lr g / (sqrt(acc) + eps).
// Slot "accumulator", starting at initial_accumulator_value.
#include <cassert>
#include <cmath>

#include "engine/optim/optimizer_impls.hpp"

#include "engine/ops/dispatch.hpp"

namespace dtrain {

namespace {
class Adagrad final : public Optimizer {
 public:
  explicit Adagrad(const OptimizerSpec& spec)
      : initial_(static_cast<float>(spec.initial_accumulator_value)), eps_(static_cast<float>(spec.epsilon)) {}
  std::string name() const override { return "adagrad"; }
  std::vector<std::string> slot_names() const override { return {"accumulator"}; }
  float slot_initial_value(size_t) const override { return initial_; }

  void apply(int64_t, float lr, Tensor& var, const Tensor& grad, std::span<Tensor> slots,
             const ops::Context& ctx) const override {
    assert(grad.numel() == var.numel() && slots.size() == 1);
    ops::on_device(ctx, "adagrad", {&var, &grad, slots.empty() ? nullptr : &slots[0], slots.size() > 1 ? &slots[1] : nullptr}, [&] {
      const int64_t n = var.numel();
      float* __restrict w = static_cast<float*>(var.raw());
      const float* __restrict g = static_cast<const float*>(grad.raw());
      float* __restrict acc = static_cast<float*>(slots[0].raw());
      const float eps = eps_;
      for (int64_t i = 0; i < n; ++i) {
        const float gi = g[i];
        const float ai = acc[i] + gi * gi;
        acc[i] = ai;
        w[i] -= lr * gi / (std::sqrt(ai) + eps);
      }
    });
  }

 private:
  float initial_, eps_;
};
}  // namespace

std::unique_ptr<Optimizer> new_adagrad(const OptimizerSpec& spec) { return std::make_unique<Adagrad>(spec); }

}  // namespace dtrain

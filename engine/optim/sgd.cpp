// sgd with optional (Nesterov) momentum, Keras' SGD: v = m v - lr g;
// var += v, or var += m v - lr g with nesterov. Slot "momentum" holds v.
#include <cassert>

#include "engine/cuda/update_math.hpp"  // the per-element update, shared with the GPU kernels
#include "engine/optim/optimizer_impls.hpp"

#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain {

namespace {
class Sgd final : public Optimizer {
 public:
  Sgd(float momentum, bool nesterov) : momentum_(momentum), nesterov_(nesterov) {}
  std::string name() const override { return "sgd"; }
  std::vector<std::string> slot_names() const override {
    if (momentum_ > 0.0f) return {"momentum"};
    return {};
  }

  void apply(int64_t, float lr, Tensor& var, const Tensor& grad, std::span<Tensor> slots,
             const ops::Context& ctx) const override {
    assert(grad.numel() == var.numel() && slots.size() == slot_names().size());
    ops::on_device(ctx, "sgd", {&var, &grad, slots.empty() ? nullptr : &slots[0], slots.size() > 1 ? &slots[1] : nullptr}, [&] {
      const int64_t n = var.numel();
      float* __restrict w = static_cast<float*>(var.raw());
      const float* __restrict g = static_cast<const float*>(grad.raw());
      if (momentum_ <= 0.0f) {
        for (int64_t i = 0; i < n; ++i) cuda::exact::sgd(w[i], g[i], lr);
        return;
      }
      float* __restrict v = static_cast<float*>(slots[0].raw());
      const float m = momentum_;
      if (nesterov_) {
        for (int64_t i = 0; i < n; ++i) cuda::exact::sgd_momentum(w[i], v[i], g[i], lr, m, /*nesterov=*/true);
      } else {
        for (int64_t i = 0; i < n; ++i) cuda::exact::sgd_momentum(w[i], v[i], g[i], lr, m, /*nesterov=*/false);
      }
    }, [&] {
      gpu::sgd(ctx.device, static_cast<float*>(var.raw()), static_cast<const float*>(grad.raw()),
               momentum_ > 0.0f ? static_cast<float*>(slots[0].raw()) : nullptr, var.numel(), lr, momentum_, nesterov_);
    });
  }

 private:
  float momentum_;
  bool nesterov_;
};
}  // namespace

std::unique_ptr<Optimizer> new_sgd(const OptimizerSpec& spec) {
  return std::make_unique<Sgd>(static_cast<float>(spec.momentum), spec.nesterov);
}

}  // namespace dtrain

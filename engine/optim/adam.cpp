// adam and adamw (Keras' Adam / AdamW). At 1-based step t:
//   m += (1 - b1) (g - m);  v += (1 - b2) (g^2 - v)
//   lr_t = lr sqrt(1 - b2^t) / (1 - b1^t)
//   var -= lr wd var                        (adamw only: decoupled decay, before the step)
//   var -= lr_t m / (sqrt(v) + eps)         (eps is Kingma & Ba's "epsilon hat", as TF/Keras;
//                                            torch.optim.Adam instead adds eps to sqrt(v_hat))
// Slots "m" and "v". One fused pass over the variable.
#include <cassert>

#include "engine/cuda/update_math.hpp"  // the per-element update, shared with the GPU kernels
#include "engine/optim/optimizer_impls.hpp"

#include "engine/backend/cuda/gpu_ops.hpp"
#include "engine/ops/dispatch.hpp"

namespace dtrain {

namespace {
class Adam final : public Optimizer {
 public:
  Adam(const OptimizerSpec& spec, bool decoupled_decay)
      : b1_(spec.beta1), b2_(spec.beta2), eps_(static_cast<float>(spec.epsilon)),
        wd_(decoupled_decay ? spec.weight_decay : 0.0), adamw_(decoupled_decay) {}
  std::string name() const override { return adamw_ ? "adamw" : "adam"; }
  std::vector<std::string> slot_names() const override { return {"m", "v"}; }

  void apply(int64_t step, float lr, Tensor& var, const Tensor& grad, std::span<Tensor> slots,
             const ops::Context& ctx) const override {
    assert(grad.numel() == var.numel() && slots.size() == 2 && step >= 1);
    ops::on_device(ctx, "adam", {&var, &grad, slots.empty() ? nullptr : &slots[0], slots.size() > 1 ? &slots[1] : nullptr}, [&] {
      const cuda::exact::AdamScalars k = cuda::exact::adam_scalars(b1_, b2_, eps_, wd_, lr, step);
      const int64_t n = var.numel();
      float* __restrict w = static_cast<float*>(var.raw());
      const float* __restrict g = static_cast<const float*>(grad.raw());
      float* __restrict m = static_cast<float*>(slots[0].raw());
      float* __restrict v = static_cast<float*>(slots[1].raw());
      for (int64_t i = 0; i < n; ++i) cuda::exact::adam(w[i], m[i], v[i], g[i], k);
    }, [&] {
      const cuda::exact::AdamScalars k = cuda::exact::adam_scalars(b1_, b2_, eps_, wd_, lr, step);
      gpu::adam(ctx.device, static_cast<float*>(var.raw()), static_cast<const float*>(grad.raw()),
                static_cast<float*>(slots[0].raw()), static_cast<float*>(slots[1].raw()), var.numel(),
                {k.lr_t, k.one_minus_b1, k.one_minus_b2, k.keep, k.eps});
    });
  }

 private:
  double b1_, b2_;
  float eps_;
  double wd_;
  bool adamw_;
};
}  // namespace

std::unique_ptr<Optimizer> new_adam(const OptimizerSpec& spec) { return std::make_unique<Adam>(spec, false); }
std::unique_ptr<Optimizer> new_adamw(const OptimizerSpec& spec) { return std::make_unique<Adam>(spec, true); }

}  // namespace dtrain

// sgd with optional (Nesterov) momentum, Keras' SGD: v = m v - lr g;
// var += v, or var += m v - lr g with nesterov. Slot "momentum" holds v.
#include <cassert>

#include "engine/cuda/update_math.hpp"  // the per-element update, shared with the GPU kernels
#include "engine/optim/optimizer_impls.hpp"

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

  void apply(int64_t, float lr, Tensor& var, const Tensor& grad, std::span<Tensor> slots) const override {
    assert(grad.numel() == var.numel() && slots.size() == slot_names().size());
    const int64_t n = var.numel();
    float* __restrict w = var.data();
    const float* __restrict g = grad.data();
    if (momentum_ <= 0.0f) {
      for (int64_t i = 0; i < n; ++i) cuda::exact::sgd(w[i], g[i], lr);
      return;
    }
    float* __restrict v = slots[0].data();
    const float m = momentum_;
    if (nesterov_) {
      for (int64_t i = 0; i < n; ++i) cuda::exact::sgd_momentum(w[i], v[i], g[i], lr, m, /*nesterov=*/true);
    } else {
      for (int64_t i = 0; i < n; ++i) cuda::exact::sgd_momentum(w[i], v[i], g[i], lr, m, /*nesterov=*/false);
    }
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

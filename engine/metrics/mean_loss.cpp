// mean_loss: the loss averaged over examples. State: [loss_sum, examples].
#include <cassert>

#include "engine/metrics/metric_impls.hpp"

namespace dtrain {

namespace {
class MeanLoss final : public Metric {
 public:
  std::string name() const override { return "mean_loss"; }
  size_t state_size(const Shape&) const override { return 2; }

  void update(const Tensor& logits, const Tensor&, double loss_sum, std::span<double> state,
              const float*) const override {
    assert(state.size() == 2);
    state[0] += loss_sum;
    state[1] += static_cast<double>(logits.dim(0));
  }

  double result(std::span<const double> state) const override { return ratio_or_zero(state[0], state[1]); }
};
}  // namespace

Result<std::unique_ptr<Metric>> new_mean_loss(LossKind) { return std::unique_ptr<Metric>(std::make_unique<MeanLoss>()); }

}  // namespace dtrain

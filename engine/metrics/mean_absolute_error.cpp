// mean_absolute_error: mean over all target elements of |prediction - target|,
// where the prediction is what Loss::predictions gives (softmax or sigmoid
// probabilities, raw output for mean_squared_error). State: [abs_sum, elements].
// Not defined for class-id labels (sparse_softmax_cross_entropy).
#include <cassert>
#include <cmath>
#include <vector>

#include "engine/kernels/losses.hpp"
#include "engine/metrics/metric_impls.hpp"

namespace dtrain {

namespace {
class MeanAbsoluteError final : public Metric {
 public:
  explicit MeanAbsoluteError(LossKind loss) : loss_(loss) {}
  std::string name() const override { return "mean_absolute_error"; }
  size_t state_size(const Shape&) const override { return 2; }

  void update(const Tensor& logits, const Tensor& labels, double, std::span<double> state,
              const float* weights) const override {
    assert(state.size() == 2 && labels.numel() == logits.numel());
    const float* x = logits.data();
    const float* y = labels.data();
    const int64_t n = logits.numel();
    const int64_t per = per_example(logits);
    double sum = 0.0, count = 0.0;
    if (loss_ == LossKind::kSoftmaxCrossEntropy) {
      std::vector<float> p(static_cast<size_t>(per));
      for (int64_t i = 0; i < logits.dim(0); ++i) {
        const float* row = x + i * per;
        const double w = element_weight(weights, i * per, per);
        kernels::softmax_from_lse(row, kernels::log_sum_exp(row, per), 1.0f, p.data(), per);
        for (int64_t j = 0; j < per; ++j) {
          sum += w * std::fabs(static_cast<double>(p[static_cast<size_t>(j)]) - y[i * per + j]);
          count += w;
        }
      }
    } else {
      const bool sigmoid = loss_ == LossKind::kSigmoidCrossEntropy;
      for (int64_t j = 0; j < n; ++j) {
        const double w = element_weight(weights, j, per);
        const double prediction = sigmoid ? static_cast<double>(kernels::stable_sigmoid(x[j])) : x[j];
        sum += w * std::fabs(prediction - y[j]);
        count += w;
      }
    }
    state[0] += sum;
    state[1] += count;
  }

  double result(std::span<const double> state) const override { return ratio_or_zero(state[0], state[1]); }

 private:
  LossKind loss_;
};
}  // namespace

Result<std::unique_ptr<Metric>> new_mean_absolute_error(LossKind loss) {
  if (loss == LossKind::kSparseSoftmaxCrossEntropy) {
    return config_error("mean_absolute_error is not defined for sparse_softmax_cross_entropy; use accuracy");
  }
  return std::unique_ptr<Metric>(std::make_unique<MeanAbsoluteError>(loss));
}

}  // namespace dtrain

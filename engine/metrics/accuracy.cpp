// accuracy: fraction of correct class ids (softmax losses: argmax of logits
// against the label or argmax of the target, over every position of (B, P...,
// C) logits) or of correct elementwise decisions (sigmoid: logit > 0, i.e.
// sigmoid > 0.5, against target > 0.5). State: [correct, count].
#include <cassert>

#include "engine/metrics/metric_impls.hpp"

namespace dtrain {

namespace {
class Accuracy final : public Metric {
 public:
  explicit Accuracy(LossKind loss) : loss_(loss) {}
  std::string name() const override { return "accuracy"; }
  size_t state_size(const Shape&) const override { return 2; }

  void update(const Tensor& logits, const Tensor& labels, double, std::span<double> state,
              const float* weights) const override {
    assert(state.size() == 2);
    const int64_t c = classes(logits);
    const int64_t rows = c == 0 ? 0 : logits.numel() / c;  // B x positions
    const float* x = logits.data();
    const float* y = labels.data();
    const int64_t b = logits.dim(0);
    const int64_t positions = b == 0 ? 1 : rows / b;
    double correct = 0.0, count = 0.0;
    switch (loss_) {
      case LossKind::kSparseSoftmaxCrossEntropy:
        for (int64_t i = 0; i < rows; ++i) {
          const double w = element_weight(weights, i, positions);
          correct += static_cast<float>(argmax_row(x + i * c, c)) == y[i] ? w : 0.0;
          count += w;
        }
        break;
      case LossKind::kSoftmaxCrossEntropy:
        for (int64_t i = 0; i < rows; ++i) {
          const double w = element_weight(weights, i, positions);
          correct += argmax_row(x + i * c, c) == argmax_row(y + i * c, c) ? w : 0.0;
          count += w;
        }
        break;
      case LossKind::kSigmoidCrossEntropy:
        for (int64_t j = 0; j < logits.numel(); ++j) {
          const double w = element_weight(weights, j, per_example(logits));
          correct += (x[j] > 0.0f) == (y[j] > 0.5f) ? w : 0.0;
          count += w;
        }
        break;
      case LossKind::kMeanSquaredError:
        assert(false && "make_metric rejects accuracy for mean_squared_error");
        break;
    }
    state[0] += correct;
    state[1] += count;
  }

  double result(std::span<const double> state) const override { return ratio_or_zero(state[0], state[1]); }

 private:
  LossKind loss_;
};
}  // namespace

Result<std::unique_ptr<Metric>> new_accuracy(LossKind loss) {
  if (loss == LossKind::kMeanSquaredError) {
    return config_error("accuracy is not defined for mean_squared_error; use mean_absolute_error");
  }
  return std::unique_ptr<Metric>(std::make_unique<Accuracy>(loss));
}

}  // namespace dtrain

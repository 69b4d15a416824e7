// precision and recall from true-positive / false-positive / false-negative
// counts (softmax losses: one decision per position of (B, P..., C) logits). sigmoid_cross_entropy: every output element is one binary decision
// (logit > 0, i.e. sigmoid > 0.5, against target > 0.5), counts pooled over
// elements (Keras' Precision/Recall; for one output unit this is plain binary
// precision/recall); state [tp, fp, fn]. Softmax losses: per-class counts of
// the predicted class (argmax of logits) against the actual class (the label,
// or argmax of the target), state [tp_c, fp_c, fn_c] for each class c, and the
// result is the macro average over classes of tp/(tp+fp) (precision) or
// tp/(tp+fn) (recall), SKIPPING classes whose denominator is 0 (never
// predicted, resp. never present), so absent classes do not drag the average
// to 0. An empty state gives 0.
#include <cassert>

#include "engine/metrics/metric_impls.hpp"

namespace dtrain {

namespace {
class PrecisionRecall final : public Metric {
 public:
  PrecisionRecall(LossKind loss, bool recall) : loss_(loss), recall_(recall) {}
  std::string name() const override { return recall_ ? "recall" : "precision"; }

  size_t state_size(const Shape& output) const override {
    if (loss_ == LossKind::kSigmoidCrossEntropy) return 3;
    return 3 * static_cast<size_t>(output.empty() ? 1 : output.back());
  }

  void update(const Tensor& logits, const Tensor& labels, double, std::span<double> state,
              const float* weights) const override {
    const float* x = logits.data();
    const float* y = labels.data();
    if (loss_ == LossKind::kSigmoidCrossEntropy) {
      assert(state.size() == 3);
      double tp = 0.0, fp = 0.0, fn = 0.0;
      for (int64_t j = 0; j < logits.numel(); ++j) {
        const bool predicted = x[j] > 0.0f, actual = y[j] > 0.5f;
        const double w = element_weight(weights, j, per_example(logits));
        tp += predicted && actual ? w : 0.0;
        fp += predicted && !actual ? w : 0.0;
        fn += !predicted && actual ? w : 0.0;
      }
      state[0] += tp;
      state[1] += fp;
      state[2] += fn;
      return;
    }
    const int64_t c = classes(logits);
    const int64_t rows = c == 0 ? 0 : logits.numel() / c;  // B x positions: each one decision
    assert(state.size() == 3 * static_cast<size_t>(c));
    const int64_t positions = logits.dim(0) == 0 ? 1 : rows / logits.dim(0);
    for (int64_t i = 0; i < rows; ++i) {
      const double w = element_weight(weights, i, positions);
      const int64_t predicted = argmax_row(x + i * c, c);
      int64_t actual = 0;
      if (loss_ == LossKind::kSparseSoftmaxCrossEntropy) {
        // A label outside [0, c) (rejected earlier by check_labels) counts as
        // a false positive of the predicted class and touches nothing else.
        const float label = y[i];
        actual = label >= 0.0f && label < static_cast<float>(c) ? static_cast<int64_t>(label) : -1;
      } else {
        actual = argmax_row(y + i * c, c);
      }
      if (predicted == actual) {
        state[static_cast<size_t>(3 * predicted)] += w;
        continue;
      }
      state[static_cast<size_t>(3 * predicted + 1)] += w;
      if (actual >= 0) state[static_cast<size_t>(3 * actual + 2)] += w;
    }
  }

  double result(std::span<const double> state) const override {
    const size_t other = recall_ ? 2 : 1;  // fn for recall, fp for precision
    double sum = 0.0, classes = 0.0;
    for (size_t k = 0; k + 2 < state.size(); k += 3) {
      const double denominator = state[k] + state[k + other];
      if (denominator == 0.0) continue;
      sum += state[k] / denominator;
      classes += 1.0;
    }
    return ratio_or_zero(sum, classes);
  }

 private:
  LossKind loss_;
  bool recall_;
};

Result<std::unique_ptr<Metric>> make(LossKind loss, bool recall) {
  if (loss == LossKind::kMeanSquaredError) {
    return config_error(std::string(recall ? "recall" : "precision") +
                        " is not defined for mean_squared_error; use mean_absolute_error");
  }
  return std::unique_ptr<Metric>(std::make_unique<PrecisionRecall>(loss, recall));
}
}  // namespace

Result<std::unique_ptr<Metric>> new_precision(LossKind loss) { return make(loss, false); }
Result<std::unique_ptr<Metric>> new_recall(LossKind loss) { return make(loss, true); }

}  // namespace dtrain

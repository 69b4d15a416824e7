// ReportAccumulator: reads each batch's predictions and labels according to
// the loss (argmax class ids for softmax losses, p > 0.5 for a sigmoid of one
// unit, raw values for mean_squared_error) into counts, and the report from them.
#include <cassert>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "engine/metrics/eval_report.hpp"
#include "engine/metrics/metric_impls.hpp"

namespace dtrain {

ReportAccumulator::ReportAccumulator(std::string output_name, LossKind loss, Shape output)
    : name_(std::move(output_name)), loss_(loss), shape_(std::move(output)) {
  const int64_t last = shape_.empty() ? 1 : shape_.back();
  switch (loss_) {
    case LossKind::kSparseSoftmaxCrossEntropy:
    case LossKind::kSoftmaxCrossEntropy:
      classes_ = last;
      break;
    case LossKind::kSigmoidCrossEntropy:
      classes_ = last == 1 ? 2 : 0;  // more units: multi-label, no report
      break;
    case LossKind::kMeanSquaredError:
      columns_.resize(static_cast<size_t>(num_elements(shape_)));
      break;
  }
  if (classes_ > 0) {
    const size_t c = static_cast<size_t>(classes_);
    tp_.assign(c, 0);
    predicted_.assign(c, 0);
    support_.assign(c, 0);
    if (classes_ <= kReportMaxClasses) confusion_.assign(c * c, 0);
  }
}

void ReportAccumulator::add(const Tensor& predictions, const Tensor& labels) {
  const int64_t rows = predictions.rank() == 0 ? 0 : predictions.dim(0);
  if (rows == 0) return;
  const float* p = predictions.data();
  const float* y = labels.data();
  if (loss_ == LossKind::kMeanSquaredError) return add_regression(p, y, rows);
  if (loss_ == LossKind::kSigmoidCrossEntropy) {
    if (classes_ == 2) add_binary_sigmoid(p, y, predictions.numel());
    return;
  }
  add_classes(p, y, rows);
}

void ReportAccumulator::add_classes(const float* p, const float* y, int64_t rows) {
  const int64_t c = classes_;
  const int64_t decisions = rows * (num_elements(shape_) / c);  // rows x positions
  for (int64_t i = 0; i < decisions; ++i) {
    const float* scores = p + i * c;
    const int64_t predicted = argmax_row(scores, c);
    const int64_t actual =
        loss_ == LossKind::kSparseSoftmaxCrossEntropy ? static_cast<int64_t>(y[i]) : argmax_row(y + i * c, c);
    assert(actual >= 0 && actual < c);
    ++predicted_[static_cast<size_t>(predicted)];
    ++support_[static_cast<size_t>(actual)];
    if (predicted == actual) ++tp_[static_cast<size_t>(actual)];
    if (!confusion_.empty()) ++confusion_[static_cast<size_t>(actual * c + predicted)];
    if (c > kReportTopK && in_top_k(scores, c, actual, kReportTopK)) ++top_k_hits_;
    if (c == 2) scored_.emplace_back(scores[1], actual == 1);
  }
  decisions_ += decisions;
}

void ReportAccumulator::add_binary_sigmoid(const float* p, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t predicted = p[i] > 0.5f ? 1 : 0, actual = y[i] > 0.5f ? 1 : 0;
    ++predicted_[static_cast<size_t>(predicted)];
    ++support_[static_cast<size_t>(actual)];
    if (predicted == actual) ++tp_[static_cast<size_t>(actual)];
    ++confusion_[static_cast<size_t>(actual * 2 + predicted)];
    scored_.emplace_back(p[i], actual == 1);
  }
  decisions_ += n;
}

void ReportAccumulator::add_regression(const float* p, const float* y, int64_t rows) {
  const size_t m = columns_.size();
  for (int64_t i = 0; i < rows; ++i) {
    for (size_t k = 0; k < m; ++k) {
      const double target = y[static_cast<size_t>(i) * m + k], value = p[static_cast<size_t>(i) * m + k];
      Column& col = columns_[k];
      col.n += 1.0;
      const double delta = target - col.mean;
      col.mean += delta / col.n;
      col.m2 += delta * (target - col.mean);
      col.abs_sum += std::fabs(value - target);
      col.sq_sum += (value - target) * (value - target);
    }
  }
}

OutputReport ReportAccumulator::result(const std::vector<std::string>& class_names) const {
  OutputReport out;
  out.output = name_;
  out.loss = loss_kind_name(loss_);
  if (loss_ == LossKind::kMeanSquaredError) {
    out.kind = "regression";
    RegressionReport& r = out.regression;
    std::vector<double> mae, rmse, r2;
    for (const Column& col : columns_) {
      if (col.n == 0.0) continue;
      r.values += static_cast<int64_t>(col.n);
      mae.push_back(col.abs_sum / col.n);
      rmse.push_back(std::sqrt(col.sq_sum / col.n));
      // r2_score's force_finite: a constant target gives 1 (perfect) or 0.
      r2.push_back(col.m2 == 0.0 ? (col.sq_sum == 0.0 ? 1.0 : 0.0) : 1.0 - col.sq_sum / col.m2);
    }
    const double n = static_cast<double>(mae.size());
    r.mae = divide_or_zero(numpy_sum(mae), n);
    r.rmse = divide_or_zero(numpy_sum(rmse), n);
    r.r2 = divide_or_zero(numpy_sum(r2), n);
    return out;
  }
  if (classes_ == 0) {
    out.kind = "none";
    out.note = "sigmoid_cross_entropy of more than one unit is multi-label: no per-class report yet";
    return out;
  }
  out.kind = "classification";
  ClassificationReport& r = out.classification;
  const size_t c = static_cast<size_t>(classes_);
  r.true_positives = tp_;
  r.predicted = predicted_;
  r.support = support_;
  finish_classification(r);
  if (!confusion_.empty()) {
    r.confusion.assign(c, std::vector<int64_t>(c, 0));
    for (size_t t = 0; t < c; ++t) {
      for (size_t q = 0; q < c; ++q) r.confusion[t][q] = confusion_[t * c + q];
    }
    for (size_t k = 0; k < c; ++k) r.class_names.push_back(k < class_names.size() ? class_names[k] : std::to_string(k));
  } else {
    // Too many classes for a matrix or rows: the averages only.
    r.per_class.clear();
    r.true_positives.clear();
    r.predicted.clear();
    r.support.clear();
    out.note = fmt::format("{} classes (more than {}): no confusion matrix and no per-class rows", classes_,
                           kReportMaxClasses);
  }
  if (classes_ > kReportTopK) {
    r.top_k_accuracy = divide_or_zero(static_cast<double>(top_k_hits_), static_cast<double>(decisions_));
  }
  r.binary = classes_ == 2;
  if (r.binary) r.roc_auc = roc_auc(scored_);
  return out;
}

}  // namespace dtrain

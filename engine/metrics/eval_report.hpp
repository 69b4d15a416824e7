// The evaluation report of one model output, over the whole evaluated set:
// for classification per-class precision, recall, F1 and support, the
// confusion matrix, macro/micro/weighted averages, top-5 accuracy (more than
// 5 classes) and ROC AUC (binary); for regression MAE, RMSE and R².
// Definitions are scikit-learn's (classification_report with
// zero_division=0, confusion_matrix, top_k_accuracy_score, roc_auc_score,
// mean_absolute_error, root_mean_squared_error, r2_score), and averages add
// in NumPy's order, so a report equals scikit-learn's on the same
// predictions (the values `dtrain predict` writes).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/losses/loss_kind.hpp"
#include "engine/tensor.hpp"

namespace dtrain {

// Above this many classes the report keeps no confusion matrix and no
// per-class rows (a C x C matrix of a 32k-token vocabulary would not fit),
// only accuracy, top-5 accuracy and the averages.
inline constexpr int64_t kReportMaxClasses = 1000;
// top_k_accuracy's k, reported when there are more than k classes.
inline constexpr int64_t kReportTopK = 5;

struct ClassScores {
  double precision = 0, recall = 0, f1 = 0;
};

struct ClassificationReport {
  int64_t num_classes = 0;
  int64_t decisions = 0;                 // rows x positions: each one predicted class
  std::vector<std::string> class_names;  // one per class (ids "0", "1", ... unless given)
  // Per class: tp, predicted (tp + fp) and support (tp + fn); empty above kReportMaxClasses.
  std::vector<int64_t> true_positives, predicted, support;
  std::vector<ClassScores> per_class;    // empty above kReportMaxClasses
  // (num_classes x num_classes), row = true class, column = predicted; empty
  // above kReportMaxClasses.
  std::vector<std::vector<int64_t>> confusion;
  double accuracy = 0;
  ClassScores macro, micro, weighted;
  std::optional<double> top_k_accuracy;  // k = kReportTopK, more than k classes only
  bool binary = false;                   // two classes: roc_auc is defined
  // Binary only; empty when the evaluated set holds one class only (AUC is
  // then undefined, as scikit-learn says).
  std::optional<double> roc_auc;
};

struct RegressionReport {
  int64_t values = 0;  // rows x elements
  // Per output element, averaged uniformly over elements (scikit-learn's
  // multioutput="uniform_average"); one element is the plain statistic.
  double mae = 0, rmse = 0, r2 = 0;
};

// kind: "classification", "regression", or "none" with `note` saying why
// there is no report (sigmoid outputs of more than one unit: multi-label).
struct OutputReport {
  std::string output;  // model.outputs name; "" for the model.loss shorthand
  std::string loss;    // the loss name
  std::string kind;
  std::string note;    // what was left out and why ("" when nothing)
  ClassificationReport classification;
  RegressionReport regression;
};

// --- The math, on counts (exposed for the tests) ---

// NumPy's float64 sum (pairwise, blocks of 8 unrolled up to 128 elements,
// from an initial 0), so averages round as np.mean / np.average do.
double numpy_sum(std::span<const double> x);
// a / b, or 0 when b == 0 (scikit-learn's zero_division=0).
double divide_or_zero(double a, double b);
// Fills per_class, accuracy and the macro, micro and weighted averages from
// true_positives, predicted and support (one per class; REQUIRES equal sizes).
void finish_classification(ClassificationReport& r);
// A report of the square `confusion` (row = true class, column = predicted):
// the matrix, its counts and finish_classification's figures.
ClassificationReport report_from_confusion(std::vector<std::vector<int64_t>> confusion);
// ROC AUC of scores against binary labels (true = positive class): the
// probability that a random positive scores above a random negative, ties
// counting one half (what roc_auc_score's trapezoids compute). Empty when
// all labels are equal.
std::optional<double> roc_auc(std::vector<std::pair<float, bool>> scored);
// Whether `label` is among the k highest of scores[0..c): scikit-learn's
// top_k_accuracy_score ranks a tie of equal scores by class, higher first
// (argsort of a stable sort, reversed).
bool in_top_k(const float* scores, int64_t c, int64_t label, int64_t k);

// --- Accumulation over the evaluated set ---

// Gathers one output's predictions and labels batch by batch; result() turns
// them into the report. Not thread-safe.
class ReportAccumulator {
 public:
  // output: the model output's shape without the batch dimension.
  ReportAccumulator(std::string output_name, LossKind loss, Shape output);
  // predictions: (B, output...) what Loss::predictions gives (probabilities,
  // or raw values for mean_squared_error), on the host; labels: as for the
  // loss, (B, P...) class ids for sparse_softmax_cross_entropy, else
  // (B, output...). REQUIRES: labels were checked (check_batch_labels).
  void add(const Tensor& predictions, const Tensor& labels);
  // class_names: one per class, or empty for the class ids.
  OutputReport result(const std::vector<std::string>& class_names = {}) const;

 private:
  void add_classes(const float* p, const float* y, int64_t rows);
  void add_binary_sigmoid(const float* p, const float* y, int64_t n);
  void add_regression(const float* p, const float* y, int64_t rows);

  std::string name_;
  LossKind loss_;
  Shape shape_;
  int64_t classes_ = 0;  // softmax: the last dimension; sigmoid of one unit: 2
  int64_t decisions_ = 0;
  std::vector<int64_t> confusion_;  // classes_ x classes_ when classes_ <= kReportMaxClasses
  std::vector<int64_t> tp_, predicted_, support_;
  int64_t top_k_hits_ = 0;
  std::vector<std::pair<float, bool>> scored_;  // binary: (score of class 1, label is 1)
  // Regression, per output element: count, mean and M2 of the targets
  // (Chan et al.'s merge), sums of |error| and error².
  struct Column {
    double n = 0, mean = 0, m2 = 0, abs_sum = 0, sq_sum = 0;
  };
  std::vector<Column> columns_;
};

}  // namespace dtrain

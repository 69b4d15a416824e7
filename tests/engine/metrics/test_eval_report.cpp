// Tests for the evaluation report (engine/metrics/eval_report.hpp): the
// per-class and averaged figures of small confusion matrices worked by hand
// (and checked against scikit-learn 1.9: precision_recall_fscore_support with
// zero_division=0, roc_auc_score, top_k_accuracy_score, r2_score), zero
// divisions, ties in AUC and top-k, NumPy's summation order, the accumulator
// over batches and the heat map's pixels.
#include <doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/metrics/confusion_image.hpp"
#include "engine/metrics/eval_report.hpp"

namespace dtrain {
namespace {

Tensor tensor(Shape shape, std::vector<float> values) {
  Tensor t(std::move(shape));
  REQUIRE(static_cast<size_t>(t.numel()) == values.size());
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

}  // namespace

TEST_CASE("eval report: per-class and averaged figures of a 3-class matrix with an absent class") {
  // rows = true class: class 2 is neither present nor predicted (zero division).
  const ClassificationReport r = report_from_confusion({{5, 1, 0}, {2, 3, 0}, {0, 0, 0}});
  CHECK(r.num_classes == 3);
  CHECK(r.decisions == 11);
  CHECK(r.support == std::vector<int64_t>{6, 5, 0});
  CHECK(r.predicted == std::vector<int64_t>{7, 4, 0});
  CHECK(r.true_positives == std::vector<int64_t>{5, 3, 0});
  REQUIRE(r.per_class.size() == 3);
  CHECK(r.per_class[0].precision == 5.0 / 7.0);
  CHECK(r.per_class[0].recall == 5.0 / 6.0);
  CHECK(r.per_class[0].f1 == 10.0 / 13.0);
  CHECK(r.per_class[1].precision == 3.0 / 4.0);
  CHECK(r.per_class[1].recall == 3.0 / 5.0);
  CHECK(r.per_class[1].f1 == 6.0 / 9.0);
  CHECK(r.per_class[2].precision == 0.0);
  CHECK(r.per_class[2].recall == 0.0);
  CHECK(r.per_class[2].f1 == 0.0);
  // scikit-learn: macro (0.48809523809523814, 0.4777777777777778, 0.47863247863247865),
  // micro 8/11 each, weighted (0.7305194805194805, 8/11, 0.7226107226107227).
  CHECK(r.macro.precision == 0.48809523809523814);
  CHECK(r.macro.recall == 0.4777777777777778);
  CHECK(r.macro.f1 == 0.47863247863247865);
  CHECK(r.micro.precision == 8.0 / 11.0);
  CHECK(r.micro.recall == 8.0 / 11.0);
  CHECK(r.micro.f1 == 8.0 / 11.0);
  CHECK(r.weighted.precision == 0.7305194805194805);
  CHECK(r.weighted.recall == 0.7272727272727273);
  CHECK(r.weighted.f1 == 0.7226107226107227);
  CHECK(r.accuracy == 8.0 / 11.0);
  CHECK(r.class_names == std::vector<std::string>{"0", "1", "2"});
}

TEST_CASE("eval report: a class present but never predicted has precision 0, not NaN") {
  const ClassificationReport r = report_from_confusion({{0, 2}, {0, 3}});
  CHECK(r.per_class[0].precision == 0.0);
  CHECK(r.per_class[0].recall == 0.0);
  CHECK(r.per_class[0].f1 == 0.0);
  CHECK(r.per_class[1].precision == 0.6);
  CHECK(r.per_class[1].recall == 1.0);
  CHECK(r.per_class[1].f1 == 0.75);
  CHECK(r.macro.precision == 0.3);
}

TEST_CASE("eval report: an empty matrix gives zeros everywhere") {
  const ClassificationReport r = report_from_confusion({{0, 0}, {0, 0}});
  CHECK(r.decisions == 0);
  CHECK(r.accuracy == 0.0);
  for (const ClassScores& s : {r.macro, r.micro, r.weighted, r.per_class[0], r.per_class[1]}) {
    CHECK(s.precision == 0.0);
    CHECK(s.recall == 0.0);
    CHECK(s.f1 == 0.0);
  }
}

TEST_CASE("eval report: sums add in NumPy's pairwise order") {
  // 1e16 followed by nineteen 1s: a left-to-right sum loses every 1,
  // np.sum (pairwise, 8 partial sums) keeps 8 of them.
  std::vector<double> x(20, 1.0);
  x[0] = 1e16;
  CHECK(numpy_sum(x) == 0x1.1c37937e08008p+53);
  double left_to_right = 0;
  for (double v : x) left_to_right += v;
  CHECK(left_to_right == 0x1.1c37937e08000p+53);
  CHECK(numpy_sum(std::vector<double>{}) == 0.0);
  CHECK(divide_or_zero(1, 0) == 0.0);
}

TEST_CASE("eval report: ROC AUC counts ties as one half") {
  CHECK(roc_auc({{0.1f, false}, {0.4f, false}, {0.35f, true}, {0.8f, true}}) == 0.75);
  CHECK(roc_auc({{0.5f, false}, {0.5f, true}, {0.5f, false}, {0.5f, true}}) == 0.5);
  // The positive at 0.5 beats the negative at 0.2 and ties the one at 0.5.
  CHECK(roc_auc({{0.2f, false}, {0.5f, false}, {0.5f, true}, {0.9f, true}}) == 0.875);
  CHECK(roc_auc({{0.9f, false}, {0.1f, true}}) == 0.0);
  CHECK_FALSE(roc_auc({{0.2f, true}, {0.7f, true}}).has_value());  // one class only
  CHECK_FALSE(roc_auc({}).has_value());
}

TEST_CASE("eval report: top-k ranks a tie by class, higher class first (scikit-learn)") {
  // Six classes tie at 0.2: class 0 has five tied classes above it.
  const float scores[7] = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f, 0.2f, 0.0f};
  CHECK_FALSE(in_top_k(scores, 7, 0, 5));
  CHECK(in_top_k(scores, 7, 1, 5));
  CHECK_FALSE(in_top_k(scores, 7, 6, 5));
  const float distinct[7] = {0.7f, 0.1f, 0.05f, 0.05f, 0.04f, 0.03f, 0.03f};
  CHECK(in_top_k(distinct, 7, 4, 5));
  CHECK_FALSE(in_top_k(distinct, 7, 5, 5));
}

TEST_CASE("eval report: the accumulator reads softmax rows, in any batching") {
  // 4 examples, 3 classes: predicted 0, 1, 1, 2 against labels 0, 1, 2, 2.
  const Tensor p = tensor({4, 3}, {0.6f, 0.3f, 0.1f, 0.2f, 0.5f, 0.3f, 0.1f, 0.5f, 0.4f, 0.2f, 0.2f, 0.6f});
  const Tensor y = tensor({4}, {0, 1, 2, 2});
  ReportAccumulator whole("", LossKind::kSparseSoftmaxCrossEntropy, {3});
  whole.add(p, y);
  ReportAccumulator halves("", LossKind::kSparseSoftmaxCrossEntropy, {3});
  halves.add(p.rows(0, 1), y.rows(0, 1));
  halves.add(p.rows(1, 4), y.rows(1, 4));
  for (const OutputReport& r : {whole.result({"cat", "dog", "eel"}), halves.result({"cat", "dog", "eel"})}) {
    CHECK(r.kind == "classification");
    CHECK(r.loss == "sparse_softmax_cross_entropy");
    const ClassificationReport& c = r.classification;
    CHECK(c.confusion == std::vector<std::vector<int64_t>>{{1, 0, 0}, {0, 1, 0}, {0, 1, 1}});
    CHECK(c.class_names == std::vector<std::string>{"cat", "dog", "eel"});
    CHECK(c.accuracy == 0.75);
    CHECK(c.per_class[2].recall == 0.5);
    CHECK_FALSE(c.top_k_accuracy.has_value());  // 3 classes: no top-5
    CHECK_FALSE(c.binary);
  }
  // One-hot targets (softmax_cross_entropy) give the same matrix.
  const Tensor onehot = tensor({4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1});
  ReportAccumulator dense("", LossKind::kSoftmaxCrossEntropy, {3});
  dense.add(p, onehot);
  CHECK(dense.result().classification.confusion == std::vector<std::vector<int64_t>>{{1, 0, 0}, {0, 1, 0}, {0, 1, 1}});
}

TEST_CASE("eval report: sequence outputs count every position; top-5 above 5 classes") {
  // 1 example, 2 positions, 6 classes: label 5 at both; position 0 ranks it
  // 6th (last), position 1 first.
  const Tensor p = tensor({1, 2, 6}, {0.3f, 0.25f, 0.2f, 0.15f, 0.07f, 0.03f, 0.0f, 0.1f, 0.1f, 0.1f, 0.1f, 0.6f});
  ReportAccumulator acc("tags", LossKind::kSparseSoftmaxCrossEntropy, {2, 6});
  acc.add(p, tensor({1, 2}, {5, 5}));
  const OutputReport r = acc.result();
  CHECK(r.output == "tags");
  CHECK(r.classification.decisions == 2);
  REQUIRE(r.classification.top_k_accuracy.has_value());
  CHECK(*r.classification.top_k_accuracy == 0.5);
  CHECK(r.classification.confusion[5][0] == 1);
  CHECK(r.classification.confusion[5][5] == 1);
}

TEST_CASE("eval report: binary outputs (sigmoid of one unit, softmax of two) have ROC AUC") {
  ReportAccumulator sigmoid("", LossKind::kSigmoidCrossEntropy, {1});
  sigmoid.add(tensor({4, 1}, {0.2f, 0.5f, 0.5f, 0.9f}), tensor({4, 1}, {0, 0, 1, 1}));
  const OutputReport r = sigmoid.result();
  REQUIRE(r.kind == "classification");
  CHECK(r.classification.binary);
  REQUIRE(r.classification.roc_auc.has_value());
  CHECK(*r.classification.roc_auc == 0.875);
  // p > 0.5 predicts 1: 0.5 is predicted 0.
  CHECK(r.classification.confusion == std::vector<std::vector<int64_t>>{{2, 0}, {1, 1}});

  ReportAccumulator softmax("", LossKind::kSparseSoftmaxCrossEntropy, {2});
  softmax.add(tensor({3, 2}, {0.9f, 0.1f, 0.4f, 0.6f, 0.3f, 0.7f}), tensor({3}, {0, 0, 1}));
  const OutputReport s = softmax.result();
  CHECK(s.classification.binary);
  CHECK(*s.classification.roc_auc == 1.0);

  ReportAccumulator one_class("", LossKind::kSparseSoftmaxCrossEntropy, {2});
  one_class.add(tensor({2, 2}, {0.9f, 0.1f, 0.4f, 0.6f}), tensor({2}, {0, 0}));
  CHECK_FALSE(one_class.result().classification.roc_auc.has_value());

  ReportAccumulator multilabel("", LossKind::kSigmoidCrossEntropy, {3});
  multilabel.add(tensor({1, 3}, {0.2f, 0.5f, 0.9f}), tensor({1, 3}, {0, 0, 1}));
  CHECK(multilabel.result().kind == "none");
  CHECK(multilabel.result().note ==
        "sigmoid_cross_entropy of more than one unit is multi-label: no per-class report yet");
}

TEST_CASE("eval report: regression MAE, RMSE and R², averaged over output elements") {
  ReportAccumulator one("", LossKind::kMeanSquaredError, {1});
  one.add(tensor({2, 1}, {1, 2}), tensor({2, 1}, {1, 2}));
  one.add(tensor({2, 1}, {3, 5}), tensor({2, 1}, {3, 4}));
  const OutputReport r = one.result();
  CHECK(r.kind == "regression");
  CHECK(r.regression.values == 4);
  CHECK(r.regression.mae == 0.25);
  CHECK(r.regression.rmse == 0.5);
  CHECK(r.regression.r2 == doctest::Approx(0.8).epsilon(1e-15));
  // A constant target: R² is 1 when predicted exactly, else 0 (r2_score's force_finite).
  ReportAccumulator constant("", LossKind::kMeanSquaredError, {2});
  constant.add(tensor({2, 2}, {2, 7, 2, 8}), tensor({2, 2}, {2, 7, 2, 7}));
  const RegressionReport c = constant.result().regression;
  CHECK(c.r2 == 0.5);  // (1 + 0) / 2
  CHECK(c.mae == 0.25);  // (0 + 0.5) / 2
  CHECK(c.rmse == doctest::Approx((0.0 + std::sqrt(0.5)) / 2).epsilon(1e-15));
}

TEST_CASE("eval report: more classes than kReportMaxClasses keep the averages only") {
  const int64_t c = kReportMaxClasses + 1;
  Tensor p({2, c});
  p.data()[3] = 1.0f;            // row 0 predicts 3
  p.data()[c + 7] = 1.0f;        // row 1 predicts 7
  ReportAccumulator acc("", LossKind::kSparseSoftmaxCrossEntropy, {c});
  acc.add(p, tensor({2}, {3, 8}));
  const OutputReport r = acc.result();
  CHECK(r.classification.confusion.empty());
  CHECK(r.classification.per_class.empty());
  CHECK(r.classification.accuracy == 0.5);
  CHECK(r.classification.micro.f1 == 0.5);
  CHECK(r.note == "1001 classes (more than 1000): no confusion matrix and no per-class rows");
}

TEST_CASE("confusion heat map: cell sizes, colours by row share, grid and absent classes") {
  const Image8 img = confusion_heat_map({{2, 0, 0}, {1, 1, 0}, {0, 0, 0}});
  CHECK(img.channels == 3);
  CHECK(img.height == 3 * 64);  // 512 / 3 = 170 px, at most 64
  CHECK(img.width == 3 * 64);
  auto px = [&](int y, int x) {
    const uint8_t* p = &img.pixels[(static_cast<size_t>(y) * static_cast<size_t>(img.width) + static_cast<size_t>(x)) * 3];
    return std::vector<int>{p[0], p[1], p[2]};
  };
  CHECK(px(10, 10) == std::vector<int>{8, 48, 107});     // all of row 0
  CHECK(px(10, 74) == std::vector<int>{255, 255, 255});  // none
  CHECK(px(74, 10) == std::vector<int>{132, 152, 181});  // half of row 1: 255 - 0.5 (255 - dark), rounded
  CHECK(px(138, 10) == std::vector<int>{200, 200, 200}); // class 2 absent
  CHECK(px(0, 10) == std::vector<int>{128, 128, 128});   // grid line
  const Image8 big = confusion_heat_map(std::vector<std::vector<int64_t>>(600, std::vector<int64_t>(600, 1)));
  CHECK(big.height == 600);  // cells of 1 pixel, no grid
}

}  // namespace dtrain

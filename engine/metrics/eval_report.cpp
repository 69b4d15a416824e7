// The report's math on counts: scikit-learn's per-class and averaged
// precision/recall/F1, top-k membership and ROC AUC (see eval_report.hpp).
#include "engine/metrics/eval_report.hpp"

#include <algorithm>
#include <cassert>

namespace dtrain {

namespace {
// NumPy's pairwise_sum (numpy/_core/src/umath/loops_utils.h.src) for n elements.
double pairwise_sum(const double* a, size_t n) {
  if (n < 8) {
    double r = 0.0;
    for (size_t i = 0; i < n; ++i) r += a[i];
    return r;
  }
  if (n <= 128) {
    double r[8];
    for (size_t j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - n % 8; i += 8) {
      for (size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}
}  // namespace

double numpy_sum(std::span<const double> x) { return 0.0 + pairwise_sum(x.data(), x.size()); }

double divide_or_zero(double a, double b) { return b == 0.0 ? 0.0 : a / b; }

void finish_classification(ClassificationReport& r) {
  const size_t c = r.support.size();
  assert(r.true_positives.size() == c && r.predicted.size() == c);
  r.num_classes = static_cast<int64_t>(c);
  // Per class, as _precision_recall_fscore_support: F1 = 2 tp / (support + predicted).
  std::vector<double> precision(c), recall(c), f1(c), weights(c), weighted_p(c), weighted_r(c), weighted_f(c);
  r.per_class.assign(c, {});
  int64_t tp_sum = 0, predicted_sum = 0, support_sum = 0;
  for (size_t k = 0; k < c; ++k) {
    const double tp = static_cast<double>(r.true_positives[k]), pred = static_cast<double>(r.predicted[k]),
                 sup = static_cast<double>(r.support[k]);
    precision[k] = divide_or_zero(tp, pred);
    recall[k] = divide_or_zero(tp, sup);
    f1[k] = divide_or_zero(2.0 * tp, sup + pred);
    r.per_class[k] = {precision[k], recall[k], f1[k]};
    weights[k] = sup;
    weighted_p[k] = precision[k] * sup;
    weighted_r[k] = recall[k] * sup;
    weighted_f[k] = f1[k] * sup;
    tp_sum += r.true_positives[k];
    predicted_sum += r.predicted[k];
    support_sum += r.support[k];
  }
  r.decisions = support_sum;
  r.accuracy = divide_or_zero(static_cast<double>(tp_sum), static_cast<double>(support_sum));
  // macro: np.mean; weighted: np.average(x, weights=support) = sum(x * w) / sum(w),
  // the plain mean when every weight is 0; micro: ratios of the summed counts.
  const double n = static_cast<double>(c);
  r.macro = {divide_or_zero(numpy_sum(precision), n), divide_or_zero(numpy_sum(recall), n),
             divide_or_zero(numpy_sum(f1), n)};
  const double w = numpy_sum(weights);
  r.weighted = w == 0.0 ? r.macro
                        : ClassScores{numpy_sum(weighted_p) / w, numpy_sum(weighted_r) / w, numpy_sum(weighted_f) / w};
  const double tp = static_cast<double>(tp_sum), pred = static_cast<double>(predicted_sum),
               sup = static_cast<double>(support_sum);
  r.micro = {divide_or_zero(tp, pred), divide_or_zero(tp, sup), divide_or_zero(2.0 * tp, sup + pred)};
}

ClassificationReport report_from_confusion(std::vector<std::vector<int64_t>> confusion) {
  ClassificationReport r;
  const size_t c = confusion.size();
  r.true_positives.assign(c, 0);
  r.predicted.assign(c, 0);
  r.support.assign(c, 0);
  for (size_t t = 0; t < c; ++t) {
    assert(confusion[t].size() == c);
    for (size_t p = 0; p < c; ++p) {
      r.support[t] += confusion[t][p];
      r.predicted[p] += confusion[t][p];
    }
    r.true_positives[t] = confusion[t][t];
  }
  r.confusion = std::move(confusion);
  finish_classification(r);
  for (size_t k = 0; k < c; ++k) r.class_names.push_back(std::to_string(k));
  return r;
}

std::optional<double> roc_auc(std::vector<std::pair<float, bool>> scored) {
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Mann-Whitney U over groups of equal scores: a positive beats every
  // negative below its group and ties half of those in it. Counts are
  // integers (twice U, to stay integral), exact in int64.
  int64_t negatives_below = 0, positives = 0, twice_u = 0;
  for (size_t i = 0; i < scored.size();) {
    size_t j = i;
    int64_t pos = 0, neg = 0;
    for (; j < scored.size() && scored[j].first == scored[i].first; ++j) (scored[j].second ? pos : neg) += 1;
    twice_u += pos * (2 * negatives_below + neg);
    negatives_below += neg;
    positives += pos;
    i = j;
  }
  if (positives == 0 || negatives_below == 0) return std::nullopt;
  return static_cast<double>(twice_u) / (2.0 * static_cast<double>(positives) * static_cast<double>(negatives_below));
}

bool in_top_k(const float* scores, int64_t c, int64_t label, int64_t k) {
  const float s = scores[label];
  int64_t above = 0;
  for (int64_t j = 0; j < c; ++j) {
    if (scores[j] > s || (scores[j] == s && j > label)) ++above;
  }
  return above < k;
}

}  // namespace dtrain

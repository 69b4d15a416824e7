// The losses' CPU kernels (engine/kernels/losses.hpp).
#include "engine/kernels/losses.hpp"

#include <limits>

namespace dtrain::kernels {

void sparse_softmax_xent_rows(const float* logits, const float* labels, float* dlogits, float row_scale,
                              double* row_losses, int64_t rows, int64_t c, const float* w, int64_t positions) {
  for (int64_t p = 0; p < rows; ++p) {
    const float* row = logits + p * c;
    const double lse = log_sum_exp(row, c);
    const float label = labels[p];
    const bool valid = label >= 0.0f && label < static_cast<float>(c) && label == std::floor(label);
    const int64_t k = valid ? static_cast<int64_t>(label) : 0;
    row_losses[p] = valid ? lse - static_cast<double>(row[k]) : std::numeric_limits<double>::quiet_NaN();
    const float weight = w != nullptr ? w[p / positions] : 1.0f;
    if (w != nullptr) row_losses[p] *= static_cast<double>(weight);
    if (dlogits != nullptr) {
      const float scale = w != nullptr ? row_scale * weight : row_scale;
      float* g = dlogits + p * c;
      softmax_from_lse(row, lse, scale, g, c);
      if (valid) {
        g[k] -= scale;
      } else {
        for (int64_t j = 0; j < c; ++j) g[j] = std::numeric_limits<float>::quiet_NaN();
      }
    }
  }
}

double softmax_xent(const float* x, const float* t, float* g, float grad_scale, int64_t b, int64_t c,
                    const float* w) {
  double total = 0.0;
  for (int64_t i = 0; i < b; ++i) {
    const float* row = x + i * c;
    const float* trow = t + i * c;
    const double lse = log_sum_exp(row, c);
    double tsum = 0.0, tx = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      tsum += static_cast<double>(trow[j]);
      tx += static_cast<double>(trow[j]) * static_cast<double>(row[j]);
    }
    total += w != nullptr ? static_cast<double>(w[i]) * (lse * tsum - tx) : lse * tsum - tx;
    if (g != nullptr) {
      const float scale = w != nullptr ? grad_scale * w[i] : grad_scale;
      float* grow = g + i * c;
      softmax_from_lse(row, lse, scale * static_cast<float>(tsum), grow, c);
      for (int64_t j = 0; j < c; ++j) grow[j] -= scale * trow[j];
    }
  }
  return total;
}

namespace {
// grad_scale * w[i], or grad_scale without weights.
float example_scale(float grad_scale, const float* w, int64_t i) { return w != nullptr ? grad_scale * w[i] : grad_scale; }
// The weighted sum over examples of `per_example` (already a mean over its elements).
double weigh(double total, double per_example, const float* w, int64_t i) {
  return total + (w != nullptr ? static_cast<double>(w[i]) * per_example : per_example);
}
}  // namespace

double sigmoid_xent(const float* x, const float* t, float* g, float grad_scale, int64_t b, int64_t n,
                    const float* w) {
  double total = 0.0;
  for (int64_t i = 0; i < b; ++i) {
    double sum = 0.0;
    for (int64_t j = i * n; j < (i + 1) * n; ++j) {
      const float xv = x[j];
      sum += static_cast<double>(std::fmax(xv, 0.0f) - xv * t[j] + std::log1p(std::exp(-std::fabs(xv))));
    }
    total = weigh(total, sum / static_cast<double>(n), w, i);
  }
  if (g != nullptr && n > 0) {
    for (int64_t i = 0; i < b; ++i) {
      const float gscale = example_scale(grad_scale, w, i) / static_cast<float>(n);
      for (int64_t j = i * n; j < (i + 1) * n; ++j) g[j] = gscale * (stable_sigmoid(x[j]) - t[j]);
    }
  }
  return total;
}

double mean_squared_error(const float* x, const float* t, float* g, float grad_scale, int64_t b, int64_t n,
                          const float* w) {
  double total = 0.0;
  for (int64_t i = 0; i < b; ++i) {
    double sum = 0.0;
    for (int64_t j = i * n; j < (i + 1) * n; ++j) {
      const double d = static_cast<double>(x[j]) - static_cast<double>(t[j]);
      sum += d * d;
    }
    total = weigh(total, sum / static_cast<double>(n), w, i);
  }
  if (g != nullptr && n > 0) {
    for (int64_t i = 0; i < b; ++i) {
      const float gscale = 2.0f * example_scale(grad_scale, w, i) / static_cast<float>(n);
      for (int64_t j = i * n; j < (i + 1) * n; ++j) g[j] = gscale * (x[j] - t[j]);
    }
  }
  return total;
}

}  // namespace dtrain::kernels

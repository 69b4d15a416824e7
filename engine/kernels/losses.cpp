// The losses' CPU kernels (engine/kernels/losses.hpp).
#include "engine/kernels/losses.hpp"

#include <limits>

namespace dtrain::kernels {

void sparse_softmax_xent_rows(const float* logits, const float* labels, float* dlogits, float row_scale,
                              double* row_losses, int64_t rows, int64_t c) {
  for (int64_t p = 0; p < rows; ++p) {
    const float* row = logits + p * c;
    const double lse = log_sum_exp(row, c);
    const float label = labels[p];
    const bool valid = label >= 0.0f && label < static_cast<float>(c) && label == std::floor(label);
    const int64_t k = valid ? static_cast<int64_t>(label) : 0;
    row_losses[p] = valid ? lse - static_cast<double>(row[k]) : std::numeric_limits<double>::quiet_NaN();
    if (dlogits != nullptr) {
      float* g = dlogits + p * c;
      softmax_from_lse(row, lse, row_scale, g, c);
      if (valid) {
        g[k] -= row_scale;
      } else {
        for (int64_t j = 0; j < c; ++j) g[j] = std::numeric_limits<float>::quiet_NaN();
      }
    }
  }
}

double softmax_xent(const float* x, const float* t, float* g, float grad_scale, int64_t b, int64_t c) {
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
    total += lse * tsum - tx;
    if (g != nullptr) {
      float* grow = g + i * c;
      softmax_from_lse(row, lse, grad_scale * static_cast<float>(tsum), grow, c);
      for (int64_t j = 0; j < c; ++j) grow[j] -= grad_scale * trow[j];
    }
  }
  return total;
}

double sigmoid_xent(const float* x, const float* t, float* g, float grad_scale, int64_t b, int64_t n) {
  double total = 0.0;
  for (int64_t i = 0; i < b; ++i) {
    double sum = 0.0;
    for (int64_t j = i * n; j < (i + 1) * n; ++j) {
      const float xv = x[j];
      sum += static_cast<double>(std::fmax(xv, 0.0f) - xv * t[j] + std::log1p(std::exp(-std::fabs(xv))));
    }
    total += sum / static_cast<double>(n);
  }
  if (g != nullptr) {
    const float gscale = n == 0 ? 0.0f : grad_scale / static_cast<float>(n);
    for (int64_t j = 0; j < b * n; ++j) g[j] = gscale * (stable_sigmoid(x[j]) - t[j]);
  }
  return total;
}

double mean_squared_error(const float* x, const float* t, float* g, float grad_scale, int64_t b, int64_t n) {
  double total = 0.0;
  for (int64_t i = 0; i < b; ++i) {
    double sum = 0.0;
    for (int64_t j = i * n; j < (i + 1) * n; ++j) {
      const double d = static_cast<double>(x[j]) - static_cast<double>(t[j]);
      sum += d * d;
    }
    total += sum / static_cast<double>(n);
  }
  if (g != nullptr) {
    const float gscale = n == 0 ? 0.0f : 2.0f * grad_scale / static_cast<float>(n);
    for (int64_t j = 0; j < b * n; ++j) g[j] = gscale * (x[j] - t[j]);
  }
  return total;
}

}  // namespace dtrain::kernels

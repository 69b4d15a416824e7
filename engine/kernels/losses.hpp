// The four losses' float32 CPU kernels (engine/losses/ holds their shape
// rules and table; ops/loss_ops.hpp dispatches them) and the row helpers they
// share with the predictions and metrics. Sums are in double, in element and
// example order, on the calling thread: results do not depend on the thread
// count. The CUDA module's sparse cross-entropy follows the same order
// (engine/cuda/backend_kernels.cu). Thread-safe.
#pragma once

#include <cmath>
#include <cstdint>

namespace dtrain::kernels {

// log(sum_c exp(x[c])) computed as max + log(sum exp(x - max)), summed in double.
// REQUIRES: c >= 1.
inline double log_sum_exp(const float* x, int64_t c) {
  float m = x[0];
  for (int64_t j = 1; j < c; ++j) m = x[j] > m ? x[j] : m;
  double s = 0.0;
  for (int64_t j = 0; j < c; ++j) s += static_cast<double>(std::exp(x[j] - m));
  return static_cast<double>(m) + std::log(s);
}

// out[j] = scale * softmax(x)[j] given lse = log_sum_exp(x, c). out may alias x.
inline void softmax_from_lse(const float* x, double lse, float scale, float* out, int64_t c) {
  const float l = static_cast<float>(lse);
  for (int64_t j = 0; j < c; ++j) out[j] = scale * std::exp(x[j] - l);
}

// A sigmoid that never exponentiates a positive number (stable in both tails).
inline float stable_sigmoid(float x) {
  const float e = std::exp(-std::fabs(x));
  return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

// Example weights: `w`, when not null, holds one weight per example; an
// example's loss and its gradient are multiplied by it (Keras' sample_weight
// and class_weight). Null weighs every example 1, bit for bit as no weight.

// Sparse softmax cross-entropy over `rows` rows of `c` logits, labels (rows)
// class ids as floats: row_losses[r] (host) := lse(x_r) - x_r[label_r], NaN
// for a label that is not an integer in [0, c); dlogits (rows, c) or null :=
// row_scale * (softmax(x_r) - onehot(label_r)), a NaN row for a bad label.
// Rows come `positions` per example: with weights, row r's loss and gradient
// are multiplied by w[r / positions].
void sparse_softmax_xent_rows(const float* logits, const float* labels, float* dlogits, float row_scale,
                              double* row_losses, int64_t rows, int64_t c, const float* w = nullptr,
                              int64_t positions = 1);

// The other three over b examples of n elements, x and t (b, n) logits (the
// prediction for mean squared error) and targets; g (b, n) or null, set to
// grad_scale * d(sum)/dx. Each returns the sum over examples of (w[i] times):
//   softmax_xent: lse(x) * sum(t) - sum(t x) (t need not sum to one);
//   sigmoid_xent: the mean over elements of max(x, 0) - x t + log1p(exp(-|x|));
//   mean_squared_error: the mean over elements of (x - t)^2.
double softmax_xent(const float* x, const float* t, float* g, float grad_scale, int64_t b, int64_t n,
                    const float* w = nullptr);
double sigmoid_xent(const float* x, const float* t, float* g, float grad_scale, int64_t b, int64_t n,
                    const float* w = nullptr);
double mean_squared_error(const float* x, const float* t, float* g, float grad_scale, int64_t b, int64_t n,
                          const float* w = nullptr);

}  // namespace dtrain::kernels

// Softmax over one contiguous float32 row and its backward, written so that
// GCC vectorises them at -O3 without -ffast-math: the exponential is a
// polynomial (std::exp stays a scalar libm call), and the row's sums are
// taken over 8 interleaved partial sums added in a fixed order. Results
// depend only on the inputs (not on the CPU's vector width, see softmax.cpp).
// Used by the softmax activation and by attention. Thread-safe.
#pragma once

#include <cstdint>

namespace dtrain::kernels {

// y[0, valid) = softmax(x[0, valid)), y[valid, n) = 0. exp(v) for
// v = x - max <= 0 is within 2 ulp of std::exp for v >= -87 and 0 below
// (std::exp gives at most 1.7e-38 there). NaN in x gives NaN in y.
// y may be x. REQUIRES: 1 <= valid <= n.
void softmax_row(const float* x, float* y, int64_t valid, int64_t n);

// dx[j] = y[j] * (g[j] - sum_k g[k] y[k]) for j in [0, n): the gradient of
// the logits given y = softmax(logits) and g the gradient of y. dx may be g.
void softmax_backward_row(const float* y, const float* g, float* dx, int64_t n);

namespace detail {
// exp(v) for v <= 0 as softmax_row computes it, one value (scalar code) and
// a row (the vectorised loop softmax_row runs) (for tests).
float softmax_exp(float v);
void softmax_exp_row(const float* v, float* y, int64_t n);
}  // namespace detail

}  // namespace dtrain::kernels

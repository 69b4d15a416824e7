// Test helpers for layers: deterministic inputs, a finite-difference gradient
// checker (central differences of sum(y * dy), double accumulation), and
// tensor comparison.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/layer.hpp"
#include "engine/tensor.hpp"

namespace dtrain::test {

// Normal(0, scale) values from a fixed seed.
Tensor random_tensor(const Shape& shape, uint64_t seed, float scale = 1.0f);
// Distinct values spaced `spacing` apart, shuffled, centred on 0 (no ties, so
// max-pool argmaxes survive small perturbations).
Tensor distinct_tensor(const Shape& shape, uint64_t seed, float spacing = 0.05f);
// Like random_tensor but every |v| >= margin (away from relu's kink).
Tensor away_from_zero(const Shape& shape, uint64_t seed, float margin = 0.1f);

struct GradCheckOptions {
  double eps = 1e-2;  // finite-difference step
  double tol = 1e-2;  // relative tolerance
  ForwardContext ctx{};
  // false for an input that is not differentiable (token ids): the input
  // gradient is not differenced (report.dx stays 0), only the params'.
  bool check_dx = true;
};

// Worst relative error (|numeric - analytic| / max(|numeric|, |analytic|,
// 0.1 * max|analytic|)) of the input gradient and of each param gradient
// (-1 for non-trainable params), plus whether every analytic gradient was
// nonzero somewhere and backward left non-trainable grads alone.
struct GradCheckReport {
  double dx = 0.0;
  std::vector<double> params;
  bool all_nonzero = true;
  bool frozen_untouched = true;
};

// `layer` must be built; `params` ordered like layer.params(). Runs forward
// and backward with a random dy, then central differences of sum(y * dy).
GradCheckReport gradient_errors(const Layer& layer, std::vector<Tensor> params, const Tensor& x,
                                const GradCheckOptions& opt = {});
// gradient_errors + doctest CHECKs that every error is <= opt.tol.
void check_gradients(const Layer& layer, std::vector<Tensor> params, const Tensor& x,
                     const GradCheckOptions& opt = {});

// CHECKs a and b have the same shape and |a - b| <= atol + rtol * |b|
// elementwise, with atol = rtol * max|b| * 0.1.
void check_close(const Tensor& a, const Tensor& b, double rtol, const std::string& what);
// check_close, except that a reference b that is zero in exact arithmetic
// (max|b| < 1e-12, float64 rounding noise: attention's key bias gradient,
// since softmax ignores a shift shared by a row) holds a to max|a| <= 1e-5.
void check_close_or_zero(const Tensor& a, const Tensor& b, double rtol, const std::string& what);
double max_abs(const Tensor& t);

// Fresh params for a built layer: every tensor random (seeded) except those
// listed in layer.params() with init "ones"/"zeros", which get 1 / 0.
std::vector<Tensor> make_params(const Layer& layer, uint64_t seed);

}  // namespace dtrain::test

// Finite-difference gradient checking and tensor helpers for layer tests.
#include "tests/engine/layers/layer_test_util.hpp"

#include <doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace dtrain::test {

Tensor random_tensor(const Shape& shape, uint64_t seed, float scale) {
  Tensor t(shape);
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = dist(gen);
  return t;
}

Tensor distinct_tensor(const Shape& shape, uint64_t seed, float spacing) {
  Tensor t(shape);
  std::vector<int64_t> order(static_cast<size_t>(t.numel()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  const float centre = static_cast<float>(t.numel() - 1) / 2.0f;
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = (static_cast<float>(order[static_cast<size_t>(i)]) - centre) * spacing;
  return t;
}

Tensor away_from_zero(const Shape& shape, uint64_t seed, float margin) {
  Tensor t = random_tensor(shape, seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (std::fabs(t[i]) < margin) t[i] = t[i] < 0 ? t[i] - margin : t[i] + margin;
  }
  return t;
}

namespace {

double objective(const Layer& layer, std::vector<Tensor>& params, const Tensor& x, const Tensor& dy,
                 const ForwardContext& ctx) {
  Tensor y;
  LayerCache cache;
  layer.forward(ctx, params, x, y, cache);
  double sum = 0.0;
  for (int64_t i = 0; i < y.numel(); ++i) sum += static_cast<double>(y[i]) * dy[i];
  return sum;
}

// Perturbs each element of `target` (which aliases x or a param) and returns
// the worst relative error of `analytic` against central differences.
double worst_error(const Layer& layer, std::vector<Tensor>& params, const Tensor& x, const Tensor& dy, Tensor target,
                   const Tensor& analytic, const GradCheckOptions& opt, bool& nonzero) {
  REQUIRE(analytic.numel() == target.numel());
  double max_abs = 0.0;
  for (int64_t i = 0; i < analytic.numel(); ++i) max_abs = std::max(max_abs, std::fabs(double(analytic[i])));
  nonzero = nonzero && max_abs > 0.0;
  double worst = 0.0;
  for (int64_t i = 0; i < target.numel(); ++i) {
    const float orig = target[i];
    target[i] = static_cast<float>(orig + opt.eps);
    const double up = objective(layer, params, x, dy, opt.ctx);
    target[i] = static_cast<float>(orig - opt.eps);
    const double down = objective(layer, params, x, dy, opt.ctx);
    target[i] = orig;
    const double num = (up - down) / (2.0 * opt.eps);
    const double ana = analytic[i];
    const double err = std::fabs(num - ana) / std::max({std::fabs(num), std::fabs(ana), 0.1 * max_abs, 1e-3});
    worst = std::max(worst, err);
  }
  return worst;
}

}  // namespace

GradCheckReport gradient_errors(const Layer& layer, std::vector<Tensor> params, const Tensor& x,
                                const GradCheckOptions& opt) {
  const auto specs = layer.params();
  REQUIRE(specs.size() == params.size());
  std::vector<Tensor> before;
  for (const Tensor& p : params) before.push_back(p.clone());
  Tensor y;
  LayerCache cache;
  layer.forward(opt.ctx, params, x, y, cache);
  const Tensor dy = random_tensor(y.shape(), 977);
  // Poison the gradient buffers: backward must overwrite them.
  std::vector<Tensor> grads;
  for (const Tensor& p : params) grads.emplace_back(p.shape(), 1e6f);
  Tensor dx(x.shape(), 1e6f);
  layer.backward(opt.ctx, params, grads, x, y, dy, &dx, cache);
  GradCheckReport r;
  Tensor xv = x.clone();
  if (opt.check_dx) r.dx = worst_error(layer, params, xv, dy, xv, dx, opt, r.all_nonzero);
  for (size_t i = 0; i < params.size(); ++i) {
    if (!specs[i].trainable) {
      for (int64_t j = 0; j < grads[i].numel(); ++j) r.frozen_untouched = r.frozen_untouched && grads[i][j] == 1e6f;
      r.params.push_back(-1.0);
      continue;
    }
    // Restore params changed by forward (batch_norm moving stats) before differencing.
    for (size_t k = 0; k < params.size(); ++k) params[k].copy_from(before[k]);
    r.params.push_back(worst_error(layer, params, xv, dy, params[i], grads[i], opt, r.all_nonzero));
  }
  return r;
}

void check_gradients(const Layer& layer, std::vector<Tensor> params, const Tensor& x, const GradCheckOptions& opt) {
  const auto specs = layer.params();
  const GradCheckReport r = gradient_errors(layer, std::move(params), x, opt);
  CHECK_MESSAGE(r.dx <= opt.tol, "dx worst relative error " << r.dx);
  for (size_t i = 0; i < r.params.size(); ++i) {
    CHECK_MESSAGE(r.params[i] <= opt.tol, "d" << specs[i].name << " worst relative error " << r.params[i]);
  }
  CHECK(r.all_nonzero);
  CHECK(r.frozen_untouched);
}

void check_close(const Tensor& a, const Tensor& b, double rtol, const std::string& what) {
  INFO(what << ": shapes " << shape_str(a.shape()) << " vs " << shape_str(b.shape()));
  REQUIRE(a.shape() == b.shape());
  double max_b = 0.0;
  for (int64_t i = 0; i < b.numel(); ++i) max_b = std::max(max_b, std::fabs(double(b[i])));
  const double atol = rtol * max_b * 0.1;
  int64_t bad = -1;
  for (int64_t i = 0; i < a.numel() && bad < 0; ++i) {
    if (!(std::fabs(double(a[i]) - b[i]) <= atol + rtol * std::fabs(double(b[i])))) bad = i;
  }
  INFO(what << ": first mismatch at " << bad << (bad >= 0 ? ": " + std::to_string(a[bad]) + " vs " + std::to_string(b[bad]) : ""));
  CHECK(bad == -1);
}

double max_abs(const Tensor& t) {
  double m = 0.0;
  const std::vector<float> v = t.to_vector();
  for (float x : v) m = std::max(m, std::fabs(double{x}));
  return m;
}

void check_close_or_zero(const Tensor& a, const Tensor& b, double rtol, const std::string& what) {
  if (max_abs(b) >= 1e-12) {
    check_close(a, b, rtol, what);
    return;
  }
  INFO(what << ": shapes " << shape_str(a.shape()) << " vs " << shape_str(b.shape()) << "; zero reference, max |a| "
            << max_abs(a));
  REQUIRE(a.shape() == b.shape());
  CHECK(max_abs(a) <= 1e-5);
}

std::vector<Tensor> make_params(const Layer& layer, uint64_t seed) {
  std::vector<Tensor> out;
  for (const ParamSpec& p : layer.params()) {
    if (p.init.type == "ones") {
      out.emplace_back(p.shape, 1.0f);
    } else if (p.init.type == "zeros") {
      out.emplace_back(p.shape, 0.0f);
    } else {
      out.push_back(random_tensor(p.shape, seed++, 0.5f));
    }
  }
  return out;
}

}  // namespace dtrain::test
